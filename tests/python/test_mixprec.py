"""The mixprec Python package: compile and run the e2e models against
onnxruntime's outputs within the README's bounds, report and validate equal
to the CLI's --json, DLPack and numpy round trips, errors, threads, state
and checkpoints, and the README's quick start."""

import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import mixprec
from conftest import REPO

with open(os.path.join(REPO, "tests/e2e/precision_bounds.json")) as f:
    BOUNDS = json.load(f)["bounds"]
# FP32 modules against onnxruntime: run_e2e.py's --rtol for the runtime;
# TF32: validate's default bound (README "Error bounds").
BOUNDS["fp32"] = {"max_rel": 1e-4, "min_cosine": 0.99999}
BOUNDS["tf32"] = {"max_rel": 5e-3, "min_cosine": 0.999998}


def model_inputs(folder, m):
    return {i["name"]: np.load(os.path.join(folder, i["file"])) for i in m["inputs"]}


def compare(got, ref):
    """(max_rel, cosine) as run_e2e.py and mixprec validate compute them."""
    a = got.astype(np.float64).ravel()
    b = ref.astype(np.float64).ravel()
    if a.size == 0:
        return 0.0, 1.0
    max_rel = float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))),
                                                 float(np.finfo(np.float32).tiny))
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    cosine = 1.0 if na == 0 and nb == 0 else float(a @ b / (na * nb)) if na and nb else 0.0
    return max_rel, cosine


@pytest.mark.parametrize("precision", ["fp32", "tf32", "bf16", "fp16", "fp8"])
def test_e2e_models_against_onnxruntime(e2e_models, precision):
    folder, models = e2e_models
    checked = 0
    for m in models:
        inputs = model_inputs(folder, m)
        module = mixprec.compile(os.path.join(folder, m["model"]), precision=precision,
                                 shapes={k: v.shape for k, v in inputs.items()}, backend="cpu")
        assert module.backend == "cpu"
        outputs = module.run(**inputs)
        for o in m["outputs"]:
            ref = np.load(os.path.join(folder, o["file"]))
            got = outputs[o["name"]]
            label = f"{m['name']}:{o['name']} at {precision}"
            assert got.shape == ref.shape, label
            if ref.dtype != np.float32:
                assert got.dtype == ref.dtype and np.array_equal(got, ref), label
                continue
            assert got.dtype == np.float32, label
            assert np.all(np.isfinite(got)), label
            max_rel, cosine = compare(got, ref)
            bound = BOUNDS[precision]
            assert max_rel <= bound["max_rel"], f"{label}: max_rel {max_rel:.3e}"
            assert cosine >= bound["min_cosine"], f"{label}: cosine {cosine:.8f}"
            checked += 1
    assert checked >= 15


def e2e_model(e2e_models, name):
    """(model path, manifest entry, inputs) of one e2e model."""
    folder, models = e2e_models
    m = next(m for m in models if m["name"] == name)
    return os.path.join(folder, m["model"]), m, model_inputs(folder, m)


