"""mixprec: compile a model to a mixed-precision plan, run it, report and
validate the plan, from Python.

    import mixprec, numpy as np
    m = mixprec.compile("examples/mlp.onnx", precision="bf16")
    x = np.load("examples/mlp_input.npy")
    print(m.run(x=x)["logits"].shape)
    print(mixprec.report("examples/mlp.onnx", precision="bf16"))

Everything calls mixprec's compile API and runtime C API through the
extension mixprec._mixprec; nothing is computed twice. Errors are
mixprec.Error subclasses (mixprec._errors).
"""

import json as _json
import math as _math
import numbers as _numbers
import os as _os
import tempfile as _tempfile
from collections.abc import Mapping as _Mapping

import numpy as _np

from . import _mixprec
from ._errors import (CompileError, DtypeMismatchError, Error, ExecutionError,
                      FailedPreconditionError, InternalError, InvalidArgumentError,
                      InvalidModuleError, IoError, NoDeviceError, NotFoundError,
                      OutOfMemoryError, ShapeMismatchError, SideFileError,
                      UnimplementedError, UnsupportedVersionError, TrainingError)

__all__ = [
    "compile", "load", "report", "validate", "train", "from_torch", "Module", "TensorInfo",
    "DeviceArray",
    "Report", "TrainResult", "TrainingError",
    "Validation", "Error", "CompileError", "InvalidArgumentError", "InvalidModuleError",
    "UnsupportedVersionError", "SideFileError", "ShapeMismatchError", "DtypeMismatchError",
    "NotFoundError", "NoDeviceError", "UnimplementedError", "IoError", "OutOfMemoryError",
    "FailedPreconditionError", "ExecutionError", "InternalError", "__version__",
]

__version__ = _mixprec.version().split()[-1]

_BACKENDS = ("cpu", "cuda", "auto")


class DeviceArray:
    """An output kept where the backend wrote it (Module.run(...,
    device_outputs=True)): `shape`, `dtype` (the module's: "f32", "bf16",
    ...), `device` ("cpu" or "cuda"), and the DLPack protocol over that
    memory, without a copy (torch.from_dlpack on a GPU, np.from_dlpack on
    the CPU backend). It keeps its module alive."""

    __slots__ = ("_array", "shape", "dtype")

    def __init__(self, array, shape, dtype):
        self._array = array
        self.shape = tuple(shape)
        self.dtype = dtype

    @property
    def device(self):
        return "cuda" if self._array.__dlpack_device__()[0] == 2 else "cpu"

    def __dlpack__(self, *args, **kwargs):
        return self._array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()

    def __repr__(self):
        return f"<mixprec.DeviceArray {self.dtype}{list(self.shape)} on {self.device}>"


class TensorInfo(tuple):
    """A module input, output or state: (name, dtype, shape)."""

    __slots__ = ()

    def __new__(cls, name, dtype, shape):
        return super().__new__(cls, (name, dtype, tuple(shape)))

    name = property(lambda self: self[0], doc="its name in the model")
    dtype = property(lambda self: self[1], doc='its dtype in the module ("f32", "bf16", "i64", ...)')
    shape = property(lambda self: self[2], doc="its shape")

    def __repr__(self):
        return f"TensorInfo(name={self.name!r}, dtype={self.dtype!r}, shape={self.shape})"


def _as_array(value, what):
    """A C-contiguous numpy array in host memory from a numpy array, any
    object with __dlpack__ (PyTorch, CuPy, JAX), or anything np.asarray
    takes. Non-contiguous arrays are copied; read-only ones are read in place."""
    if isinstance(value, _np.ndarray):
        array = value
    elif hasattr(value, "__dlpack__"):
        try:
            array = _np.from_dlpack(value)
        except (BufferError, RuntimeError, TypeError, ValueError) as e:
            raise InvalidArgumentError(
                f"{what}: cannot read it through DLPack on the CPU ({e}); mixprec takes host "
                "memory: copy it to the CPU first (tensor.cpu())") from None
    else:
        try:
            array = _np.asarray(value)
        except Exception as e:  # noqa: BLE001 - any conversion failure names the input
            raise InvalidArgumentError(f"{what}: not an array ({e})") from None
    if array.dtype == object:
        raise InvalidArgumentError(f"{what}: not a numeric array (dtype object)")
    return _np.ascontiguousarray(array)


