"""Writes models whose shape subgraphs mixprec folds at import, with inputs
and onnxruntime's outputs, into argv[1]:

- gpt2.onnx: a GPT-2-style attention block as torch exports it: the batch
  and sequence sizes taken with Shape/Gather, position ids from
  Range(0, seq, 1) -> Unsqueeze -> Expand, the head split by a Reshape to a
  shape assembled with Unsqueeze/Concat, the scale from Shape -> Cast ->
  Sqrt, the causal mask sliced from a bool buffer up to the computed
  sequence length, a ConstantOfShape filler for the masked scores and
  Where; x.npy, expected_gpt2.npy.
- expand.onnx: Expand with a run-time input (float values -0.0, NaN, inf
  and a run of broadcast axes) and an integer one; e.npy, i.npy,
  expected_expand_e.npy, expected_expand_i.npy.
- computed.onnx: ReduceSum/Squeeze axes, Split sizes, Slice starts and
  ends and Expand's shape computed from Shape; w.npy, expected_*.npy.
- bad-*.onnx: one bad node each (see shape-fold.test).
"""
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(11)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def save(model, name):
    onnx.save(model, f"{out}/{name}")
    return model


def run(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def make(nodes, inputs, outputs, inits, opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


# --- GPT-2-style attention -------------------------------------------------
B, T, H, D = 2, 5, 2, 4
x = rng.standard_normal((B, T, H * D)).astype(np.float32)
np.save(f"{out}/x.npy", x)
wpe = (rng.standard_normal((16, H * D)) * 0.1).astype(np.float32)
causal = np.tril(np.ones((16, 16), bool))[None, None]
n = helper.make_node
nodes = [
    n("Shape", ["x"], ["/Shape_output_0"], name="/Shape"),
    n("Gather", ["/Shape_output_0", "zero"], ["batch"], name="/Gather", axis=0),
    n("Gather", ["/Shape_output_0", "one"], ["seq"], name="/Gather_1", axis=0),
    # position_ids = arange(seq).unsqueeze(0).expand(batch, seq)
    n("Range", ["zero", "seq", "one"], ["/Range_output_0"], name="/Range"),
    n("Unsqueeze", ["/Range_output_0", "axes0"], ["/Unsqueeze_output_0"], name="/Unsqueeze"),
    n("Unsqueeze", ["batch", "axes0"], ["batch1"], name="/Unsqueeze_1"),
    n("Unsqueeze", ["seq", "axes0"], ["seq1"], name="/Unsqueeze_2"),
    n("Concat", ["batch1", "seq1"], ["bt"], name="/Concat", axis=0),
    n("Expand", ["/Unsqueeze_output_0", "bt"], ["position_ids"], name="/Expand"),
    n("Gather", ["wpe", "position_ids"], ["pos_emb"], name="/wpe/Gather", axis=0),
    n("Add", ["x", "pos_emb"], ["h"], name="/Add"),
    # view(batch, seq, heads, head_dim).transpose(1, 2)
    n("Concat", ["batch1", "seq1", "heads", "head_dim"], ["/Concat_1_output_0"],
      name="/Concat_1", axis=0),
    n("Reshape", ["h", "/Concat_1_output_0"], ["q4"], name="/Reshape"),
    n("Transpose", ["q4"], ["q"], name="/Transpose", perm=[0, 2, 1, 3]),
    n("Transpose", ["q"], ["kT"], name="/Transpose_1", perm=[0, 1, 3, 2]),
    n("MatMul", ["q", "kT"], ["scores"], name="/MatMul"),
    # scores / sqrt(head_dim), head_dim read back from the shape
    n("Shape", ["q"], ["qshape"], name="/Shape_1"),
    n("Gather", ["qshape", "minus1"], ["hd"], name="/Gather_2", axis=0),
    n("Cast", ["hd"], ["hd_f"], name="/Cast", to=TensorProto.FLOAT),
    n("Sqrt", ["hd_f"], ["scale"], name="/Sqrt"),
    n("Div", ["scores", "scale"], ["scaled"], name="/Div"),
    # causal_mask = bias[:, :, :seq, :seq]
    n("Slice", ["bias", "zeros2", "seq_seq", "axes23"], ["mask"], name="/Slice"),
    # the filler: a ConstantOfShape of the scores' shape
    n("Shape", ["scaled"], ["sshape"], name="/Shape_2"),
    n("ConstantOfShape", ["sshape"], ["filler"], name="/ConstantOfShape",
      value=numpy_helper.from_array(np.array([-1e9], np.float32))),
    n("Where", ["mask", "scaled", "filler"], ["masked"], name="/Where"),
    n("Softmax", ["masked"], ["probs"], name="/Softmax", axis=-1),
    n("MatMul", ["probs", "q"], ["y"], name="/MatMul_1"),
]
inits = [
    ints("zero", 0), ints("one", 1), ints("minus1", -1), ints("axes0", [0]),
    ints("heads", [H]), ints("head_dim", [D]), ints("zeros2", [0, 0]),
    ints("axes23", [2, 3]), numpy_helper.from_array(wpe, "wpe"),
    numpy_helper.from_array(causal, "bias"),
]
# seq_seq = Concat(seq1, seq1), computed too
nodes.insert(8, n("Concat", ["seq1", "seq1"], ["seq_seq"], name="/Concat_2", axis=0))
model = save(make(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, T, H * D])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, H, T, D])], inits),
             "gpt2.onnx")
np.save(f"{out}/expected_gpt2.npy", run(model, {"x": x})[0])

