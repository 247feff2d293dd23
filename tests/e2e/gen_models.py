#!/usr/bin/env python3
"""Generate the end-to-end test models for mixprec.

Usage:
    gen_models.py OUTDIR [--only NAME ...] [--verify]

For every model NAME this writes

    OUTDIR/NAME/model.onnx             the model (FP32, static shapes,
                                       weights stored as initializers)
    OUTDIR/NAME/inputs/<input>.npy     one file per graph input
    OUTDIR/NAME/ref/<output>.npy       reference outputs, onnxruntime CPU

and OUTDIR/manifest.json, which lists every model with its opset, the op
types it uses and its inputs and outputs (name, file relative to OUTDIR,
shape, dtype).  tests/e2e/run_e2e.py reads that manifest.

Everything is deterministic: each model draws its weights and inputs from its
own numpy Generator with a fixed seed, so adding a model changes no other.
Weights are scaled ~1/sqrt(fan_in) so activations stay O(1) and the outputs
(softmax rows, logits) are far from degenerate.

Reference outputs come from onnxruntime's CPU provider with graph
optimizations disabled (op-by-op execution, no fusions), one thread.

--verify additionally runs onnx.checker.check_model(full_check=True) (strict
shape inference), checks every output against the declared shape, checks that
outputs are finite and not degenerate, and compares the reference with an
onnxruntime run that has all graph optimizations enabled (an estimate of the
FP32 noise floor, which must be far below run_e2e.py's 1e-4 tolerance).

Models (details in each builder's docstring, also copied to the manifest):
  mlp              opset 13  x[8,64] -> logits[8,10], probs[8,10]
  cnn              opset 13  x[2,3,16,16] -> log_probs[2,10]
  encoder          opset 17  x[2,16,64] -> y[2,16,64]
  gpt_block        opset 20  input_ids[2,16] int64 -> logits[2,16,96],
                             hidden[2,16,64]
  opset11_ops      opset 11  x[2,3,4] -> reduce_sum[3,2], reduce_mean[1,2,1],
                             reduce_max[3,2], softmax_legacy[3,2,16]
  rmsnorm_mlp      opset 18  x[4,8,32] -> concat[4,12,32], reduce_max[4,32],
                             strided_sum[4,8,1]
  linear_variants  opset 13  a[16,8], b[2,1,4,8] -> gemm[8,5],
                             softmax_axis1[2,3,4,5], matvec[2,1,4], flatten[2,32]

The builders (build_mlp, build_gpt_block, ...) take size parameters;
bench/gen_bench_models.py imports them to build benchmark-sized variants.
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Lowest IR version that goes with each opset we use (onnx versioning table).
IR_FOR_OPSET = {11: 6, 13: 7, 17: 8, 18: 8, 20: 9}

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

NP_TO_ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.bool_): TensorProto.BOOL,
}


class GraphBuilder:
    """Small helper around onnx.helper that names things and holds weights."""

    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.initializers = []
        self.graph_inputs = []
        self.graph_outputs = []
        self._names = set()
        self._counter = {}

    # -- naming -----------------------------------------------------------
    def _fresh(self, base):
        k = self._counter.get(base, 0)
        while True:
            name = f"{base}_{k}"
            k += 1
            if name not in self._names:
                self._counter[base] = k
                self._names.add(name)
                return name

    # -- tensors ----------------------------------------------------------
    def init(self, name, array):
        """Add an initializer (any numpy array) and return its name."""
        array = np.asarray(array)
        assert name not in self._names, name
        self._names.add(name)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def weight(self, name, shape, fan_in=None, gain=1.0):
        """Gaussian weight with std gain/sqrt(fan_in) (fan_in: shape[0])."""
        fan_in = shape[0] if fan_in is None else fan_in
        w = self.rng.standard_normal(shape) * (gain / math.sqrt(fan_in))
        return self.init(name, w.astype(np.float32))

    def bias(self, name, shape, std=0.1):
        return self.init(name, (self.rng.standard_normal(shape) * std).astype(np.float32))

    def f32(self, name, value):
        return self.init(name, np.asarray(value, dtype=np.float32))

    def i64(self, name, values):
        return self.init(name, np.asarray(values, dtype=np.int64))

    def input(self, name, shape, dtype=np.float32):
        self._names.add(name)
        self.graph_inputs.append(
            helper.make_tensor_value_info(name, NP_TO_ONNX[np.dtype(dtype)], shape))
        return name

    def output(self, name, shape, dtype=np.float32):
        self.graph_outputs.append(
            helper.make_tensor_value_info(name, NP_TO_ONNX[np.dtype(dtype)], shape))
        return name

    # -- nodes ------------------------------------------------------------
    def node(self, op, inputs, out=None, n_out=1, **attrs):
        """Append a node; returns its output name (or list if n_out > 1).

        out: explicit output name (e.g. a graph output name)."""
        if out is not None:
            outs = [out] if isinstance(out, str) else list(out)
            self._names.update(outs)
        else:
            outs = [self._fresh(op.lower()) for _ in range(n_out)]
        name = self._fresh("n_" + op)
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=name, **attrs))
        return outs[0] if len(outs) == 1 else outs

    def const_node(self, value, dtype):
        """A Constant node (value attribute) producing the given tensor."""
        out = self._fresh("const")
        t = numpy_helper.from_array(np.asarray(value, dtype=dtype), out + "_value")
        self.nodes.append(helper.make_node("Constant", [], [out],
                                           name=self._fresh("n_Constant"), value=t))
        return out

    # -- common layers ----------------------------------------------------
    def linear(self, x, d_in, d_out, prefix, out=None, gain=1.0):
        """x @ W + b via MatMul + Add (how PyTorch exports nn.Linear on 3-D x)."""
        w = self.weight(prefix + ".weight", (d_in, d_out), gain=gain)
        b = self.bias(prefix + ".bias", (d_out,))
        return self.node("Add", [self.node("MatMul", [x, w]), b], out=out)

    def layer_norm(self, x, dim, prefix, out=None, eps=1e-5):
        g = self.init(prefix + ".weight",
                      (1.0 + 0.1 * self.rng.standard_normal(dim)).astype(np.float32))
        b = self.bias(prefix + ".bias", (dim,))
        return self.node("LayerNormalization", [x, g, b], out=out, axis=-1, epsilon=eps)

    # -- finish -----------------------------------------------------------
    def make_model(self, opset, doc=""):
        graph = helper.make_graph(self.nodes, self.name, self.graph_inputs,
                                  self.graph_outputs, self.initializers)
        model = helper.make_model(graph, producer_name="mixprec-tests",
                                  opset_imports=[helper.make_opsetid("", opset)],
                                  doc_string=doc)
        model.ir_version = IR_FOR_OPSET[opset]
        return model


# ---------------------------------------------------------------------------
# Models. Each builder returns (model, {input name: numpy array}).
# ---------------------------------------------------------------------------

def build_mlp(batch=8, d_in=64, hidden1=128, hidden2=128, d_out=10,
              name="mlp", seed=1):
    """x[batch,d_in] -> Gemm(transB=1)+Relu -> MatMul+Add -> Tanh -> Gemm
    (transB=1) -> logits -> Softmax(axis=-1) -> probs.  Opset 13."""
    g = GraphBuilder(name, seed)
    x = g.input("x", [batch, d_in])
    w1 = g.weight("fc1.weight", (hidden1, d_in), fan_in=d_in, gain=math.sqrt(2))
    b1 = g.bias("fc1.bias", (hidden1,))
    h = g.node("Relu", [g.node("Gemm", [x, w1, b1], transB=1)])
    h = g.node("Tanh", [g.linear(h, hidden1, hidden2, "fc2", gain=1.5)])
    w3 = g.weight("fc3.weight", (d_out, hidden2), fan_in=hidden2, gain=3.0)
    b3 = g.bias("fc3.bias", (d_out,))
    logits = g.node("Gemm", [h, w3, b3], out="logits", alpha=1.0, beta=1.0, transB=1)
    g.node("Softmax", [logits], out="probs", axis=-1)
    g.output("logits", [batch, d_out])
    g.output("probs", [batch, d_out])
    inputs = {"x": g.rng.standard_normal((batch, d_in)).astype(np.float32)}
    return g.make_model(13, build_mlp.__doc__), inputs


def build_cnn(name="cnn", seed=2):
    """x[2,3,16,16] -> Conv 3x3 pad 1 +bias -> BatchNormalization -> Relu ->
    MaxPool 2x2 s2 -> grouped Conv (groups=2) 3x3 s2 pad 1 -> Relu ->
    AveragePool 3x3 s1 pad 1 (count_include_pad=0) -> GlobalAveragePool ->
    Flatten -> Gemm(transB=1) -> LogSoftmax.  Opset 13."""
    g = GraphBuilder(name, seed)
    n, c, hw = 2, 3, 16
    x = g.input("x", [n, c, hw, hw])
    w = g.weight("conv1.weight", (8, 3, 3, 3), fan_in=3 * 9, gain=math.sqrt(2))
    b = g.bias("conv1.bias", (8,))
    h = g.node("Conv", [x, w, b], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
               strides=[1, 1], dilations=[1, 1], group=1)            # [2,8,16,16]
    scale = g.init("bn1.weight", (1.0 + 0.1 * g.rng.standard_normal(8)).astype(np.float32))
    bias = g.bias("bn1.bias", (8,))
    mean = g.bias("bn1.running_mean", (8,), std=0.2)
    var = g.init("bn1.running_var", g.rng.uniform(0.5, 1.5, 8).astype(np.float32))
    h = g.node("BatchNormalization", [h, scale, bias, mean, var], epsilon=1e-5,
               momentum=0.9)
    h = g.node("Relu", [h])
    h = g.node("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2])  # [2,8,8,8]
    w2 = g.weight("conv2.weight", (16, 4, 3, 3), fan_in=4 * 9, gain=math.sqrt(2))
    b2 = g.bias("conv2.bias", (16,))
    h = g.node("Conv", [h, w2, b2], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
               strides=[2, 2], group=2)                              # [2,16,4,4]
    h = g.node("Relu", [h])
    h = g.node("AveragePool", [h], kernel_shape=[3, 3], strides=[1, 1],
               pads=[1, 1, 1, 1], count_include_pad=0)               # [2,16,4,4]
    h = g.node("GlobalAveragePool", [h])                             # [2,16,1,1]
    h = g.node("Flatten", [h], axis=1)                               # [2,16]
    w3 = g.weight("fc.weight", (10, 16), fan_in=16, gain=6.0)
    b3 = g.bias("fc.bias", (10,))
    logits = g.node("Gemm", [h, w3, b3], transB=1)
    g.node("LogSoftmax", [logits], out="log_probs", axis=1)
    g.output("log_probs", [n, 10])
    inputs = {"x": g.rng.standard_normal((n, c, hw, hw)).astype(np.float32)}
    return g.make_model(13, build_cnn.__doc__), inputs


def _split_heads(g, t, shape_name):
    """[B,S,H*hd] -> Reshape [B,S,H,hd] -> Transpose -> [B,H,S,hd]."""
    return g.node("Transpose", [g.node("Reshape", [t, shape_name])], perm=[0, 2, 1, 3])


def build_encoder(batch=2, seq=16, hidden=64, heads=4, mlp=256, name="encoder", seed=3):
    """Pre-LN transformer encoder block, opset 17.
    x[B,S,D] -> LayerNormalization -> Q/K/V MatMul+Add -> Reshape [0,0,H,hd]
    -> Transpose -> MatMul(Q, K^T) -> Div sqrt(hd) -> Softmax -> MatMul V ->
    Transpose -> Reshape [0,0,-1] -> out proj -> +x -> LayerNormalization ->
    MatMul+Add -> GELU as x*0.5*(1+Erf(x/sqrt2)) -> MatMul+Add -> +residual."""
    g = GraphBuilder(name, seed)
    hd = hidden // heads
    x = g.input("x", [batch, seq, hidden])
    h = g.layer_norm(x, hidden, "ln1")
    q = g.linear(h, hidden, hidden, "attn.q")
    k = g.linear(h, hidden, hidden, "attn.k")
    v = g.linear(h, hidden, hidden, "attn.v")
    # Head-split shape as an initializer with 0 (copy dim) entries, the merge
    # shape as a Constant node with -1: both forms appear in real exports.
    split_shape = g.i64("heads_shape", [0, 0, heads, hd])
    qh = _split_heads(g, q, split_shape)      # [B,H,S,hd]
    kt = g.node("Transpose", [g.node("Reshape", [k, split_shape])],
                perm=[0, 2, 3, 1])                                    # [B,H,hd,S]
    vh = _split_heads(g, v, split_shape)
    scores = g.node("MatMul", [qh, kt])                               # [B,H,S,S]
    scores = g.node("Div", [scores, g.f32("sqrt_head_dim", math.sqrt(hd))])
    probs = g.node("Softmax", [scores], axis=-1)
    ctx = g.node("MatMul", [probs, vh])                               # [B,H,S,hd]
    ctx = g.node("Transpose", [ctx], perm=[0, 2, 1, 3])
    ctx = g.node("Reshape", [ctx, g.const_node([0, 0, -1], np.int64)])
    attn = g.linear(ctx, hidden, hidden, "attn.out")
    x1 = g.node("Add", [x, attn])
    h = g.layer_norm(x1, hidden, "ln2")
    u = g.linear(h, hidden, mlp, "mlp.fc1", gain=1.5)
    # GELU (erf form), exactly as torch.onnx exports nn.GELU() before opset 20.
    e = g.node("Erf", [g.node("Div", [u, g.f32("sqrt2", math.sqrt(2.0))])])
    e = g.node("Add", [e, g.f32("one", 1.0)])
    act = g.node("Mul", [g.node("Mul", [u, e]), g.f32("half", 0.5)])
    m = g.linear(act, mlp, hidden, "mlp.fc2")
    g.node("Add", [x1, m], out="y")
    g.output("y", [batch, seq, hidden])
    inputs = {"x": g.rng.standard_normal((batch, seq, hidden)).astype(np.float32)}
    return g.make_model(17, build_encoder.__doc__), inputs


def build_gpt_block(batch=2, seq=16, hidden=64, heads=4, mlp=256, vocab=96,
                    name="gpt_block", seed=4):
    """GPT-2-style decoder block, opset 20.

    vocab not None: input_ids[B,S] int64 -> Gather(wte) + Gather(wpe, position
    ids from a Constant node) -> block -> LayerNormalization -> MatMul with
    Transpose(wte) (tied LM head) -> logits[B,S,vocab]; also outputs the block
    output as 'hidden'.  vocab None: input hidden_states[B,S,D] -> block ->
    'hidden' only.
    Block: LayerNormalization -> fused QKV MatMul+Add -> 3 Slices on the last
    axis -> Reshape/Transpose to heads -> MatMul(Q, K^T) -> Mul 1/sqrt(hd) ->
    Where(causal bool mask [S,S], scores, -1e4) -> Softmax -> MatMul V ->
    Transpose/Reshape -> proj -> +residual -> LayerNormalization -> MatMul+Add
    -> Gelu(approximate='tanh') -> MatMul+Add -> +residual."""
    g = GraphBuilder(name, seed)
    hd = hidden // heads
    if vocab is not None:
        ids = g.input("input_ids", [batch, seq], np.int64)
        # std 2.4/sqrt(D) (0.3 at D=64) keeps the tied-head logits' std ~2.5.
        wte = g.init("wte", ((2.4 / math.sqrt(hidden)) *
                             g.rng.standard_normal((vocab, hidden))).astype(np.float32))
        wpe = g.init("wpe", (0.1 * g.rng.standard_normal((seq, hidden))).astype(np.float32))
        tok = g.node("Gather", [wte, ids], axis=0)                    # [B,S,D]
        pos_ids = g.const_node(np.arange(seq).reshape(1, seq), np.int64)
        pos = g.node("Gather", [wpe, pos_ids], axis=0)                # [1,S,D]
        x = g.node("Add", [tok, pos])
    else:
        x = g.input("hidden_states", [batch, seq, hidden])
    h = g.layer_norm(x, hidden, "ln_1")
    qkv = g.linear(h, hidden, 3 * hidden, "attn.c_attn")             # [B,S,3D]
    last = g.i64("axes_last", [-1])
    one = g.i64("step_one", [1])
    q = g.node("Slice", [qkv, g.i64("q_start", [0]), g.i64("q_end", [hidden]), last])
    k = g.node("Slice", [qkv, g.i64("k_start", [hidden]), g.i64("k_end", [2 * hidden]),
                         g.i64("axes_2", [2]), one])
    v = g.node("Slice", [qkv, g.i64("v_start", [2 * hidden]),
                         g.i64("v_end", [INT64_MAX]), last, one])
    split_shape = g.i64("heads_shape", [batch, seq, heads, hd])
    qh = _split_heads(g, q, split_shape)
    kh = _split_heads(g, k, split_shape)
    vh = _split_heads(g, v, split_shape)
    kt = g.node("Transpose", [kh], perm=[0, 1, 3, 2])
    scores = g.node("MatMul", [qh, kt])
    scores = g.node("Mul", [scores, g.f32("attn_scale", [1.0 / math.sqrt(hd)])])
    mask = g.init("causal_mask", np.tril(np.ones((seq, seq), dtype=np.bool_)))
    scores = g.node("Where", [mask, scores, g.f32("masked_bias", -1e4)])
    probs = g.node("Softmax", [scores], axis=-1)
    ctx = g.node("Transpose", [g.node("MatMul", [probs, vh])], perm=[0, 2, 1, 3])
    ctx = g.node("Reshape", [ctx, g.i64("merge_shape", [batch, seq, hidden])])
    x1 = g.node("Add", [x, g.linear(ctx, hidden, hidden, "attn.c_proj")])
    h = g.layer_norm(x1, hidden, "ln_2")
    h = g.node("Gelu", [g.linear(h, hidden, mlp, "mlp.c_fc", gain=1.5)],
               approximate="tanh")
    g.node("Add", [x1, g.linear(h, mlp, hidden, "mlp.c_proj")], out="hidden")
    if vocab is not None:
        hf = g.layer_norm("hidden", hidden, "ln_f")
        wte_t = g.node("Transpose", [wte], perm=[1, 0])
        g.node("MatMul", [hf, wte_t], out="logits")
        g.output("logits", [batch, seq, vocab])
        inputs = {"input_ids": g.rng.integers(0, vocab, (batch, seq), dtype=np.int64)}
    else:
        inputs = {"hidden_states":
                  g.rng.standard_normal((batch, seq, hidden)).astype(np.float32)}
    g.output("hidden", [batch, seq, hidden])
    return g.make_model(20, build_gpt_block.__doc__), inputs


def build_opset11_ops(name="opset11_ops", seed=5):
    """Opset-11 attribute forms: Unsqueeze/Squeeze(axes attr), Slice (inputs,
    with steps), ReduceSum/ReduceMean/ReduceMax(axes attr), and Softmax with
    the pre-13 semantics (input coerced to 2-D at `axis`).  Also Concat,
    Transpose, Pow (exponent from a Constant node), Sqrt, Reciprocal, Exp, Log
    (of positive values), Sigmoid, Neg, Add, Cast(float->float), Identity."""
    g = GraphBuilder(name, seed)
    x = g.input("x", [2, 3, 4])
    two = g.const_node(2.0, np.float32)                     # rank-0 Constant
    s = g.node("Sigmoid", [x])
    p = g.node("Add", [g.node("Pow", [x, two]), g.f32("one", 1.0)])   # >= 1
    r = g.node("Reciprocal", [g.node("Sqrt", [p])])
    lg = g.node("Log", [p])
    ex = g.node("Exp", [g.node("Neg", [s])])
    c = g.node("Concat", [s, r, lg, ex], axis=2)            # [2,3,16]
    t = g.node("Transpose", [c], perm=[1, 0, 2])            # [3,2,16]
    u = g.node("Unsqueeze", [t], axes=[1, -1])              # [3,1,2,16,1]
    sq = g.node("Squeeze", [u], axes=[1, 4])                # [3,2,16]
    sl = g.node("Slice", [sq, g.i64("starts", [2]), g.i64("ends", [14]),
                          g.i64("axes", [2]), g.i64("steps", [2])])   # [3,2,6]
    g.node("ReduceSum", [sl], out="reduce_sum", axes=[2], keepdims=0)
    g.node("ReduceMean", [sq], out="reduce_mean", axes=[0, 2], keepdims=1)
    mx = g.node("ReduceMax", [sq], axes=[-1], keepdims=0)   # [3,2]
    g.node("Identity", [g.node("Cast", [mx], to=TensorProto.FLOAT)], out="reduce_max")
    # Opset < 13 Softmax: softmax over the flattened dims [axis:], i.e. over
    # 2*16 = 32 values per row here (not over axis 1 alone).
    g.node("Softmax", [g.node("Mul", [sq, g.f32("three", 3.0)])], out="softmax_legacy", axis=1)
    g.output("reduce_sum", [3, 2])
    g.output("reduce_mean", [1, 2, 1])
    g.output("reduce_max", [3, 2])
    g.output("softmax_legacy", [3, 2, 16])
    inputs = {"x": g.rng.standard_normal((2, 3, 4)).astype(np.float32)}
    return g.make_model(11, build_opset11_ops.__doc__), inputs


def build_rmsnorm_mlp(name="rmsnorm_mlp", seed=6):
    """Opset 18: RMSNorm written out (Pow, ReduceMean with axes input, Add,
    Sqrt, Reciprocal, Mul) -> SiLU MLP (MatMul, Sigmoid, Mul) -> standardize
    over axis 1 (ReduceSum with axes input, Div, Sub, Pow, ReduceMean, Sqrt,
    Div) -> Where(bool initializer cond [D], z, Neg(z)) -> Gather on axis 1
    with 2-D indices (one negative) + Reshape -> Slice with step -1 (flip,
    ends = INT64_MIN) -> Concat; ReduceMax with axes input; Slice with step 3
    + ReduceSum(keepdims=0) + Unsqueeze/Squeeze with axes inputs."""
    g = GraphBuilder(name, seed)
    b, s, d, f = 4, 8, 32, 64
    x = g.input("x", [b, s, d])
    last = g.i64("axes_last", [-1])
    ax1 = g.i64("axes_1", [1])
    two = g.f32("two", 2.0)
    ms = g.node("ReduceMean", [g.node("Pow", [x, two]), last], keepdims=1)   # [B,S,1]
    inv = g.node("Reciprocal", [g.node("Sqrt", [g.node("Add", [ms, g.f32("eps", 1e-6)])])])
    gamma = g.init("norm.weight", (1.0 + 0.1 * g.rng.standard_normal(d)).astype(np.float32))
    n = g.node("Mul", [g.node("Mul", [x, inv]), gamma])
    h = g.node("MatMul", [n, g.weight("w1", (d, f), gain=2.0)])
    h = g.node("Mul", [h, g.node("Sigmoid", [h])])                           # SiLU
    y = g.node("MatMul", [h, g.weight("w2", (f, d), gain=2.0)])              # [B,S,D]
    mean = g.node("Div", [g.node("ReduceSum", [y, ax1], keepdims=1), g.f32("seq_len", float(s))])
    cen = g.node("Sub", [y, mean])
    var = g.node("ReduceMean", [g.node("Pow", [cen, two]), ax1], keepdims=1)
    z = g.node("Div", [cen, g.node("Sqrt", [g.node("Add", [var, g.f32("eps2", 1e-5)])])])
    cond = g.init("sign_mask", g.rng.random(d) < 0.5)                       # bool [D]
    w = g.node("Where", [cond, z, g.node("Neg", [z])])                       # [B,S,D]
    gi = g.node("Gather", [w, g.i64("gather_idx", [[7, 0], [3, -1]])], axis=1)   # [B,2,2,D]
    gi = g.node("Reshape", [gi, g.i64("shape_b4d", [-1, 4, d])])            # [B,4,D]
    rev = g.node("Slice", [w, g.i64("rev_start", [-1]), g.i64("rev_end", [INT64_MIN]),
                           ax1, g.i64("rev_step", [-1])])                   # [B,S,D]
    g.node("Concat", [gi, rev], out="concat", axis=1)                        # [B,S+4,D]
    g.node("ReduceMax", ["concat", ax1], out="reduce_max", keepdims=0)      # [B,D]
    st = g.node("Slice", [w, g.i64("st_start", [1]), g.i64("st_end", [INT64_MAX]),
                          last, g.i64("st_step", [3])])                     # [B,S,11]
    rs = g.node("ReduceSum", [st, g.i64("axes_2", [2])], keepdims=0)        # [B,S]
    us = g.node("Unsqueeze", [rs, g.i64("axes_0_3", [0, 3])])               # [1,B,S,1]
    g.node("Squeeze", [us, g.i64("axes_0", [0])], out="strided_sum")        # [B,S,1]
    g.output("concat", [b, s + 4, d])
    g.output("reduce_max", [b, d])
    g.output("strided_sum", [b, s, 1])
    inputs = {"x": g.rng.standard_normal((b, s, d)).astype(np.float32)}
    return g.make_model(18, build_rmsnorm_mlp.__doc__), inputs


def build_linear_variants(name="linear_variants", seed=7):
    """Opset 13, two inputs: Gemm with transA=1, alpha=0.5, beta=2 and a [1,N]
    C; Gemm without C; Gemm transB=1 with a rank-0 C; batched MatMul with
    broadcasting ([2,1,4,8] x [3,8,5]); MatMul with a 1-D right operand;
    Softmax on a non-last axis; Flatten(axis=2)."""
    g = GraphBuilder(name, seed)
    a = g.input("a", [16, 8])
    bt = g.input("b", [2, 1, 4, 8])
    w1 = g.weight("w1", (16, 12))
    c1 = g.bias("c1", (1, 12))
    h = g.node("Gemm", [a, w1, c1], transA=1, alpha=0.5, beta=2.0)      # [8,12]
    h = g.node("Gemm", [h, g.weight("w2", (12, 6), gain=2.0)])           # [8,6]
    g.node("Gemm", [h, g.weight("w3", (5, 6), fan_in=6), g.f32("c3", 0.25)],
           out="gemm", transB=1)                                         # [8,5]
    bmm = g.node("MatMul", [bt, g.weight("w4", (3, 8, 5), fan_in=8, gain=2.0)])  # [2,3,4,5]
    g.node("Softmax", [bmm], out="softmax_axis1", axis=1)
    g.node("MatMul", [bt, g.weight("v", (8,))], out="matvec")            # [2,1,4]
    g.node("Flatten", [bt], out="flatten", axis=2)                       # [2,32]
    g.output("gemm", [8, 5])
    g.output("softmax_axis1", [2, 3, 4, 5])
    g.output("matvec", [2, 1, 4])
    g.output("flatten", [2, 32])
    inputs = {"a": g.rng.standard_normal((16, 8)).astype(np.float32),
              "b": g.rng.standard_normal((2, 1, 4, 8)).astype(np.float32)}
    return g.make_model(13, build_linear_variants.__doc__), inputs


MODELS = {
    "mlp": build_mlp,
    "cnn": build_cnn,
    "encoder": build_encoder,
    "gpt_block": build_gpt_block,
    "opset11_ops": build_opset11_ops,
    "rmsnorm_mlp": build_rmsnorm_mlp,
    "linear_variants": build_linear_variants,
}


# ---------------------------------------------------------------------------
# Running, checking, writing
# ---------------------------------------------------------------------------

def ort_run(model, inputs, optimized=False, threads=1):
    """Run a model (path or serialized bytes) with onnxruntime CPU.

    Returns {output name: array}."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimized
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, inputs)))