def _mapping(value, what, takes):
    """`value` (None: {}) when it is a mapping, else InvalidArgumentError
    naming the parameter and what it takes."""
    if value is None:
        return {}
    if not isinstance(value, _Mapping):
        raise InvalidArgumentError(f"{what} takes {takes}, got {type(value).__name__} "
                                   f"{_short_repr(value)}")
    return value


def _short_repr(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _named_arrays(arrays, what, parameter=None):
    """[(name, array)] from a dict of arrays (None: none)."""
    arrays = _mapping(arrays, parameter or what, "{name: array}")
    return [(str(k), _as_array(v, f"{what} '{k}'")) for k, v in arrays.items()]


class _ModelFile:
    """The file the compiler reads for `model`: a path as given, or an
    onnx.ModelProto written to a temporary file (removed on exit)."""

    def __init__(self, model):
        self.tmp = None
        if isinstance(model, (str, _os.PathLike)):
            self.path = _os.fspath(model)
            self.name = self.path
        elif hasattr(model, "SerializeToString"):  # onnx.ModelProto
            self.tmp = _tempfile.TemporaryDirectory(prefix="mixprec-")
            self.path = _os.path.join(self.tmp.name, "model.onnx")
            with open(self.path, "wb") as f:
                f.write(model.SerializeToString())
            self.name = "<onnx.ModelProto>"
        else:
            raise InvalidArgumentError(
                "model must be a path (.onnx, .mlir, .mlirbc) or an onnx.ModelProto, got "
                f"{type(model).__name__}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.tmp is not None:
            self.tmp.cleanup()


def _option_value(value):
    """An option value as the pipeline parser reads it (braces keep spaces)."""
    text = str(value)
    return "{" + text + "}" if any(c in text for c in " {}") else text


def _options(precision, policy, keep_fp32, force, options, tmpdir):
    """The precision pipeline's options string, and whether a precision was given."""
    parts = []
    if precision is not None:
        parts.append(f"precision={_option_value(precision)}")
    if keep_fp32:
        items = [keep_fp32] if isinstance(keep_fp32, str) else list(keep_fp32)
        parts.append("keep-fp32=" + ",".join(_option_value(k) for k in items))
    if force:
        items = [force] if isinstance(force, str) else list(force)
        parts.append("force=" + ",".join(_option_value(k) for k in items))
    if policy is not None:
        if isinstance(policy, dict):
            path = _os.path.join(tmpdir, "policy.json")
            with open(path, "w") as f:
                _json.dump(policy, f)
            policy = path
        parts.append(f"policy={_option_value(_os.fspath(policy))}")
    for key, value in (options or {}).items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        parts.append(f"{key.replace('_', '-')}={_option_value(value)}")
    return " ".join(parts), precision is not None


def _shapes(shapes):
    """{name: [dims]} from --shape-style sizes (a dim size or a shape)."""
    out = {}
    for name, dims in _mapping(shapes, "shapes",
                               "{input name: shape} or {dim name: size}").items():
        try:
            out[str(name)] = [_dim(dims)] if isinstance(dims, int) else [_dim(d) for d in dims]
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                f"shapes['{name}'] takes a size or a list of sizes (integers >= 0), got "
                f"{_short_repr(dims)}") from None
    return out


def _dim(value):
    if isinstance(value, bool) or not isinstance(value, _numbers.Integral) or value < 0:
        raise ValueError(value)
    return int(value)


def _request(model, precision, shapes, calibrate, policy, keep_fp32, force, options):
    """Runs fn(path, display, options, precision_given, shapes, calibrate) on the model file."""
    class _Call:
        def __enter__(self):
            self.file = _ModelFile(model)
            self.tmp = _tempfile.TemporaryDirectory(prefix="mixprec-")
            text, given = _options(precision, policy, keep_fp32, force, options, self.tmp.name)
            return (self.file.path, self.file.name, text, given, _shapes(shapes),
                    _named_arrays(calibrate, "calibrate input", "calibrate"))

        def __exit__(self, *exc):
            self.tmp.cleanup()
            self.file.__exit__(*exc)
    return _Call()


class _StateView:
    """A module's state by name (dict-like): reads copy out of the session,
    writes replace the state there (exactly its shape; float states take
    float16/32/64 arrays, rounded to their dtype)."""

    def __init__(self, module):
        self._module = module

    def keys(self):
        return [s.name for s in self._module.states]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self._module.states)

    def __contains__(self, name):
        return name in self.keys()

    def __getitem__(self, name):
        return self._module._impl.read_state(name)

    def __setitem__(self, name, value):
        self._module._impl.write_state(name, _as_array(value, f"state '{name}'"))

    def items(self):
        return [(k, self[k]) for k in self.keys()]

    def reset(self):
        """Sets every state back to its initial value from the module."""
        self._module._impl.reset_state()

    def __repr__(self):
        return f"<mixprec state of {self._module.name}: {', '.join(self.keys()) or 'none'}>"


