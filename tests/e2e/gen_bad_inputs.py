#!/usr/bin/env python3
"""Generate inputs for mixprec's error-handling (and external-data) tests.

Usage:
    gen_bad_inputs.py OUTDIR

Writes into OUTDIR:

  mlp.onnx, mlp_input.npy     the gen_models.py `mlp` model (input x[8,64])
                              and a valid input for it, for the .npy cases
  truncated.onnx              mlp.onnx cut in half (protobuf parse error)
  not_onnx.onnx               plain text, not a protobuf
  unsupported_op.onnx         opset 13, Relu -> Hardmax (node "my_hardmax");
                              a valid model with an op mixprec lacks
  missing_initializer.onnx    MatMul(x, W_missing): W_missing is not a graph
                              input, initializer or node output
  shape_mismatch.onnx         MatMul of x[4,8] by an initializer [5,3]
                              (node "bad_matmul")
  bad_npy.npy                 garbage bytes (no NPY magic)
  truncated_npy.npy           valid NPY header for [8,64] float32, half the data
  wrong_shape_input.npy       float32 [8,32] for mlp's input x (expects [8,64])
  wrong_shape_same_size_input.npy
                              float32 [16,32]: same element count, wrong shape
  external_data/              gen_models.py `encoder` saved with all its
      model.onnx              initializers (floats, the int64 Reshape shape,
      weights.bin             rank-0 scalars) in one external file
      inputs/x.npy, ref/y.npy (size_threshold=0); a *valid* case with
                              onnxruntime reference output (computed from
                              the inline model: onnxruntime itself cannot
                              load this file, its shape inference does not
                              read an external Reshape shape)
  external_data_missing/model.onnx   same, weights.bin absent
  external_data_short/        same, weights.bin cut to half its size
  refuse_*.onnx               models onnxruntime refuses (checked here) that
                              mixprec must refuse too: an unknown and a
                              duplicated attribute, Relu(h, h), MatMul(x), a
                              second Relu output, opset 99, IR version 99, an
                              output of type UNDEFINED, a graph without outputs
  secret.bin                  32 float32, read by the next two
  external_data_escape/m/     model.onnx reading "../../secret.bin" (outside
                              its folder; onnxruntime refuses it)
  external_data_symlink/m/    model.onnx reading "link.bin", a symlink to
                              ../secret.bin
  zero.onnx, fifo.onnx,       a symlink to /dev/zero, a FIFO and a folder:
  folder.onnx                 not regular files (reading must not start)
  newline_op.onnx             a node whose op type holds a newline
  manifest.json               "models": the external_data case (so
                              `run_e2e.py --models OUTDIR` checks its outputs)
                              and "error_cases": commands that must fail
                              cleanly (`run_e2e.py --errors OUTDIR`), as argv
                              lists with {dir} = OUTDIR and {tmp} = a scratch
                              output dir, plus substrings the one-line error
                              message is expected to contain.

Everything is deterministic.
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_models  # noqa: E402  (same directory)

NOT_ONNX_TEXT = (
    "This is not an ONNX model.\n"
    "It is plain text that a protobuf parser must reject:\n"
    "the quick brown fox jumps over the lazy dog 0123456789\n"
)


def small_model(name, nodes, inputs, outputs, initializers=(), opset=13):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    model = helper.make_model(graph, producer_name="mixprec-tests",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = gen_models.IR_FOR_OPSET[opset]
    return model


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def ort_refuses(model):
    """True when onnxruntime refuses to load `model` (a ModelProto or a path)."""
    import onnxruntime as ort
    try:
        ort.InferenceSession(model if isinstance(model, str) else model.SerializeToString(),
                             providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 - any refusal counts
        return True
    return False


def refused_models(out):
    """Write the refuse_*.onnx models; return their error cases."""
    x, y = vi("x", [4, 8]), vi("y", [4, 8])
    relu = lambda **attrs: helper.make_node("Relu", ["x"], ["y"], **attrs)  # noqa: E731
    dup = helper.make_node("Softmax", ["x"], ["y"], name="sm_dup", axis=1)
    dup.attribute.extend([helper.make_attribute("axis", 0)])
    undefined = helper.make_tensor_value_info("y", TensorProto.UNDEFINED, [4, 8])
    cases = {
        # name: (model, substrings the error names)
        "unknown_attr": (small_model("g", [relu(name="relu_foo", foo=1)], [x], [y]),
                         ["relu_foo", "Relu", "'foo'"]),
        "dup_attr": (small_model("g", [dup], [x], [y]), ["sm_dup", "'axis'", "twice"]),
        "extra_input": (small_model("g", [helper.make_node("Relu", ["x", "x"], ["y"],
                                                           name="relu_xx")], [x], [y]),
                        ["relu_xx", "input #1"]),
        "too_few_inputs": (small_model("g", [helper.make_node("MatMul", ["x"], ["y"],
                                                              name="mm_one")], [x], [y]),
                           ["mm_one", "MatMul", "takes 2 inputs"]),
        "extra_output": (small_model("g", [helper.make_node("Relu", ["x"], ["y", "z"],
                                                            name="relu_yz")], [x], [y]),
                         ["relu_yz", "output #1", "'z'"]),
        "opset99": (small_model("g", [relu(name="r")], [x], [y]), ["opset 99"]),
        "ir99": (small_model("g", [relu(name="r")], [x], [y]), ["IR version 99"]),
        "output_undefined": (small_model("g", [relu(name="r")], [x], [undefined]),
                             ["'y'", "UNDEFINED"]),
        "no_outputs": (small_model("g", [], [x], []), ["no outputs"]),
    }
    cases["opset99"][0].opset_import[0].version = 99
    cases["ir99"][0].ir_version = 99
    error_cases = []
    for name, (model, expect) in cases.items():
        if not ort_refuses(model):
            raise SystemExit(f"internal error: onnxruntime accepts refuse_{name}.onnx")
        onnx.save_model(model, os.path.join(out, f"refuse_{name}.onnx"))
        error_cases.append({"name": f"import_refuse_{name}",
                            "argv": ["import", f"{{dir}}/refuse_{name}.onnx"],
                            "expect_in_message": expect})
    return error_cases


def escaping_external_data(out):
    """Models whose external data lies outside their folder; return their error cases."""
    secret = os.path.join(out, "secret.bin")
    np.arange(32, dtype=np.float32).tofile(secret)
    error_cases = []
    for sub, location in (("external_data_escape", "../../secret.bin"),
                          ("external_data_symlink", "link.bin")):
        folder = os.path.join(out, sub, "m")
        os.makedirs(folder, exist_ok=True)
        link = os.path.join(folder, "link.bin")
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.join("..", "..", "secret.bin"), link)
        w = numpy_helper.from_array(np.zeros((8,), dtype=np.float32), "W_outside")
        w.ClearField("raw_data")
        w.data_location = TensorProto.EXTERNAL
        entry = w.external_data.add()
        entry.key, entry.value = "location", location
        entry = w.external_data.add()
        entry.key, entry.value = "offset", "0"
        m = small_model(sub, [helper.make_node("Add", ["x", "W_outside"], ["y"], name="add")],
                        [vi("x", [8])], [vi("y", [8])], [w])
        path = os.path.join(folder, "model.onnx")
        onnx.save_model(m, path)
        if not ort_refuses(path):
            raise SystemExit(f"internal error: onnxruntime accepts {sub}/m/model.onnx")
        error_cases.append({"name": f"import_{sub}",
                            "argv": ["import", f"{{dir}}/{sub}/m/model.onnx"],
                            "expect_in_message": ["W_outside", f"'{location}' is outside the "
                                                  "model's directory"]})
    return error_cases


def not_regular_files(out):
    """zero.onnx (-> /dev/zero), fifo.onnx, folder.onnx; return their error cases."""
    made = []
    zero = os.path.join(out, "zero.onnx")
    if os.path.lexists(zero):
        os.remove(zero)
    if os.path.exists("/dev/zero"):
        os.symlink("/dev/zero", zero)
        made.append(("zero", "a character device"))
    fifo = os.path.join(out, "fifo.onnx")
    if os.path.lexists(fifo):
        os.remove(fifo)
    os.mkfifo(fifo)
    made.append(("fifo", "a FIFO"))
    os.makedirs(os.path.join(out, "folder.onnx"), exist_ok=True)
    made.append(("folder", "a folder"))
    return [{"name": f"import_{name}", "argv": ["import", f"{{dir}}/{name}.onnx"],
             "expect_in_message": [f"{name}.onnx: cannot read: not a regular file ({kind})"]}
            for name, kind in made]


def save_external(model, path, location="weights.bin"):
    onnx.save_model(model, path, save_as_external_data=True,
                    all_tensors_to_one_file=True, location=location, size_threshold=0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("outdir", help="output directory (created if missing)")
    args = ap.parse_args(argv)
    out = args.outdir
    os.makedirs(out, exist_ok=True)
    p = lambda *a: os.path.join(out, *a)  # noqa: E731
    rng = np.random.default_rng(1234)

    # A valid model and input to pair with the bad .npy files.
    mlp, mlp_inputs = gen_models.build_mlp()
    onnx.save_model(mlp, p("mlp.onnx"))
    np.save(p("mlp_input.npy"), mlp_inputs["x"])
    batch, d_in = mlp_inputs["x"].shape

    # Corrupt / non-ONNX files.
    data = mlp.SerializeToString()
    with open(p("truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    with open(p("not_onnx.onnx"), "w") as f:
        f.write(NOT_ONNX_TEXT)
    for bad in ("truncated.onnx", "not_onnx.onnx"):
        try:
            with open(p(bad), "rb") as f:
                onnx.load_from_string(f.read())
        except Exception:  # noqa: BLE001 - expected: must not parse
            continue
        raise SystemExit(f"internal error: {bad} parses as a ModelProto")

    # Valid ONNX, unsupported op.
    m = small_model("unsupported_op", [
        helper.make_node("Relu", ["x"], ["r"], name="relu0"),
        helper.make_node("Hardmax", ["r"], ["y"], name="my_hardmax", axis=-1),
    ], [vi("x", [4, 8])], [vi("y", [4, 8])])
    onnx.checker.check_model(m, full_check=True)
    onnx.save_model(m, p("unsupported_op.onnx"))

    # Dangling node input (the checker rejects this; save unchecked).
    m = small_model("missing_initializer", [
        helper.make_node("MatMul", ["x", "W_missing"], ["y"], name="matmul_missing_w"),
    ], [vi("x", [4, 8])], [vi("y", [4, 3])])
    onnx.save_model(m, p("missing_initializer.onnx"))

    # Incompatible MatMul shapes (fails strict shape inference; save unchecked).
    w = numpy_helper.from_array(rng.standard_normal((5, 3)).astype(np.float32), "W")
    m = small_model("shape_mismatch", [
        helper.make_node("MatMul", ["x", "W"], ["y"], name="bad_matmul"),
    ], [vi("x", [4, 8])], [vi("y", [4, 3])], [w])
    onnx.save_model(m, p("shape_mismatch.onnx"))

    # Bad .npy files for `mixprec run mlp.onnx --input x=...`.
    with open(p("bad_npy.npy"), "wb") as f:
        f.write(b"GARBAGE\x00\x01\x02 not a numpy file " + rng.bytes(64))
    good = np.zeros((batch, d_in), dtype=np.float32)
    with open(p("truncated_npy.npy"), "wb") as f:
        np.lib.format.write_array_header_1_0(f, np.lib.format.header_data_from_array_1_0(good))
        f.write(good.tobytes()[: good.nbytes // 2])
    np.save(p("wrong_shape_input.npy"),
            rng.standard_normal((batch, d_in // 2)).astype(np.float32))
    np.save(p("wrong_shape_same_size_input.npy"),
            rng.standard_normal((2 * batch, d_in // 2)).astype(np.float32))

    # External data: a valid case with reference outputs, then broken copies.
    enc, enc_inputs = gen_models.build_encoder()
    entry = gen_models.write_case(out, "external_data", enc, enc_inputs,
                                  save_as_external_data=True, all_tensors_to_one_file=True,
                                  location="weights.bin", size_threshold=0)
    # onnx.load reads weights.bin back in; check that model (checking the path
    # instead trips over the same shape-inference limitation as onnxruntime).
    onnx.checker.check_model(onnx.load(p("external_data", "model.onnx")), full_check=True)
    stored = onnx.load(p("external_data", "model.onnx"), load_external_data=False)
    assert all(t.data_location == TensorProto.EXTERNAL for t in stored.graph.initializer)
    for sub in ("external_data_missing", "external_data_short"):
        os.makedirs(p(sub), exist_ok=True)
        save_external(gen_models.build_encoder()[0], p(sub, "model.onnx"))
    for sub in ("external_data", "external_data_short"):
        os.chmod(p(sub, "weights.bin"), 0o644)    # onnx creates it 0600
    os.remove(p("external_data_missing", "weights.bin"))
    wpath = p("external_data_short", "weights.bin")
    os.truncate(wpath, os.path.getsize(wpath) // 2)

    run_mlp = ["run", "{dir}/mlp.onnx", "--output-dir", "{tmp}", "--input"]
    error_cases = [
        {"name": "import_truncated", "argv": ["import", "{dir}/truncated.onnx"]},
        {"name": "import_not_onnx", "argv": ["import", "{dir}/not_onnx.onnx"]},
        {"name": "import_nonexistent", "argv": ["import", "{dir}/does_not_exist.onnx"],
         "expect_in_message": ["does_not_exist.onnx"]},
        {"name": "import_unsupported_op", "argv": ["import", "{dir}/unsupported_op.onnx"],
         "expect_in_message": ["Hardmax", "my_hardmax"]},
        {"name": "import_missing_initializer",
         "argv": ["import", "{dir}/missing_initializer.onnx"],
         "expect_in_message": ["W_missing"]},
        {"name": "import_shape_mismatch", "argv": ["import", "{dir}/shape_mismatch.onnx"],
         "expect_in_message": ["MatMul"]},
        {"name": "import_external_data_missing",
         "argv": ["import", "{dir}/external_data_missing/model.onnx"],
         "expect_in_message": ["weights.bin"]},
        {"name": "import_external_data_short",
         "argv": ["import", "{dir}/external_data_short/model.onnx"]},
        {"name": "run_unsupported_op",
         "argv": ["run", "{dir}/unsupported_op.onnx", "--output-dir", "{tmp}"],
         "expect_in_message": ["Hardmax"]},
        {"name": "run_truncated", "argv": ["run", "{dir}/truncated.onnx", "--output-dir", "{tmp}"]},
        {"name": "run_bad_npy", "argv": run_mlp + ["x={dir}/bad_npy.npy"],
         "expect_in_message": ["bad_npy.npy"]},
        {"name": "run_truncated_npy", "argv": run_mlp + ["x={dir}/truncated_npy.npy"],
         "expect_in_message": ["truncated_npy.npy"]},
        {"name": "run_missing_npy", "argv": run_mlp + ["x={dir}/does_not_exist.npy"],
         "expect_in_message": ["does_not_exist.npy"]},
        {"name": "run_wrong_shape_input", "argv": run_mlp + ["x={dir}/wrong_shape_input.npy"]},
        {"name": "run_wrong_shape_same_size_input",
         "argv": run_mlp + ["x={dir}/wrong_shape_same_size_input.npy"]},
        {"name": "run_unknown_input_name", "argv": run_mlp + ["nope={dir}/mlp_input.npy"],
         "expect_in_message": ["nope"]},
    ]
    error_cases += refused_models(out)
    error_cases += escaping_external_data(out)
    error_cases += not_regular_files(out)
    m = small_model("newline_op", [helper.make_node("Re\nlu", ["x"], ["y"], name="nl")],
                    [vi("x", [4])], [vi("y", [4])])
    onnx.save_model(m, p("newline_op.onnx"))
    error_cases.append({"name": "import_newline_op", "argv": ["import", "{dir}/newline_op.onnx"],
                        "expect_in_message": ["'Re\\nlu'", "'nl'"]})
    gen_models.write_manifest(out, [entry], error_cases=error_cases)
    print(f"wrote {len(error_cases)} error cases and the external_data model to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