def _declared_shape(value_info):
    return [d.dim_value for d in value_info.type.tensor_type.shape.dim]


def verify_case(name, data, inputs, outputs):
    """Checks described in the module docstring on a serialized model;
    returns a list of problems."""
    problems = []
    model = onnx.load_from_string(data)
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:  # noqa: BLE001 - report any checker failure
        problems.append(f"checker: {e}")
    declared = {o.name: _declared_shape(o) for o in model.graph.output}
    opt = ort_run(data, inputs, optimized=True, threads=0)
    for oname, ref in outputs.items():
        tag = f"{name}:{oname}"
        if list(ref.shape) != declared[oname]:
            problems.append(f"{tag}: shape {list(ref.shape)} != declared {declared[oname]}")
        if ref.dtype != np.float32:
            problems.append(f"{tag}: dtype {ref.dtype}")
        if not np.all(np.isfinite(ref)):
            problems.append(f"{tag}: non-finite values")
            continue
        scale = float(np.max(np.abs(ref)))
        std = float(np.std(ref))
        uniq = len(np.unique(ref))
        if scale == 0 or std < 1e-3 * scale or uniq < min(ref.size, 4):
            problems.append(f"{tag}: degenerate (max|b|={scale:g}, std={std:g}, unique={uniq})")
        diff = float(np.max(np.abs(opt[oname].astype(np.float64) - ref)))
        rel = diff / max(scale, np.finfo(np.float32).tiny)
        extra = ""
        if "prob" in oname or "softmax" in oname:
            if "legacy" in oname:      # opset-11 Softmax(axis=1): rows are [axis:]
                flat = ref.reshape(ref.shape[0], -1)
            else:
                axis = 1 if oname.endswith("axis1") else -1
                flat = np.moveaxis(ref, axis, -1).reshape(-1, ref.shape[axis])
            spread = float(np.min(flat.max(axis=1) - flat.min(axis=1)))
            extra = f" min_row_spread={spread:.3g}"
            if spread < 0.02:
                problems.append(f"{tag}: softmax rows nearly uniform (spread {spread:g})")
        print(f"  {tag:32s} shape={list(ref.shape)} range=[{ref.min():.4g}, {ref.max():.4g}]"
              f" std={std:.4g}{extra} ort_opt_vs_ref_rel={rel:.2e}")
        if rel > 1e-5:
            problems.append(f"{tag}: optimized ORT differs from reference by {rel:.2e}")
    return problems