class Module:
    """A compiled module on a runtime backend (from mixprec.compile or
    mixprec.load). Calls from several threads at once are safe: each run
    takes a session of its own (a module with state has one session, and
    its runs take turns)."""

    def __init__(self, impl):
        self._impl = impl

    @property
    def name(self):
        """The model (or .mpk) the module came from."""
        return self._impl.name

    @property
    def inputs(self):
        """The graph inputs, [TensorInfo(name, dtype, shape)]."""
        return [TensorInfo(*i) for i in self._impl.inputs()]

    @property
    def outputs(self):
        """The graph outputs, [TensorInfo(name, dtype, shape)]."""
        return [TensorInfo(*o) for o in self._impl.outputs()]

    @property
    def states(self):
        """The module's state tensors, [TensorInfo(name, dtype, shape)]."""
        return [TensorInfo(*s) for s in self._impl.states()]

    @property
    def state(self):
        """The module's state, dict-like by name (see _StateView)."""
        return _StateView(self)

    @property
    def backend(self):
        """The backend the module runs on ("cpu" or "cuda")."""
        return self._impl.backend

    @property
    def backend_reason(self):
        """Why backend "auto" chose its backend ("" for one asked by name)."""
        return self._impl.backend_reason

    def run(self, *args, device_outputs=False, **inputs):
        """Runs the module; returns {output name: numpy array}. Inputs by
        name, or positionally in the order of Module.inputs; each a numpy
        array or any DLPack producer in host memory. Float outputs are
        float32 (decoded exactly from their dtype), integer and bool outputs
        their own dtype; each array owns its memory.

        device_outputs=True: each output stays where the backend wrote it
        (device memory on the CUDA backend, host memory on the CPU backend)
        in its own dtype (float16, bfloat16...; FP8 outputs are refused),
        returned as an array object with __dlpack__ / __dlpack_device__
        over that memory, without a copy: torch.from_dlpack(out["y"]) on a
        GPU, np.from_dlpack on the CPU backend. It keeps the module alive."""
        names = [i.name for i in self.inputs]
        if len(args) > len(names):
            raise InvalidArgumentError(
                f"{self.name}: {len(args)} positional inputs given, the module has "
                f"{len(names)} ({', '.join(names)})")
        given = dict(zip(names, args))
        for name, value in inputs.items():
            if name in given:
                raise InvalidArgumentError(f"{self.name}: input '{name}' given twice")
            given[name] = value
        arrays = _named_arrays(given, f"{self.name}: input")
        if device_outputs:
            infos = {o.name: o for o in self.outputs}
            return {name: DeviceArray(a, infos[name].shape, infos[name].dtype)
                    for name, a in self._impl.run_on_device(arrays).items()}
        return self._impl.run(arrays)

    __call__ = run

    def ir(self, elide_weights=True):
        """The annotated mp IR, as `mixprec compile --emit mp-mlir` prints it
        (constants over 16 elements elided unless elide_weights=False)."""
        return self._impl.ir(bool(elide_weights))

    def save(self, path):
        """Writes the module as .mpk (and PATH.weights when its weights
        need one), atomically, as `mixprec compile -o PATH` does."""
        self._impl.save(_os.fspath(path))

    def save_checkpoint(self, path, user_blob=b""):
        """Writes every state and `user_blob` to a checkpoint, atomically."""
        self._impl.save_checkpoint(_os.fspath(path), bytes(user_blob))

    def load_checkpoint(self, path):
        """Replaces every state with a checkpoint's; returns its user blob."""
        path = _os.fspath(path)
        try:
            size = _os.path.getsize(path)
        except OSError:
            size = 0  # the runtime says why it cannot be read
        return self._impl.load_checkpoint(path, size)

    def __repr__(self):
        ins = ", ".join(f"{i.name}: {i.dtype}{list(i.shape)}" for i in self.inputs)
        return f"<mixprec.Module {self.name} ({ins}) on {self.backend}>"