def cli_json(cli, tmp_path, command, model, args):
    path = tmp_path / f"{command}.json"
    proc = subprocess.run([cli, command, model, *args, "--json", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode in (0, 3, 4), proc.stderr
    with open(path) as f:
        return json.load(f), proc


@pytest.mark.parametrize("name", ["mlp", "gpt_block", "cnn"])
@pytest.mark.parametrize("precision", ["bf16", "fp8"])
def test_report_equals_cli_json(e2e_models, cli, tmp_path, name, precision):
    model, _, inputs = e2e_model(e2e_models, name)
    shapes = {k: v.shape for k, v in inputs.items()}
    shape_args = [a for k, v in shapes.items() for a in ("--shape", f"{k}={'x'.join(map(str, v))}")]
    expected, proc = cli_json(cli, tmp_path, "report", model,
                              ["--precision", precision, *shape_args])
    got = mixprec.report(model, precision=precision, shapes=shapes)
    assert got.json == expected
    assert got.ops and got.summary["ops"] == expected["summary"]["ops"]
    assert str(got) == proc.stdout


@pytest.mark.parametrize("name", ["mlp", "encoder", "rmsnorm_mlp"])
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_validate_equals_cli_json(e2e_models, cli, tmp_path, name, precision):
    model, m, inputs = e2e_model(e2e_models, name)
    folder = e2e_models[0]
    input_args = [a for i in m["inputs"]
                  for a in ("--input", f"{i['name']}={os.path.join(folder, i['file'])}")]
    expected, proc = cli_json(cli, tmp_path, "validate", model,
                              ["--precision", precision, *input_args])
    got = mixprec.validate(model, precision=precision, inputs=inputs)
    assert got.json == expected
    assert got.ok and got.status == "ok" and got.first_nonfinite is None
    assert str(got) == proc.stdout


def test_validate_random_inputs_equal_cli(e2e_models, cli, tmp_path):
    folder, models = e2e_models
    model = os.path.join(folder, "mlp/model.onnx")
    x = np.load(os.path.join(folder, next(m for m in models if m["name"] == "mlp")
                             ["inputs"][0]["file"]))
    expected, _ = cli_json(cli, tmp_path, "validate", model,
                           ["--precision", "fp8", "--seed", "7", "--shape",
                            "x=" + "x".join(map(str, x.shape))])
    got = mixprec.validate(model, precision="fp8", seed=7, shapes={"x": x.shape})
    assert got.json == expected


def test_to_pandas():
    pytest.importorskip("pandas", reason="pandas is not installed")
    r = mixprec.report(os.path.join(REPO, "examples/mlp.onnx"), precision="bf16")
    frame = r.to_pandas()
    assert list(frame["node"]) == [op["node"] for op in r.ops]


def mlp_module(precision="bf16"):
    return mixprec.compile(os.path.join(REPO, "examples/mlp.onnx"), precision=precision,
                           backend="cpu")


def mlp_input():
    return np.load(os.path.join(REPO, "examples/mlp_input.npy"))


def test_inputs_outputs_and_positional_call():
    m = mlp_module()
    x = mlp_input()
    (info,) = m.inputs
    assert info.name == "x" and info.dtype == "f32" and info.shape == x.shape
    assert [o.name for o in m.outputs] == list(m.run(x=x))
    by_name = m.run(x=x)
    positional = m(x)
    for k in by_name:
        assert np.array_equal(by_name[k], positional[k])
        assert by_name[k].flags.writeable and by_name[k].flags.c_contiguous
    # Each output owns its memory: changing it changes no later run.
    by_name["probs"][...] = 0
    assert np.array_equal(m.run(x=x)["probs"], positional["probs"])


def test_dlpack_and_array_forms_give_the_same_outputs():
    m = mlp_module()
    x = mlp_input()
    expected = m.run(x=x)

    class Producer:  # only the DLPack protocol
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kwargs):
            return self.a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    readonly = x.copy()
    readonly.flags.writeable = False
    wide = np.zeros((x.shape[0], x.shape[1] * 2), np.float32)
    wide[:, ::2] = x  # a non-contiguous view: copied
    for given in (Producer(x), readonly, wide[:, ::2], x.astype(np.float64), x.tolist()):
        got = m.run(x=given)
        for k in expected:
            assert np.array_equal(got[k], expected[k]), type(given)
    # Outputs go back out through DLPack.
    out = expected["probs"]
    assert np.array_equal(np.from_dlpack(out), out)


def test_torch_dlpack_round_trip():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    m = mlp_module()
    x = mlp_input()
    got = m.run(x=torch.from_numpy(x))
    assert np.array_equal(got["probs"], m.run(x=x)["probs"])
    assert torch.from_dlpack(got["probs"]).shape == got["probs"].shape


def test_input_errors_name_the_input():
    m = mlp_module()
    x = mlp_input()
    with pytest.raises(mixprec.InvalidArgumentError, match="input 'x'.*must be a float array"):
        m.run(x=x.astype(np.int64))
    with pytest.raises(mixprec.InvalidArgumentError, match="input 'x'.*dtype int16"):
        m.run(x=x.astype(np.int16))
    with pytest.raises(mixprec.InvalidArgumentError, match="input 'x' has shape"):
        m.run(x=x[:1])
    with pytest.raises(mixprec.InvalidArgumentError, match="input 'x' not given"):
        m.run()
    with pytest.raises(mixprec.NotFoundError, match="input 'y'"):
        m.run(x=x, y=x)
    with pytest.raises(mixprec.InvalidArgumentError, match="given twice"):
        m.run(x, x=x)
    with pytest.raises(mixprec.InvalidArgumentError, match="input 'x'.*not a numeric array"):
        m.run(x=object())


def test_cuda_without_a_gpu_is_no_device_error():
    probe = subprocess.run(["nvidia-smi"], capture_output=True) if shutil.which("nvidia-smi") \
        else None
    if probe is not None and probe.returncode == 0:
        pytest.skip("this machine has a GPU")
    with pytest.raises(mixprec.NoDeviceError, match="no GPU|CUDA"):
        mixprec.compile(os.path.join(REPO, "examples/mlp.onnx"), precision="bf16",
                        backend="cuda")
    m = mixprec.compile(os.path.join(REPO, "examples/mlp.onnx"), backend="auto")
    assert m.backend == "cpu" and "auto chose the CPU backend" in m.backend_reason


def test_compile_errors_carry_the_cli_line(cli, tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    elided = tmp_path / "elided.mlir"
    elided.write_text(subprocess.run(
        [cli, "import", os.path.join(REPO, "examples/mlp.onnx"), "--elide-weights"],
        capture_output=True, text=True, check=True).stdout)
    for model in (str(tmp_path / "missing.onnx"), str(bad), str(elided)):
        proc = subprocess.run([cli, "compile", model, "--precision", "bf16"],
                              capture_output=True, text=True)
        assert proc.returncode == 1
        first = proc.stderr.splitlines()[0]
        assert first.startswith("mixprec: error: ")
        with pytest.raises(mixprec.CompileError) as info:
            mixprec.compile(model, precision="bf16")
        assert str(info.value) == first[len("mixprec: error: "):]
        assert model in str(info.value)
    with pytest.raises(mixprec.InvalidArgumentError, match="--precision: unknown precision 'fp64'"):
        mixprec.compile(os.path.join(REPO, "examples/mlp.onnx"), precision="fp64")
    with pytest.raises(mixprec.InvalidArgumentError, match="--fp16-margin takes a positive"):
        mixprec.compile(os.path.join(REPO, "examples/mlp.onnx"), fp16_margin=-1)
    with pytest.raises(mixprec.InvalidArgumentError, match="backend"):
        mixprec.compile(os.path.join(REPO, "examples/mlp.onnx"), backend="tpu")


def test_save_load_and_damaged_module(tmp_path):
    m = mlp_module()
    x = mlp_input()
    path = tmp_path / "mlp.mpk"
    m.save(path)
    loaded = mixprec.load(path, backend="cpu")
    for k, v in m.run(x=x).items():
        assert np.array_equal(loaded.run(x=x)[k], v)
    with pytest.raises(mixprec.FailedPreconditionError, match="has no IR"):
        loaded.ir()
    with pytest.raises(mixprec.IoError):
        mixprec.load(tmp_path / "missing.mpk")
    with pytest.raises(mixprec.IoError, match="cannot write"):
        m.save(tmp_path / "no_such_folder" / "mlp.mpk")
    damaged = tmp_path / "damaged.mpk"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    with pytest.raises(mixprec.InvalidModuleError):
        mixprec.load(damaged)
    truncated = tmp_path / "truncated.mpk"
    truncated.write_bytes(bytes(data[:40]))
    with pytest.raises(mixprec.InvalidModuleError):
        mixprec.load(truncated)


def test_save_matches_the_cli(cli, tmp_path):
    model = os.path.join(REPO, "examples/mlp.onnx")
    mixprec.compile(model, precision="fp16").save(tmp_path / "py.mpk")
    subprocess.run([cli, "compile", model, "--precision", "fp16", "-o",
                    str(tmp_path / "cli.mpk")], check=True, capture_output=True)
    assert (tmp_path / "py.mpk").read_bytes() == (tmp_path / "cli.mpk").read_bytes()


def test_ir_is_the_cli_text(cli):
    model = os.path.join(REPO, "examples/mlp.onnx")
    for elide, flags in ((True, ["--elide-weights"]), (False, [])):
        proc = subprocess.run([cli, "compile", model, "--precision", "bf16", *flags],
                              capture_output=True, text=True, check=True)
        assert mixprec.compile(model, precision="bf16").ir(elide_weights=elide) == proc.stdout


def test_onnx_model_proto():
    onnx = pytest.importorskip("onnx", reason="onnx is not installed")
    proto = onnx.load(os.path.join(REPO, "examples/mlp.onnx"))
    x = mlp_input()
    got = mixprec.compile(proto, precision="bf16", backend="cpu").run(x=x)
    expected = mlp_module().run(x=x)
    for k in expected:
        assert np.array_equal(got[k], expected[k])


def test_four_threads_give_identical_results(e2e_models):
    model, _, inputs = e2e_model(e2e_models, "gpt_block")
    module = mixprec.compile(model, precision="bf16",
                             shapes={k: v.shape for k, v in inputs.items()}, backend="cpu")
    expected = module.run(**inputs)

    def run(_):
        return [module.run(**inputs) for _ in range(5)]

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for results in pool.map(run, range(4)):
            for got in results:
                for k in expected:
                    assert np.array_equal(got[k], expected[k])


def test_four_threads_compile_at_once():
    model = os.path.join(REPO, "examples/mlp.onnx")
    expected = mixprec.compile(model, precision="fp16", backend="cpu").ir(elide_weights=False)

    def compile_one(i):
        if i % 2:  # an option error on one thread is not another's
            with pytest.raises(mixprec.InvalidArgumentError, match="fp16-margin"):
                mixprec.compile(model, precision="fp16", fp16_margin=-1)
        return mixprec.compile(model, precision="fp16", backend="cpu").ir(elide_weights=False)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert list(pool.map(compile_one, range(8))) == [expected] * 8


def test_state_and_checkpoints(tmp_path):
    # s_new = s * 0.5 + x, out = sum(s_new), g = gather(s_new, idx); s starts [1, 2, 3, 4].
    m = mixprec.compile(os.path.join(REPO, "tests/lit/cli/Inputs/state-step.mlir"),
                        precision="fp32", backend="cpu")
    assert [s.name for s in m.states] == ["s"] and list(m.state) == ["s"]
    assert [i.name for i in m.inputs] == ["x", "idx"]
    x = np.array([0.5, -1, 2, 0], np.float32)
    idx = np.array([3, 0], np.int64)
    assert m.run(x=x, idx=idx)["out"].tolist() == [6.5]
    assert m.state["s"].tolist() == [1, 0, 3.5, 2]
    m.save_checkpoint(tmp_path / "ckpt", b"step 1")
    m.run(x=x, idx=idx)
    assert m.state["s"].tolist() == [1, -1, 3.75, 1]
    assert m.load_checkpoint(tmp_path / "ckpt") == b"step 1"
    assert m.state["s"].tolist() == [1, 0, 3.5, 2]
    m.state["s"] = np.zeros(4)
    assert m.run(x=x, idx=idx)["g"].tolist() == [0, 0.5]
    m.state.reset()
    assert m.state["s"].tolist() == [1, 2, 3, 4]
    with pytest.raises(mixprec.InvalidArgumentError, match="state 's'|input 's'"):
        m.state["s"] = np.zeros(3)
    with pytest.raises(mixprec.NotFoundError, match="no state 'v'"):
        m.state["v"]
    damaged = tmp_path / "damaged"
    damaged.write_bytes((tmp_path / "ckpt").read_bytes()[:-3])
    with pytest.raises(mixprec.InvalidArgumentError):
        m.load_checkpoint(damaged)
    assert m.state["s"].tolist() == [1, 2, 3, 4]


def test_from_torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    x = torch.randn(2, 8)
    m = mixprec.from_torch(net, (x,), precision="fp32", backend="cpu")
    got = next(iter(m.run(x0=x).values()))
    assert np.allclose(got, net(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_from_torch_without_torch_says_so():
    if "torch" in sys.modules or any(
            os.path.isdir(os.path.join(p, "torch")) for p in sys.path if p):
        pytest.skip("PyTorch is installed")
    with pytest.raises(ImportError, match="needs PyTorch"):
        mixprec.from_torch(object(), ())


def test_readme_quick_start(tmp_path):
    with open(os.path.join(REPO, "README.md")) as f:
        readme = f.read()
    block = re.search(r"### Python quick start\n\n```python\n(.*?)```", readme, re.S)
    assert block, "README has no Python quick start"
    code = block.group(1)
    assert len(code.strip().splitlines()) == 5
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()


def test_device_outputs_are_dlpack_views_without_a_copy():
    # On the CPU backend the backend's memory is host memory: the outputs
    # come back as DLPack views of the buffers the run wrote, in their own
    # dtype, equal to run()'s copies.
    m = mlp_module()
    x = mlp_input()
    host = m.run(x=x)
    dev = m.run(x=x, device_outputs=True)
    assert set(dev) == set(host)
    for name, out in dev.items():
        assert out.__dlpack_device__() == (1, 0) and out.device == "cpu"  # kDLCPU
        assert out.shape == host[name].shape
        view = np.from_dlpack(out)
        assert np.array_equal(view, host[name])
        assert np.shares_memory(view, np.from_dlpack(out))  # exported, not copied
    # They outlive the module object that made them.
    del m
    assert np.array_equal(np.from_dlpack(dev["probs"]), host["probs"])


def test_device_outputs_on_the_cuda_backend_are_cuda_dlpack(tmp_path):
    # The fake CUDA driver (runtime/tests/FakeCudaDriver.c: host memory as
    # device memory, kernels not run) stands in for a GPU: the outputs are
    # CUDA DLPack tensors (kDLCUDA, device 0) over the session's device
    # buffers. Their values need a real GPU (the `gpu` tests).
    fake = os.environ.get("MIXPREC_FAKE_CUDA_DRIVER",
                          os.path.join(REPO, "build/runtime/tests/libmixprec_fake_cuda.so"))
    if not os.path.isfile(fake):
        pytest.skip(f"the fake CUDA driver is not built ({fake})")
    # Element-wise kernels only: the fake driver has no cuBLASLt behind it.
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "x"], ["y"])],
        "ew", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])])
    path = tmp_path / "ew.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    script = f"""