def write_case(outdir, name, model, inputs, verify=False, **save_kwargs):
    """Write OUTDIR/name/{model.onnx,inputs/,ref/}; return a manifest entry.

    save_kwargs go to onnx.save_model (e.g. save_as_external_data=True).
    The reference outputs are computed from the in-memory model (all data
    inline) before saving: onnxruntime cannot load a model whose Reshape
    shape lives in external data (its shape inference does not read it)."""
    mdir = os.path.join(outdir, name)
    os.makedirs(os.path.join(mdir, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(mdir, "ref"), exist_ok=True)
    model_path = os.path.join(mdir, "model.onnx")
    data = model.SerializeToString()
    outputs = ort_run(data, inputs)
    entry = {
        "name": name,
        "model": f"{name}/model.onnx",
        "opset": model.opset_import[0].version,
        "ir_version": model.ir_version,
        "ops": sorted({n.op_type for n in model.graph.node}),
        "description": " ".join((model.doc_string or "").split()),
        "inputs": [],
        "outputs": [],
    }
    for iname, arr in inputs.items():
        rel = f"{name}/inputs/{iname}.npy"
        np.save(os.path.join(outdir, rel), arr)
        entry["inputs"].append({"name": iname, "file": rel, "shape": list(arr.shape),
                                "dtype": str(arr.dtype)})
    for oname, arr in outputs.items():
        rel = f"{name}/ref/{oname}.npy"
        np.save(os.path.join(outdir, rel), arr)
        entry["outputs"].append({"name": oname, "file": rel, "shape": list(arr.shape),
                                 "dtype": str(arr.dtype)})
    onnx.save_model(model, model_path, **save_kwargs)  # (may modify model)
    if verify:
        problems = verify_case(name, data, inputs, outputs)
        entry["_problems"] = problems
    return entry


def write_manifest(outdir, entries, **extra):
    """Write OUTDIR/manifest.json (entries: list of write_case results)."""
    doc = {"format": 1, "generator": os.path.basename(sys.argv[0]), **extra,
           "models": [{k: v for k, v in e.items() if not k.startswith("_")}
                      for e in entries]}
    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", help="output directory (created if missing)")
    ap.add_argument("--only", nargs="+", choices=sorted(MODELS), metavar="NAME",
                    help="generate only these models (manifest lists only them)")
    ap.add_argument("--verify", action="store_true",
                    help="run the checker/sanity checks described above; exit 1 on problems")
    args = ap.parse_args(argv)

    os.makedirs(args.outdir, exist_ok=True)
    entries, problems = [], []
    for name in (args.only or list(MODELS)):
        model, inputs = MODELS[name]()
        entry = write_case(args.outdir, name, model, inputs, verify=args.verify)
        problems += entry.get("_problems", [])
        entries.append(entry)
        ins = ", ".join(f"{i['name']}{i['shape']}" for i in entry["inputs"])
        outs = ", ".join(f"{o['name']}{o['shape']}" for o in entry["outputs"])
        print(f"{name}: opset {entry['opset']}, inputs {ins} -> outputs {outs}")
    write_manifest(args.outdir, entries)
    print(f"wrote {len(entries)} models and manifest.json to {args.outdir}")
    if problems:
        print("PROBLEMS:\n  " + "\n  ".join(problems))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