def compile(model, precision=None, shapes=None, calibrate=None, policy=None, keep_fp32=None,
            force=None, backend="auto", **options):
    """Compiles a model to a Module.

    model: a path (.onnx, .mlir, .mlirbc) or an onnx.ModelProto.
    precision: fp32, tf32, bf16, fp16 or fp8; None is bf16 for a graph
        without a plan and keeps the plan of an annotated one.
    shapes: {input name: shape} or {dim name: size} for dynamic dims (--shape).
    calibrate: {input name: array}: range evidence (--calibrate).
    policy: a JSON policy file's path, or the policy as a dict.
    keep_fp32, force: op types or name globs (--keep-fp32, --force GLOB:DTYPE).
    backend: "cpu", "cuda" or "auto" (CUDA when a GPU is found).
    options: other precision options by name (fp16_margin=..., keep_io_types=False).
    """
    if backend not in _BACKENDS:
        raise InvalidArgumentError(f"backend takes cpu, cuda or auto, got {backend!r}")
    with _request(model, precision, shapes, calibrate, policy, keep_fp32, force,
                  options) as args:
        return Module(_mixprec.compile(*args, backend))


def load(path, backend="auto"):
    """Loads a compiled .mpk module (verified, with its .weights side file)."""
    if backend not in _BACKENDS:
        raise InvalidArgumentError(f"backend takes cpu, cuda or auto, got {backend!r}")
    return Module(_mixprec.load(_os.fspath(path), backend))


class _Document:
    """A report or validation: `json` is the CLI's --json document, `str()`
    the text it prints."""

    def __init__(self, json_text, text):
        self.json = _json.loads(json_text)
        self.text = text

    def __getitem__(self, key):
        return self.json[key]

    def __str__(self):
        return self.text

    def __repr__(self):
        return self.text

    def to_pandas(self):
        """The per-op rows as a pandas DataFrame (needs pandas)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("to_pandas needs pandas: python3 -m pip install pandas") from None
        return pandas.DataFrame(self.json["ops"])


class Report(_Document):
    """mixprec.report's result: ops (one row per op), summary."""

    ops = property(lambda self: self.json["ops"], doc="one dict per op, in program order")
    summary = property(lambda self: self.json["summary"], doc="FLOPs, bytes and casts vs FP32")


class Validation(_Document):
    """mixprec.validate's result: outputs, ops, first_nonfinite, status."""

    outputs = property(lambda self: self.json["outputs"], doc="one dict per graph output")
    ops = property(lambda self: self.json["ops"], doc="one dict per compared op")
    first_nonfinite = property(lambda self: self.json["first_nonfinite"],
                               doc="the first op that went non-finite, or None")
    status = property(lambda self: self.json["status"], doc='"ok" or why not')
    exit_status = property(lambda self: self.json["exit_status"],
                           doc="the CLI's exit status (0 ok, 3 non-finite, 4 out of bounds)")
    ok = property(lambda self: self.json["exit_status"] == 0, doc="whether it passed")


def report(model, precision=None, shapes=None, calibrate=None, policy=None, keep_fp32=None,
           force=None, graph=False, **options):
    """The precision plan, as `mixprec report --json` gives it (Report)."""
    with _request(model, precision, shapes, calibrate, policy, keep_fp32, force,
                  options) as args:
        return Report(*_mixprec.report(*args, bool(graph)))