# --- Expand at run time ----------------------------------------------------
e = np.array([[-0.0], [np.nan], [-np.inf]], np.float32)  # [3, 1]
np.save(f"{out}/e.npy", e)
i = np.array([[[7]], [[-9223372036854775808]], [[3]]], np.int64)  # [3, 1, 1]
np.save(f"{out}/i.npy", i)
nodes = [
    # [3, 1] -> [2, 3, 4] (axes 0 and 2 broadcast, apart)
    n("Expand", ["e", "shape_f"], ["ye"], name="expand_f"),
    # [3, 1, 1] -> [3, 2, 5] (one run of two broadcast axes)
    n("Expand", ["i", "shape_i"], ["yi"], name="expand_i"),
]
model = save(make(nodes, [helper.make_tensor_value_info("e", TensorProto.FLOAT, [3, 1]),
                          helper.make_tensor_value_info("i", TensorProto.INT64, [3, 1, 1])],
                  [helper.make_tensor_value_info("ye", TensorProto.FLOAT, [2, 3, 4]),
                   helper.make_tensor_value_info("yi", TensorProto.INT64, [3, 2, 5])],
                  [ints("shape_f", [2, 1, 4]), ints("shape_i", [2, 5])]),
             "expand.onnx")
ye, yi = run(model, {"e": e, "i": i})
np.save(f"{out}/expected_expand_e.npy", ye)
np.save(f"{out}/expected_expand_i.npy", yi)

# --- Inputs computed by shape subgraphs ------------------------------------
# ReduceSum's and Squeeze's axes (rank - 1), Split's sizes (width / 2
# twice), Slice's starts and ends, Expand's shape: all computed from Shape.
w = rng.standard_normal((2, 6)).astype(np.float32)
np.save(f"{out}/w.npy", w)
nodes = [
    n("Shape", ["w"], ["r"], name="shape"),
    n("Size", ["r"], ["rank"], name="size"),
    n("Sub", ["rank", "one"], ["last"], name="last"),
    n("Unsqueeze", ["last", "axes0"], ["axes"], name="axes"),
    n("ReduceSum", ["w", "axes"], ["s"], name="sum"),
    n("Squeeze", ["s", "axes"], ["sq"], name="squeeze"),
    n("Gather", ["r", "one"], ["width"], name="width", axis=0),
    n("Div", ["width", "two"], ["half"], name="half"),
    n("Unsqueeze", ["half", "axes0"], ["half1"], name="half1"),
    n("Concat", ["half1", "half1"], ["sizes"], name="sizes", axis=0),
    n("Split", ["w", "sizes"], ["a", "b"], name="split", axis=1),
    n("Sub", ["a", "b"], ["d"], name="d"),
    n("Sub", ["half1", "one1"], ["starts"], name="starts"),
    n("Mul", ["half1", "two"], ["ends"], name="ends"),
    n("Slice", ["w", "starts", "ends", "axes"], ["sl"], name="slice"),
    n("Unsqueeze", ["sq", "axes"], ["sq1"], name="sq1"),
    n("Expand", ["sq1", "r"], ["ex"], name="expand"),
]
outs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
        for name in ("sq", "d", "sl", "ex")]
model = save(make(nodes, [helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 6])], outs,
                  [ints("one", 1), ints("two", 2), ints("axes0", [0]), ints("one1", [1])]),
             "computed.onnx")
for name, value in zip(("sq", "d", "sl", "ex"), run(model, {"w": w})):
    np.save(f"{out}/expected_{name}.npy", value)

# --- Bad nodes ---------------------------------------------------------------
X = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])]
Y = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]


def bad(name, nodes, inits, inputs=X, outputs=Y):
    # Written without onnx's checker: the point is that they are wrong.
    save(make(nodes, inputs, outputs, inits), f"bad-{name}.onnx")


bad("cos-value", [n("ConstantOfShape", ["s"], ["y"], name="cos",
                    value=numpy_helper.from_array(np.array([1, 2], np.float32)))],
    [ints("s", [2, 3])])
bad("cos-negative", [n("ConstantOfShape", ["s"], ["y"], name="cos")], [ints("s", [2, -3])])
bad("cos-huge", [n("ConstantOfShape", ["s"], ["y"], name="cos")],
    [ints("s", [1 << 20, 1 << 20, 1 << 20])])
bad("range-delta", [n("Range", ["a", "b", "d"], ["y"], name="rng")],
    [ints("a", 0), ints("b", 5), ints("d", 0)])
bad("range-huge", [n("Range", ["a", "b", "d"], ["y"], name="rng")],
    [ints("a", -(1 << 62)), ints("b", 1 << 62), ints("d", 1)])
bad("range-dynamic", [n("Range", ["a", "lim", "d"], ["y"], name="rng")],
    [ints("a", 0), ints("d", 1)],
    inputs=[helper.make_tensor_value_info("lim", TensorProto.INT64, [])])
bad("expand-negative", [n("Expand", ["x", "s"], ["y"], name="ex")], [ints("s", [-1, 3])])
bad("expand-mismatch", [n("Expand", ["x", "s"], ["y"], name="ex")], [ints("s", [4, 3, 5])])
bad("div-zero", [n("Div", ["a", "z"], ["q"], name="div"),
                 n("Reshape", ["x", "q"], ["y"], name="rs")],
    [ints("a", [6]), ints("z", [0])])
# A Reshape whose shape is assembled from a graph input at run time.
bad("reshape-dynamic", [n("Concat", ["n", "four"], ["/Concat_output_0"], name="/Concat", axis=0),
                        n("Reshape", ["x", "/Concat_output_0"], ["y"], name="/Reshape")],
    [ints("four", [3])],
    inputs=X + [helper.make_tensor_value_info("n", TensorProto.INT64, [1])])