import mixprec, numpy as np
m = mixprec.compile({str(path)!r}, precision="bf16", backend="cuda",
                    keep_io_types=False)
assert m.backend == "cuda", m.backend
out = m.run(x=np.ones([4, 8], np.float32), device_outputs=True)
o = out["y"]
assert o.__dlpack_device__() == (2, 0), o.__dlpack_device__()
assert o.dtype == "bf16" and o.shape == (4, 8) and o.device == "cuda", o
print("ok", o)
"""
    # The fake driver cannot capture CUDA graphs: steps are launched one by one.
    env = dict(os.environ, MIXPREC_CUDA_DRIVER_LIBRARY=fake, MIXPREC_CACHE_DIR=str(tmp_path),
               MIXPREC_CUDA_GRAPHS="0")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0 and proc.stdout.startswith("ok"), proc.stderr[-2000:]


def test_an_input_on_a_device_the_backend_cannot_reach_is_named():
    class OnGpu:  # a DLPack producer whose memory is on a CUDA device
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, *args, **kwargs):
            raise BufferError("the tensor is on cuda:0")

    m = mlp_module()
    with pytest.raises(mixprec.InvalidArgumentError, match="input 'x'.*copy it to the CPU"):
        m.run(x=OnGpu())


def test_issue28_save_never_replaces_what_the_module_was_made_from(tmp_path):
    """Module.save and save_checkpoint refuse the model the module was
    compiled from (and the .mpk a loaded module was read from), under any
    spelling: the CLI's rule for outputs."""
    model = tmp_path / "m.onnx"
    shutil.copy(os.path.join(REPO, "examples", "train_digits", "mlp.onnx"), model)
    before = model.read_bytes()
    m = mixprec.compile(str(model), precision="bf16", shapes={"batch": 2}, backend="cpu")
    for call in (lambda: m.save(model), lambda: m.save(str(tmp_path / "." / "m.onnx")),
                 lambda: m.save_checkpoint(model)):
        with pytest.raises(mixprec.IoError, match="cannot write: it is a file the module"):
            call()
    assert model.read_bytes() == before
    m.save(tmp_path / "m.mpk")
    loaded = mixprec.load(tmp_path / "m.mpk", backend="cpu")
    with pytest.raises(mixprec.IoError, match="cannot write"):
        loaded.save_checkpoint(tmp_path / "m.mpk")


def test_issue28_wrong_argument_types_name_the_parameter():
    model = os.path.join(REPO, "examples", "train_digits", "mlp.onnx")
    x = np.zeros((2, 64), np.float32)
    with pytest.raises(mixprec.InvalidArgumentError, match="shapes takes"):
        mixprec.compile(model, shapes="batch=4")
    with pytest.raises(mixprec.InvalidArgumentError, match="inputs takes \\{name: array\\}"):
        mixprec.validate(model, inputs=[x])
    with pytest.raises(mixprec.InvalidArgumentError, match="tolerance takes a finite number > 0"):
        mixprec.validate(model, shapes={"batch": 2}, tolerance=-1)
    with pytest.raises(mixprec.InvalidArgumentError, match="shapes\\['batch'\\] takes a size"):
        mixprec.compile(model, shapes={"batch": "four"})