def validate(model, precision=None, inputs=None, seed=0, tolerance=None, shapes=None,
             calibrate=None, policy=None, keep_fp32=None, force=None, **options):
    """The plan against the FP32 reference on the same inputs (all given, or
    none: random from `seed`), as `mixprec validate --json` gives it
    (Validation; .ok says whether it passed, no exception when not)."""
    with _request(model, precision, shapes, calibrate, policy, keep_fp32, force,
                  options) as args:
        json_text, text, _ = _mixprec.validate(
            *args, _named_arrays(inputs, "input", "inputs"), _seed(seed),
            _tolerance(tolerance))
        return Validation(json_text, text)


def _seed(seed):
    if isinstance(seed, bool) or not isinstance(seed, _numbers.Integral) or \
            not 0 <= seed < 2 ** 64:
        raise InvalidArgumentError(f"seed takes an integer in [0, 2^64-1], got "
                                   f"{_short_repr(seed)}")
    return int(seed)


def _tolerance(tolerance):
    """validate's --tolerance: None (the README's bounds), else a number > 0."""
    if tolerance is None:
        return -1.0
    if isinstance(tolerance, bool) or not isinstance(tolerance, _numbers.Real) or \
            not _math.isfinite(tolerance) or tolerance <= 0:
        raise InvalidArgumentError(f"tolerance takes a finite number > 0 (or None for the "
                                   f"README's bounds), got {_short_repr(tolerance)}")
    return float(tolerance)


_TRAIN_OPTIONS = {
    "loss", "output", "optimizer", "loss_scale", "backend", "csv", "checkpoint", "resume",
    "state_dir", "compare", "lr", "momentum", "weight_decay", "beta1", "beta2", "eps",
    "init_scale", "growth_factor", "backoff_factor", "min_scale", "clip_norm",
    "growth_interval", "hysteresis", "accumulate", "batch", "steps", "epochs", "log_every",
    "eval_every", "checkpoint_every", "max_skipped_in_a_row", "seed", "shuffle", "frozen",
    "seeds", "compare_every", "metrics", "report", "fp32_samples_per_s", "reinit", "world",
    "data_parallel", "allreduce_dtype", "bucket_mb", "collective_timeout", "shard_optimizer"}


class TrainResult(dict):
    """What mixprec.train returns: steps, skipped, last_loss, test_loss and
    test_accuracy (NaN when not evaluated), compare_last_loss, and status
    (0; 5 when the loss scale could not recover), message, notes; verdict
    (the ensemble's, "" without compare) and metrics (the five training
    metrics, the ensemble and the gradient comparison, as the --metrics
    JSON holds them; None when the run stopped before them)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def train(model, data, labels=None, test_data=None, test_labels=None, precision=None,
          shapes=None, policy=None, keep_fp32=None, force=None, callback=None, verbose=True,
          **options):
    """Trains a model as `mixprec train` does (the same loop, compiler::train).

    data: {graph input name: array}, one sample per row (dim 0); labels: an
        array of class indices (loss="ce", the default) or of targets
        (loss="mse"); none for loss="model".
    test_data, test_labels: evaluated at the end (and every eval_every steps).
    precision: fp32, tf32, bf16 (the default), fp16 (dynamic loss scaling by
        default) or fp8 (hybrid E4M3/E5M2, delayed scaling by default).
    callback: called after every step with a dict (step, epoch, loss,
        loss_scale, grad_norm, skipped, and test_loss / test_accuracy /
        compare_loss when there are); returning False stops the run after
        that step (checkpoint, CSV and state written as at the end).
    verbose: print the progress lines (the CLI's) on stdout.
    options: the CLI's options with '_' for '-': loss, optimizer, lr,
        momentum, weight_decay, beta1, beta2, eps, loss_scale, init_scale,
        growth_factor, backoff_factor, growth_interval, hysteresis,
        min_scale, clip_norm, frozen (list of globs), accumulate, batch,
        steps, epochs, seed, shuffle, log_every, eval_every, csv,
        checkpoint, checkpoint_every, resume, state_dir, compare ("fp32"),
        max_skipped_in_a_row, backend, seeds (an ensemble of N data-order
        seeds; reinit=True: each run resamples the parameters from its
        seed), compare_every (gradients against FP32 every K steps, with
        compare="fp32"), metrics (a JSON file), report (an HTML file),
        fp32_samples_per_s; data parallelism: world (the ranks the caller
        expects: under `mpirun -np N python script.py` each rank's train()
        trains its slice of every global batch of N x batch, rank 0 prints
        and writes; world=N checks that the launcher started N ranks),
        allreduce_dtype ("fp32", "bf16", "fp16"), bucket_mb,
        collective_timeout (s), data_parallel=True (a step compiled for it
        in one process), shard_optimizer=True (ZeRO stage 1: each rank
        keeps and updates its slice of the optimizer state); any other keyword is a precision
        option (fp8_scaling="current", fp8_amax_history=16, keep_io_types=...).
    Returns a TrainResult; raises TrainingError when the loss scale could
    not recover, CompileError / InvalidArgumentError / IoError otherwise."""
    if not isinstance(data, dict) or not data:
        raise InvalidArgumentError("train: data takes {graph input name: array}")
    settings = {k: v for k, v in options.items() if k in _TRAIN_OPTIONS}
    precision_options = {k: v for k, v in options.items() if k not in _TRAIN_OPTIONS}
    if "frozen" in settings and isinstance(settings["frozen"], str):
        settings["frozen"] = [settings["frozen"]]
    for key in ("csv", "checkpoint", "resume", "state_dir", "metrics", "report"):
        if key in settings:
            settings[key] = _os.fspath(settings[key])
    label_array = None if labels is None else _as_array(labels, "labels")
    test_label_array = None if test_labels is None else _as_array(test_labels, "test labels")
    printer = (lambda line: print(line, flush=True)) if verbose else None
    with _request(model, precision, shapes, None, policy, keep_fp32, force,
                  precision_options) as args:
        path, display, text, given, shape_map, _ = args
        out = _mixprec.train(path, display, text, given, shape_map,
                             _named_arrays(data, "data"),
                             _named_arrays(test_data, "test data", "test_data"),
                             label_array, test_label_array, settings, printer, callback)
    metrics_text = out.pop("metrics_json", "")
    result = TrainResult(out)
    result["metrics"] = _json.loads(metrics_text) if metrics_text else None
    if result.status != 0:
        error = TrainingError(result.message)
        error.notes = list(result.notes)
        error.result = result
        raise error
    return result


def from_torch(module, example_inputs, precision=None, input_names=None, output_names=None,
               opset_version=17, export_options=None, **compile_options):
    """Exports a torch.nn.Module with torch.onnx.export and compiles it.

    module: the model, in eval mode for inference (export traces what
        forward does: dropout and batch statistics in train mode).
    example_inputs: a tensor or a tuple of tensors (the export's args).
    input_names: the graph inputs' names (default x0, x1, ...).
    output_names: the graph outputs' names (default: the exporter's).
    opset_version: the ONNX opset asked of the exporter. torch >= 2.9's
        default exporter (dynamo) builds opset 18 and converts it down; when
        that conversion fails the model stays at opset 18 (mixprec reads
        it), and its graph optimizer can write opset-18 attributes into an
        opset-17 model (GPT-2's Split with num_outputs), which the compiler
        rejects: pass opset_version=18, or export_options={"dynamo": False}
        for the TorchScript exporter.
    export_options: further keyword arguments of torch.onnx.export, as a
        dict (dynamo=False, optimize=False, dynamic_shapes=..., ...).
    compile_options: mixprec.compile's arguments (backend, shapes, ...).
    Needs torch (an optional dependency)."""
    try:
        import torch
    except ImportError:
        raise ImportError("mixprec.from_torch needs PyTorch: python3 -m pip install torch") \
            from None
    if not isinstance(example_inputs, tuple):
        example_inputs = (example_inputs,)
    if input_names is None:
        input_names = [f"x{i}" for i in range(len(example_inputs))]
    kwargs = dict(export_options or {})
    for key in ("input_names", "output_names", "opset_version"):
        if key in kwargs:
            raise InvalidArgumentError(
                f"from_torch: give {key} as from_torch's own argument, not in export_options")
    if output_names is not None:
        kwargs["output_names"] = list(output_names)
    with _tempfile.TemporaryDirectory(prefix="mixprec-torch-") as tmp:
        path = _os.path.join(tmp, "model.onnx")
        with torch.no_grad():
            torch.onnx.export(module, example_inputs, path, input_names=list(input_names),
                              opset_version=opset_version, **kwargs)
        return compile(path, precision=precision, **compile_options)
