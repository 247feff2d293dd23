#!/usr/bin/env python3
"""Ops imported as compositions of existing mp ops, against onnxruntime.

Usage:
    run_composite.py --mixprec BIN --work DIR [-k SUBSTRING ...]

Each case is a small ONNX model of one op (Tile, Trilu, Pad, DepthToSpace,
SpaceToDepth, CastLike, Split, InstanceNormalization, GroupNormalization,
LayerNormalization's Mean/InvStdDev, the composite reductions, 1-D
Conv/MaxPool/AveragePool), and the N-D window ops (3-D Conv and pooling,
ConvTranspose in 1, 2 and 3-D, AveragePool's dilations, MaxPool's Indices)
in one of its attribute variants and opset forms. For every case:

  fp32   `BIN run` on the interpreter and on the runtime's CPU backend (JIT,
         fp32) match onnxruntime (CPU, FP32, graph optimizations off):
         max|a-b| / max|b| <= 1e-5 per output, same shape; integer outputs
         (MaxPool's Indices) exactly, at every precision.
  bf16/fp16
         `BIN compile --precision P -o m.mpk`, then `BIN run m.mpk` on the
         CPU backend: max_rel and cosine against onnxruntime within the
         bounds of precision_bounds.json (the README's bounds).

Then the bad-attribute cases: `BIN import` exits 1 with one line on stderr
that contains the expected text.

One line per check, then "N passed, N failed"; the exit status is 0 only if
nothing failed and at least one check ran.
"""

import argparse
import json
import os
import subprocess
import sys
import zlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
FLOAT = TensorProto.FLOAT


def model(nodes, inputs, outputs, opset, inits=()):
    graph = helper.make_graph(nodes, "composite", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset <= 17 else 10
    # The outputs are declared without a shape: ONNX's inference fills it in.
    m = onnx.shape_inference.infer_shapes(m)
    try:
        onnx.checker.check_model(m)
    except onnx.checker.ValidationError as e:
        # GroupNormalization-18 is deprecated (its scale and bias were per
        # group), but exporters wrote it and onnxruntime runs it.
        if "deprecated" not in str(e):
            raise
    return m


def vi(name, shape, dtype=FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def i64(name, values, shape=None):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)] if shape is None else shape,
                              values)


def f32(name, array):
    array = np.asarray(array, np.float32)
    return helper.make_tensor(name, FLOAT, array.shape, array.ravel().tolist())


def one(op, shape, opset, inputs=(), inits=(), out_shape=None, outputs=("y",), **attrs):
    """A model of one node reading x (and `inputs`, initializers) -> outputs;
    `out_shape` declares y's shape where ONNX cannot infer it."""
    node = helper.make_node(op, ["x"] + list(inputs), list(outputs), name="node", **attrs)
    outs = [vi(o, out_shape if i == 0 else None) for i, o in enumerate(outputs) if o]
    return model([node], [vi("x", shape)], outs, opset, inits)


RNG = np.random.default_rng(10)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


CASES = {}


def case(name, build):
    CASES[name] = build


# --- Tile -------------------------------------------------------------------
case("tile_2x3", lambda: one("Tile", [2, 3, 4], 13, ["r"], [i64("r", [2, 1, 3])]))
case("tile_ones", lambda: one("Tile", [2, 3], 6, ["r"], [i64("r", [1, 1])]))
# --- Trilu ------------------------------------------------------------------
case("trilu_upper", lambda: one("Trilu", [2, 4, 5], 14))
case("trilu_lower_k1", lambda: one("Trilu", [4, 5], 14, ["k"], [i64("k", [1], [])], upper=0))
case("trilu_upper_kneg", lambda: one("Trilu", [3, 5, 4], 14, ["k"], [i64("k", [-1], [])]))
case("trilu_lower_big_k", lambda: one("Trilu", [4, 4], 14, ["k"], [i64("k", [-9], [])],
                                      upper=0))
# --- Pad --------------------------------------------------------------------
for mode in ["constant", "reflect", "edge"]:
    case(f"pad_{mode}_2", lambda mode=mode: one("Pad", [2, 3, 5], 2, mode=mode,
                                                pads=[0, 1, 2, 0, 2, 1], value=1.5))
    case(f"pad_{mode}_11", lambda mode=mode: one(
        "Pad", [2, 3, 5], 11, ["pads"], [i64("pads", [0, 2, 1, 0, 1, 3])], mode=mode))
case("pad_constant_value_13", lambda: one(
    "Pad", [2, 3, 5], 13, ["pads", "cv"], [i64("pads", [1, 0, 0, 0, 2, 1]), f32("cv", [-2.5])]))
case("pad_negative_crop", lambda: one(
    "Pad", [3, 6], 13, ["pads"], [i64("pads", [-1, 2, 1, -3])]))
case("pad_axes_18", lambda: one(
    "Pad", [2, 3, 5], 18, ["pads", "", "axes"], [i64("pads", [1, 2, 2, 1]), i64("axes", [-1, 1])],
    mode="edge"))
case("pad_wrap_19", lambda: one(
    "Pad", [2, 3, 4], 19, ["pads"], [i64("pads", [0, 2, 3, 0, 1, 2])], mode="wrap"))
case("pad_reflect_4d_2", lambda: one("Pad", [1, 2, 4, 4], 2, mode="reflect",
                                     pads=[0, 0, 2, 1, 0, 0, 1, 3]))
# --- DepthToSpace / SpaceToDepth ---------------------------------------------
case("depth_to_space_dcr", lambda: one("DepthToSpace", [2, 8, 3, 2], 13, blocksize=2))
case("depth_to_space_crd", lambda: one("DepthToSpace", [1, 18, 2, 3], 13, blocksize=3,
                                       mode="CRD"))
case("depth_to_space_1", lambda: one("DepthToSpace", [1, 8, 2, 2], 1, blocksize=2))
case("space_to_depth_crd_28", lambda: one("SpaceToDepth", [1, 2, 4, 6], 28, blocksize=2,
                                          mode="CRD"))
case("space_to_depth", lambda: one("SpaceToDepth", [2, 3, 4, 6], 13, blocksize=2))
# --- BatchNormalization training_mode: the batch's statistics --------------


def batchnorm_training(opset, shape, **attrs):
    """BatchNormalization(training_mode=1) of x -> y, running_mean, running_var."""
    c = shape[1]
    gen = np.random.default_rng(7)
    inits = [f32("s", gen.standard_normal(c)), f32("b", gen.standard_normal(c)),
             f32("mean", gen.standard_normal(c)), f32("var", gen.random(c) + 0.5)]
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "mean", "var"],
                            ["y", "running_mean", "running_var"], name="node", training_mode=1,
                            **attrs)
    return model([node], [vi("x", shape)], [vi("y", shape), vi("running_mean", [c]),
                                            vi("running_var", [c])], opset, inits)


case("batchnorm_training_15", lambda: batchnorm_training(15, [2, 3, 4, 5]))
case("batchnorm_training_14_eps_momentum", lambda: batchnorm_training(
    14, [3, 4, 6], epsilon=1e-2, momentum=0.7))
case("batchnorm_training_2d", lambda: batchnorm_training(15, [8, 5]))
# --- Dropout: inference, or training with ratio 0; the mask all true -------
BOOL = TensorProto.BOOL


def dropout(opset, shape, inputs=(), inits=(), mask=BOOL, **attrs):
    """Dropout of x -> y, mask (BOOL from opset 10, FLOAT before)."""
    node = helper.make_node("Dropout", ["x"] + list(inputs), ["y", "mask"], name="node", **attrs)
    return model([node], [vi("x", shape)], [vi("y", shape), vi("mask", shape, mask)], opset,
                 inits)


case("dropout_mask_13", lambda: dropout(13, [2, 3, 4]))
case("dropout_training_ratio0_mask", lambda: dropout(
    13, [3, 5], ["r", "t"], [f32("r", np.float32(0.0)), helper.make_tensor("t", BOOL, [], [True])]))
# (Before opset 12 onnxruntime writes the mask all false, onnx's reference all
# true, as mixprec: tests/lit/cli/dropout-mask.test.)
# --- CastLike ---------------------------------------------------------------
case("castlike_same", lambda: model(
    [helper.make_node("CastLike", ["x", "t"], ["c"], name="node"),
     helper.make_node("Relu", ["c"], ["y"], name="relu")],
    [vi("x", [3, 4])], [vi("y", None)], 15, [f32("t", [0.0])]))


def castlike_int():
    """x + CastLike(int64 constant, x)."""
    nodes = [helper.make_node("CastLike", ["k", "x"], ["kf"], name="node"),
             helper.make_node("Add", ["x", "kf"], ["y"], name="add")]
    return model(nodes, [vi("x", [3, 4])], [vi("y", None)], 19,
                 [i64("k", [1, -2, 3, 7], [4])])


case("castlike_int_const", castlike_int)
# --- Split ------------------------------------------------------------------
case("split_attr_11", lambda: one("Split", [2, 7], 11, outputs=("y", "z"), axis=1,
                                  split=[3, 4]))
case("split_input_13", lambda: one("Split", [6, 3], 13, ["s"], [i64("s", [1, 2, 3])],
                                   outputs=("y", "z", "w")))
case("split_num_outputs_uneven_18", lambda: one("Split", [2, 7], 18, outputs=("y", "z", "w"),
                                                axis=-1, num_outputs=3))
case("split_equal_2", lambda: one("Split", [4, 6], 2, outputs=("y", "z"), axis=1))
# --- InstanceNormalization / GroupNormalization -------------------------------
IN_PARAMS = [f32("s", rand(4) + 1.0), f32("b", rand(4))]
case("instance_norm", lambda: one("InstanceNormalization", [2, 4, 5, 6], 6, ["s", "b"],
                                  IN_PARAMS, epsilon=1e-3))
case("instance_norm_3d", lambda: one("InstanceNormalization", [2, 4, 9], 6, ["s", "b"],
                                     IN_PARAMS))
GN18 = [f32("s", rand(3) + 1.0), f32("b", rand(3))]
GN21 = [f32("s", rand(6) + 1.0), f32("b", rand(6))]
case("group_norm_18", lambda: one("GroupNormalization", [2, 6, 4, 5], 18, ["s", "b"], GN18,
                                  [2, 6, 4, 5], num_groups=3, epsilon=1e-4))
case("group_norm_21", lambda: one("GroupNormalization", [2, 6, 4, 5], 21, ["s", "b"], GN21,
                                  [2, 6, 4, 5], num_groups=3))
case("group_norm_21_g1", lambda: one("GroupNormalization", [2, 6, 7], 21, ["s", "b"], GN21,
                                     [2, 6, 7], num_groups=1))


def group_norm_runtime_params():
    """GroupNormalization-18 whose per-group scale is computed (x-independent
    but not an initializer: Relu of a constant... as a graph input)."""
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], name="node",
                            num_groups=2)
    return model([node], [vi("x", [2, 4, 3]), vi("s", [2])], [vi("y", [2, 4, 3])], 18,
                 [f32("b", [0.5, -1.0])])


case("group_norm_18_runtime_scale", group_norm_runtime_params)
# --- LayerNormalization's optional outputs ------------------------------------
LN = [f32("g", rand(8) + 1.0), f32("beta", rand(8))]
case("layer_norm_stats", lambda: one("LayerNormalization", [2, 3, 8], 17, ["g", "beta"], LN,
                                     outputs=("y", "mean", "inv_std"), epsilon=1e-5))
case("layer_norm_stats_axis1", lambda: one(
    "LayerNormalization", [2, 3, 8], 17, ["g2"], [f32("g2", rand(3, 8))],
    outputs=("y", "mean", "inv_std"), axis=1))
case("layer_norm_mean_only", lambda: one("LayerNormalization", [4, 8], 17, ["g", "beta"], LN,
                                         outputs=("y", "mean")))
# --- Reductions -------------------------------------------------------------
for op in ["ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp",
           "ReduceMin"]:
    low = op[6:].lower()
    case(f"{low}_attr_13", lambda op=op: one(op, [3, 4, 5], 13, axes=[1], keepdims=1))
    case(f"{low}_attr_all_nokeep", lambda op=op: one(op, [3, 4, 5], 11, keepdims=0))
    case(f"{low}_input_18", lambda op=op: one(op, [3, 4, 5], 18, ["axes"],
                                              [i64("axes", [0, -1])], keepdims=0))
    case(f"{low}_noop_18", lambda op=op: one(op, [3, 4], 18, noop_with_empty_axes=1))
    case(f"{low}_empty_axes_18", lambda op=op: one(op, [3, 4], 18, ["axes"], [i64("axes", [])]))


# --- 1-D Conv and pooling -------------------------------------------------------
W1 = f32("w", rand(6, 2, 3) * 0.5)
B1 = f32("b", rand(6))
case("conv1d_basic", lambda: one("Conv", [2, 4, 10], 11, ["w", "b"], [f32("w", rand(6, 4, 3)),
                                                                       B1]))
case("conv1d_group_stride_dil", lambda: one("Conv", [2, 4, 11], 11, ["w", "b"], [W1, B1],
                                            group=2, strides=[2], dilations=[2], pads=[1, 2]))
case("conv1d_same_upper", lambda: one("Conv", [1, 2, 9], 11, ["w"], [f32("w", rand(3, 2, 4))],
                                      auto_pad="SAME_UPPER", strides=[2]))
case("maxpool1d", lambda: one("MaxPool", [2, 3, 11], 12, kernel_shape=[3], strides=[2],
                              pads=[1, 1]))
case("maxpool1d_dil_ceil", lambda: one("MaxPool", [1, 2, 12], 12, kernel_shape=[2], strides=[3],
                                       dilations=[2], ceil_mode=1))
case("avgpool1d", lambda: one("AveragePool", [2, 3, 10], 11, kernel_shape=[4], strides=[2],
                              pads=[1, 2], count_include_pad=1))
case("avgpool1d_same_lower", lambda: one("AveragePool", [1, 3, 9], 11, kernel_shape=[2],
                                         auto_pad="SAME_LOWER"))

# --- N-D window ops: 3-D Conv and pooling, ConvTranspose, AveragePool dilations --
def with_weights(op, shape, opset, w, b=None, **attrs):
    inits = [f32("w", w)] + ([f32("b", b)] if b is not None else [])
    return one(op, shape, opset, [i.name for i in inits], inits, **attrs)


case("conv3d_basic", lambda: with_weights("Conv", [1, 2, 5, 6, 4], 11, rand(4, 2, 3, 3, 3),
                                          rand(4), pads=[1, 1, 1, 1, 1, 1]))
case("conv3d_group_stride_dil", lambda: with_weights(
    "Conv", [2, 4, 7, 6, 8], 11, rand(6, 2, 3, 2, 3) * 0.5, rand(6), group=2, strides=[2, 1, 2],
    dilations=[1, 2, 1], pads=[1, 0, 1, 0, 1, 1]))
case("conv3d_same_lower", lambda: with_weights("Conv", [1, 3, 6, 5, 7], 11, rand(2, 3, 2, 3, 2),
                                               auto_pad="SAME_LOWER", strides=[2, 2, 2]))
case("convtranspose2d_basic", lambda: with_weights("ConvTranspose", [1, 3, 4, 5], 11,
                                                   rand(3, 2, 3, 3), rand(2)))
case("convtranspose2d_strides_pads_outpad", lambda: with_weights(
    "ConvTranspose", [2, 2, 3, 4], 11, rand(2, 3, 3, 2), rand(3), strides=[3, 2],
    pads=[1, 2, 0, 1], output_padding=[1, 1]))
case("convtranspose1d_group_dil", lambda: with_weights(
    "ConvTranspose", [2, 4, 7], 11, rand(4, 3, 3), rand(6), group=2, strides=[2],
    dilations=[2], pads=[1, 0]))
case("convtranspose3d", lambda: with_weights("ConvTranspose", [1, 2, 3, 4, 3], 11,
                                             rand(2, 2, 2, 3, 2), strides=[2, 1, 2]))
case("convtranspose2d_output_shape", lambda: with_weights(
    "ConvTranspose", [1, 1, 3, 3], 11, rand(1, 2, 3, 3), strides=[3, 2], output_shape=[10, 8]))
case("convtranspose2d_output_shape_upper", lambda: with_weights(
    "ConvTranspose", [1, 2, 3, 3], 11, rand(2, 2, 3, 3), strides=[3, 2], output_shape=[8, 6],
    auto_pad="SAME_UPPER"))
# Beyond the unpadded size (9, 9) by less than the stride: negative end pads.
case("convtranspose2d_output_shape_beyond", lambda: with_weights(
    "ConvTranspose", [1, 2, 3, 3], 11, rand(2, 2, 3, 3), rand(2), strides=[3, 3],
    output_shape=[10, 11]))
case("convtranspose2d_same_lower", lambda: with_weights(
    "ConvTranspose", [1, 2, 4, 3], 11, rand(2, 3, 4, 4), rand(3), strides=[2, 2],
    auto_pad="SAME_LOWER"))
case("convtranspose2d_depthwise_dil", lambda: with_weights(
    "ConvTranspose", [2, 4, 5, 5], 11, rand(4, 1, 3, 3), rand(4), group=4, dilations=[2, 2],
    pads=[1, 2, 2, 1]))
case("maxpool3d", lambda: one("MaxPool", [1, 2, 6, 7, 5], 12, kernel_shape=[2, 3, 2],
                              strides=[2, 2, 1], pads=[0, 1, 0, 1, 1, 0]))
case("maxpool3d_dil_ceil", lambda: one("MaxPool", [1, 2, 7, 6, 8], 12, kernel_shape=[2, 2, 2],
                                       dilations=[2, 1, 2], ceil_mode=1, strides=[2, 2, 2]))
case("avgpool3d_count_pad", lambda: one("AveragePool", [1, 2, 6, 5, 7], 11,
                                        kernel_shape=[3, 3, 3], pads=[1, 1, 1, 1, 1, 1],
                                        count_include_pad=1, strides=[2, 2, 2]))
case("avgpool3d_dil_ceil", lambda: one("AveragePool", [1, 2, 9, 8, 10], 19,
                                       kernel_shape=[2, 3, 2], dilations=[2, 2, 2], ceil_mode=1,
                                       strides=[3, 3, 3]))
case("avgpool2d_dilations", lambda: one("AveragePool", [1, 2, 9, 9], 19, kernel_shape=[3, 3],
                                        dilations=[2, 1], pads=[1, 1, 2, 0],
                                        count_include_pad=1))
case("avgpool1d_dilations", lambda: one("AveragePool", [1, 2, 11], 19, kernel_shape=[3],
                                        dilations=[2], strides=[2]))


def max_pool_indices(shape, **attrs):
    """MaxPool with both outputs: y (float) and i (int64 flat indices)."""
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], name="node", **attrs)
    return model([node], [vi("x", shape)],
                 [vi("y", None), vi("i", None, TensorProto.INT64)], 12)


case("maxpool_indices_2d", lambda: max_pool_indices([2, 3, 7, 6], kernel_shape=[3, 3],
                                                    strides=[2, 2], pads=[1, 1, 1, 1]))
case("maxpool_indices_2d_colmajor", lambda: max_pool_indices(
    [1, 2, 5, 7], kernel_shape=[2, 3], strides=[2, 1], storage_order=1, dilations=[2, 1]))
case("maxpool_indices_3d_colmajor", lambda: max_pool_indices(
    [1, 2, 4, 5, 3], kernel_shape=[2, 2, 2], storage_order=1, ceil_mode=1, strides=[2, 2, 2]))
case("maxpool_indices_1d", lambda: max_pool_indices([2, 2, 9], kernel_shape=[3], strides=[2],
                                                    pads=[1, 1]))

# --- Einsum -------------------------------------------------------------------


def einsum(equation, *shapes):
    names = ["x", "w"][:len(shapes)]
    node = helper.make_node("Einsum", names, ["y"], name="node", equation=equation)
    out = np.einsum(equation.replace(" ", ""), *[np.zeros(s) for s in shapes]).shape
    return model([node], [vi(n, s) for n, s in zip(names, shapes)], [vi("y", list(out))], 12)


for label, eq, shapes in [
        ("bmm", "bij,bjk->bik", ([2, 3, 4], [2, 4, 5])),
        ("attention_scores", "bhqd,bhkd->bhqk", ([2, 3, 4, 5], [2, 3, 6, 5])),
        ("attention_values", "bhqk,bhkd->bhqd", ([2, 3, 4, 6], [2, 3, 6, 5])),
        ("ellipsis_matmul", "...ij,...jk->...ik", ([2, 3, 4, 5], [2, 3, 5, 2])),
        ("ellipsis_broadcast", "...ij,...jk", ([2, 1, 4, 5], [1, 3, 5, 2])),
        ("matvec", "ij,j->i", ([4, 5], [5])),
        ("dot_rows", "bi,bi->b", ([3, 7], [3, 7])),
        ("outer", "i,j->ij", ([4], [3])),
        ("implicit_transpose_out", "ij,jk", ([3, 4], [4, 2])),
        ("sum_free_label", "bij,bjk->bk", ([2, 3, 4], [2, 4, 5])),
        ("transposed_output", "bij,bkj->bki", ([2, 3, 4], [2, 5, 4])),
        ("linear_like", "btd,od->bto", ([2, 3, 4], [6, 4])),
        ("transpose_one", "ijk->kji", ([2, 3, 4],)),
        ("sum_one", "ijk->j", ([2, 3, 4],)),
        ("spaces", "b i j, b j k -> b i k", ([2, 3, 4], [2, 4, 5]))]:
    case(f"einsum_{label}", lambda eq=eq, shapes=shapes: einsum(eq, *shapes))


# --- Resize / Upsample --------------------------------------------------------


def resize(opset, shape, out_shape, scales=None, sizes=None, roi=None, **attrs):
    """Resize of x with constant scales or sizes (and roi, empty unless given)."""
    inits, names = [], ["x"]
    if opset == 10:
        names.append("scales")
        inits.append(f32("scales", scales))
    elif opset == 11:  # roi and scales are required inputs, empty when unused
        names += ["roi", "scales"]
        inits += [f32("roi", np.zeros(0) if roi is None else roi), f32("scales", np.zeros(0) if scales is None else scales)]
        if sizes is not None:
            names.append("sizes")
            inits.append(i64("sizes", sizes))
    else:
        names += ["roi" if roi is not None else "", "scales" if scales is not None else ""]
        if roi is not None:
            inits.append(f32("roi", roi))
        if scales is not None:
            inits.append(f32("scales", scales))
        if sizes is not None:
            names.append("sizes")
            inits.append(i64("sizes", sizes))
    node = helper.make_node("Resize", names, ["y"], name="node", **attrs)
    return model([node], [vi("x", shape)], [vi("y", out_shape)], opset, inits)


R4 = [1, 2, 4, 5]
for label, build in [
        ("nearest_10_up", lambda: resize(10, R4, [1, 2, 8, 15], [1, 1, 2, 3])),
        ("nearest_10_down", lambda: resize(10, R4, [1, 2, 2, 3], [1, 1, 0.5, 0.6])),
        ("linear_10", lambda: resize(10, R4, [1, 2, 8, 7], [1, 1, 2, 1.5], mode="linear")),
        ("nearest_11_half_pixel", lambda: resize(11, R4, [1, 2, 8, 12], [1, 1, 2, 2.5])),
        ("linear_11_sizes", lambda: resize(11, R4, [1, 2, 6, 3], None, [1, 2, 6, 3], mode="linear",
                                           coordinate_transformation_mode="align_corners")),
        ("nearest_13_asym_floor", lambda: resize(
            13, R4, [1, 2, 6, 7], [1, 1, 1.5, 1.5], coordinate_transformation_mode="asymmetric",
            nearest_mode="floor")),
        ("nearest_13_align_ceil", lambda: resize(
            13, R4, [1, 2, 7, 3], None, [1, 2, 7, 3],
            coordinate_transformation_mode="align_corners",
            nearest_mode="ceil")),
        ("nearest_13_prefer_ceil_sizes", lambda: resize(
            13, R4, [1, 2, 2, 9], None, [1, 2, 2, 9], nearest_mode="round_prefer_ceil")),
        ("linear_13_half_pixel", lambda: resize(13, R4, [1, 2, 8, 10], [1, 1, 2, 2],
                                                mode="linear")),
        ("linear_13_down", lambda: resize(13, R4, [1, 2, 3, 3], None, [1, 2, 3, 3],
                                          mode="linear")),
        ("linear_13_align_corners", lambda: resize(
            13, R4, [1, 2, 7, 9], None, [1, 2, 7, 9], mode="linear",
            coordinate_transformation_mode="align_corners")),
        ("linear_13_pytorch", lambda: resize(
            13, R4, [1, 2, 1, 9], None, [1, 2, 1, 9], mode="linear",
            coordinate_transformation_mode="pytorch_half_pixel")),
        ("trilinear_13", lambda: resize(13, [1, 2, 3, 4, 5], [1, 2, 6, 8, 7], None,
                                        [1, 2, 6, 8, 7], mode="linear")),
        ("cubic_13", lambda: resize(13, R4, [1, 2, 8, 10], [1, 1, 2, 2], mode="cubic")),
        ("cubic_13_exclude", lambda: resize(13, R4, [1, 2, 7, 8], None, [1, 2, 7, 8],
                                            mode="cubic", exclude_outside=1, cubic_coeff_a=-0.5)),
        ("linear_18_axes", lambda: resize(18, R4, [1, 2, 8, 10], [2.0, 2.0], mode="linear",
                                          axes=[2, 3])),
        ("nearest_18_not_larger", lambda: resize(
            18, R4, [1, 2, 8, 10], None, [8, 12], axes=[2, 3],
            keep_aspect_ratio_policy="not_larger")),
        ("linear_19_symmetric", lambda: resize(
            19, R4, [1, 2, 6, 8], [1, 1, 1.5, 1.7], mode="linear",
            coordinate_transformation_mode="half_pixel_symmetric")),
        # antialias: the filter stretched by 1 / scale when downscaling.
        ("linear_18_antialias", lambda: resize(
            18, [1, 2, 9, 12], [1, 2, 4, 5], [1, 1, 0.5, 0.45], mode="linear", antialias=1)),
        ("linear_18_antialias_sizes", lambda: resize(
            18, [1, 2, 9, 12], [1, 2, 3, 5], None, [1, 2, 3, 5], mode="linear", antialias=1)),
        ("cubic_18_antialias", lambda: resize(
            18, [1, 2, 9, 12], [1, 2, 4, 5], [1, 1, 0.5, 0.45], mode="cubic", antialias=1)),
        ("cubic_18_antialias_sizes_exclude", lambda: resize(
            18, [1, 2, 9, 12], [1, 2, 3, 7], None, [3, 7], mode="cubic", antialias=1,
            axes=[2, 3], exclude_outside=1, cubic_coeff_a=-0.5)),
        ("cubic_18_antialias_up_down", lambda: resize(
            18, [1, 2, 9, 4], [1, 2, 4, 9], None, [1, 2, 4, 9], mode="cubic", antialias=1,
            coordinate_transformation_mode="align_corners")),
        # tf_crop_and_resize: a region of interest, extrapolated outside.
        ("linear_13_crop", lambda: resize(
            13, R4, [1, 2, 3, 3], None, [1, 2, 3, 3],
            [0, 0, 0.2, 0.3, 1, 1, 0.9, 0.8], mode="linear",
            coordinate_transformation_mode="tf_crop_and_resize")),
        ("linear_13_crop_extrapolate", lambda: resize(
            13, R4, [1, 2, 6, 7], None, [1, 2, 6, 7],
            [0, 0, -0.3, 0.4, 1, 1, 1.2, 1.5], mode="linear",
            coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=2.5)),
        ("cubic_13_crop_extrapolate", lambda: resize(
            13, R4, [1, 2, 5, 4], [1, 1, 1.25, 0.8],
            None, [0, 0, 0.1, -0.2, 1, 1, 1.3, 0.7], mode="cubic",
            coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-1.0)),
        ("nearest_18_crop_axes", lambda: resize(
            18, R4, [1, 2, 7, 6], None, [6, 7], [0.8, -0.2, 1.2, 0.6], axes=[3, 2],
            coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=7.0)),
        # (An axis that keeps its size but has a roi other than [0, 1]: onnxruntime
        # 1.2x resizes it otherwise than onnx's reference, which mixprec follows.)
        ("linear_11_crop_one", lambda: resize(
            11, R4, [1, 2, 1, 4], None, [1, 2, 1, 4], [0, 0, 0.25, 0.5, 1, 1, 0.75, 1.0],
            mode="linear", coordinate_transformation_mode="tf_crop_and_resize"))]:
    case(f"resize_{label}", build)


def upsample(opset, mode):
    inits, names, attrs = [], ["x"], {"mode": mode}
    if opset == 7:
        attrs["scales"] = [1.0, 1.0, 2.0, 3.0]
    else:
        names.append("scales")
        inits.append(f32("scales", [1.0, 1.0, 2.0, 3.0]))
    node = helper.make_node("Upsample", names, ["y"], name="node", **attrs)
    return model([node], [vi("x", R4)], [vi("y", [1, 2, 8, 15])], opset, inits)


for opset in [7, 9]:
    for mode in ["nearest", "linear"]:
        case(f"upsample_{opset}_{mode}", lambda opset=opset, mode=mode: upsample(opset, mode))


def bad(op, shape, opset, want, inputs=(), inits=(), outputs=("y",), **attrs):
    node = helper.make_node(op, ["x"] + list(inputs), list(outputs), name="bad_node", **attrs)
    graph = helper.make_graph([node], "bad", [vi("x", shape)], [vi(o, None) for o in outputs],
                              list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset <= 17 else 10
    return m, want


BAD = {
    "tile_repeats_rank": bad("Tile", [2, 3], 13, "input 'repeats' has 1 values, the input has "
                             "rank 2", ["r"], [i64("r", [2])]),
    "tile_negative": bad("Tile", [2, 3], 13, "input 'repeats' must hold values in [0, 65536]",
                         ["r"], [i64("r", [2, -1])]),
    "tile_dynamic": bad("Tile", [2, 3], 13, "input 'repeats' ('x') must be a compile-time "
                        "constant", ["x"]),
    "trilu_rank1": bad("Trilu", [5], 14, "input must have rank >= 2"),
    "trilu_upper_2": bad("Trilu", [3, 3], 14, "attribute 'upper'", upper=2),
    "pad_mode": bad("Pad", [2, 3], 13, "attribute 'mode' must be constant, reflect, edge, got "
                    "'mirror'", ["p"], [i64("p", [0, 1, 0, 1])], mode="mirror"),
    "pad_wrap_before_19": bad("Pad", [2, 3], 18, "attribute 'mode' must be constant, reflect, "
                              "edge, got 'wrap'", ["p"], [i64("p", [0, 1, 0, 1])], mode="wrap"),
    "pad_count": bad("Pad", [2, 3], 13, "'pads' has 3 values, want 4", ["p"],
                     [i64("p", [0, 1, 0])]),
    "pad_crop_too_much": bad("Pad", [2, 3], 13, "pads of axis 1 remove 4 elements of 3", ["p"],
                             [i64("p", [0, -2, 0, -2])]),
    "depth_to_space_mode": bad("DepthToSpace", [1, 4, 2, 2], 13, "attribute 'mode' must be DCR "
                               "or CRD", blocksize=2, mode="XYZ"),
    "depth_to_space_channels": bad("DepthToSpace", [1, 6, 2, 2], 13, "C (6) must be a multiple "
                                   "of blocksize^2 (4)", blocksize=2),
    "space_to_depth_blocksize": bad("SpaceToDepth", [1, 4, 2, 2], 13, "attribute 'blocksize' "
                                    "must be in [1, 4096], got 0", blocksize=0),
    "space_to_depth_multiple": bad("SpaceToDepth", [1, 4, 3, 2], 13, "H and W (3, 2) must be "
                                   "multiples of blocksize 2", blocksize=2),
    "group_norm_groups": bad("GroupNormalization", [1, 6, 4], 21, "attribute 'num_groups' (4) "
                             "must be positive and divide the channels (6)", ["s", "b"],
                             [f32("s", np.ones(6)), f32("b", np.ones(6))], num_groups=4),
    "group_norm_18_params": bad("GroupNormalization", [1, 6, 4], 18, "scale shape [6] must be "
                                "[3] (one value per group)", ["s", "b"],
                                [f32("s", np.ones(6)), f32("b", np.ones(6))], num_groups=3),
    "instance_norm_eps": bad("InstanceNormalization", [1, 2, 4], 6, "attribute 'epsilon' must "
                             "be positive", ["s", "b"], [f32("s", np.ones(2)),
                                                         f32("b", np.ones(2))], epsilon=0.0),
    "reduce_l2_axis": bad("ReduceL2", [2, 3], 13, "axis in attribute 'axes' 2 is out of range",
                          axes=[2]),
    "reduce_min_twice": bad("ReduceMin", [2, 3], 18, "input 'axes' names axis 1 twice",
                            ["a"], [i64("a", [1, -1])]),
    "layer_norm_stash": bad("LayerNormalization", [2, 4], 17, "attribute 'stash_type' must be 1",
                            ["g"], [f32("g", np.ones(4))], stash_type=0),
    "conv1d_kernel_len": bad("Conv", [1, 2, 8], 11, "attribute 'kernel_shape' must have 1 "
                             "values, got 2", ["w"], [f32("w", np.ones((3, 2, 3)))],
                             kernel_shape=[3, 3]),
    "maxpool1d_pads": bad("MaxPool", [1, 2, 8], 12, "attribute 'pads' must have 2 values "
                          "[begin, end]", kernel_shape=[2], pads=[1, 1, 1, 1]),
    "conv_rank6": bad("Conv", [1, 1, 2, 2, 2, 2], 11, "only 1-D to 3-D convolution (an input "
                      "of rank 3 to 5) is supported", ["w"], [f32("w", np.ones((1, 1, 1, 1, 1, 1)))]),
    "conv3d_strides": bad("Conv", [1, 1, 4, 4, 4], 11, "attribute 'strides' must have 3 values, "
                          "got 2", ["w"], [f32("w", np.ones((1, 1, 2, 2, 2)))], strides=[1, 1]),
    "convtranspose_output_padding": bad(
        "ConvTranspose", [1, 1, 3, 3], 11, "attribute 'output_padding' [2, 0] must hold values "
        "in [0, max(stride, dilation)) per dim", ["w"], [f32("w", np.ones((1, 1, 3, 3)))],
        strides=[2, 2], output_padding=[2, 0]),
    "convtranspose_output_shape": bad(
        "ConvTranspose", [1, 1, 3, 3], 11, "attribute 'output_shape' [0, 5] must hold sizes in "
        "[1, 2^31 - 1]", ["w"], [f32("w", np.ones((1, 1, 3, 3)))], output_shape=[0, 5]),
    "convtranspose_output_shape_len": bad(
        "ConvTranspose", [1, 1, 3, 3], 11, "attribute 'output_shape' must have 2 values, got "
        "[5]", ["w"], [f32("w", np.ones((1, 1, 3, 3)))], output_shape=[5]),
    "convtranspose_weight_rank": bad(
        "ConvTranspose", [1, 2, 3, 3], 11, "weight must have the input's rank 4 (C, M/group, "
        "k...), got [2, 1, 3]", ["w"], [f32("w", np.ones((2, 1, 3)))]),
    "convtranspose_groups": bad(
        "ConvTranspose", [1, 3, 3, 3], 11, "input channels 3 and output channels 4 must both "
        "divide by groups 2", ["w"], [f32("w", np.ones((3, 2, 3, 3)))], group=2),
    "convtranspose_channels": bad(
        "ConvTranspose", [1, 3, 3, 3], 11, "weight [2, 1, 3, 3] expects 2 input channels, got 3",
        ["w"], [f32("w", np.ones((2, 1, 3, 3)))]),
    "convtranspose_pads": bad(
        "ConvTranspose", [1, 1, 2, 2], 11, "pads [2, 2, 2, 2] leave no output of input "
        "[1, 1, 2, 2] and kernel [2, 2]", ["w"], [f32("w", np.ones((1, 1, 2, 2)))],
        pads=[2, 2, 2, 2]),
    "maxpool_storage_order": bad("MaxPool", [1, 2, 4, 4], 12, "attribute 'storage_order' must "
                                 "be 0 (row-major) or 1 (column-major), got 2",
                                 kernel_shape=[2, 2], storage_order=2),
    "maxpool3d_kernel_len": bad("MaxPool", [1, 2, 4, 4, 4], 12, "attribute 'kernel_shape' must "
                                "have 3 values, got 2", kernel_shape=[2, 2]),
    "avgpool3d_pads": bad("AveragePool", [1, 2, 4, 4, 4], 11, "attribute 'pads' must have 6 "
                          "values [begins..., ends...], got 4", kernel_shape=[2, 2, 2],
                          pads=[1, 1, 1, 1]),
    "avgpool3d_pads_kernel": bad("AveragePool", [1, 2, 4, 4, 4], 11, "pads [2, 0, 0, 0, 0, 0] "
                                 "must be smaller than kernel_shape [2, 2, 2]",
                                 kernel_shape=[2, 2, 2], pads=[2, 0, 0, 0, 0, 0]),
    "tile_1": bad("Tile", [2, 3], 1, "Tile before opset 6", ["t", "a"],
                  [f32("t", [3.0]), f32("a", [1.0])]),
    "einsum_three": bad("Einsum", [3, 3], 12, "Einsum of 3 operands is not supported",
                        ["x", "x"], equation="ij,jk,kl->il"),
    "upsample_1": bad("Upsample", [1, 1, 2, 2], 1, "Upsample before opset 7", height_scale=2.0,
                      width_scale=2.0),
    "einsum_diagonal": bad("Einsum", [3, 3], 12, "repeats label 'i' in one term: diagonals are "
                           "not supported", equation="ii->i"),
    "einsum_rank": bad("Einsum", [3, 3], 12, "equation term 'ijk' has 3 labels for an input of "
                       "rank 2", equation="ijk->i"),
    "einsum_output_label": bad("Einsum", [3, 3], 12, "output label 'z' is in no input",
                               equation="ij->z"),
    "einsum_sizes": bad("Einsum", [3, 4], 12, "label 'j' has sizes 4 and 3", ["x"],
                        equation="ij,jk->ik"),
    "batchnorm_training_mode": bad("BatchNormalization", [2, 3, 4], 15, "attribute "
                                   "'training_mode' must be 0 or 1, got 2",
                                   ["s", "b", "m", "v"],
                                   [f32(n, np.ones(3)) for n in ("s", "b", "m", "v")],
                                   training_mode=2),
    "batchnorm_inference_running_mean": bad(
        "BatchNormalization", [2, 3, 4], 15, "output #1 ('rm') is used, but only output #0 (Y) "
        "of BatchNormalization is supported", ["s", "b", "m", "v"],
        [f32(n, np.ones(3)) for n in ("s", "b", "m", "v")], outputs=("y", "rm")),
    "dropout_training": bad("Dropout", [2, 3], 13, "training_mode must be false: only "
                            "inference is supported (or ratio 0; with ratio 0.250000 the output "
                            "is random)", ["r", "t"],
                            [f32("r", np.float32(0.25)), helper.make_tensor("t", TensorProto.BOOL,
                                                                           [], [True])]),
    "dropout_training_default_ratio": bad("Dropout", [2, 3], 12, "with ratio 0.500000 the "
                                          "output is random", ["", "t"],
                                          [helper.make_tensor("t", TensorProto.BOOL, [], [1])]),
    "resize_dynamic_scales": bad("Resize", [1, 1, 2, 2], 13, "input 'scales' ('x') must be a "
                                 "compile-time constant", ["", "x"]),
    "resize_crop_no_roi": bad("Resize", [1, 1, 2, 2], 13, "input 'roi' is required with "
                              "coordinate_transformation_mode 'tf_crop_and_resize'",
                              ["", "s"], [f32("s", [1, 1, 2, 2])],
                              coordinate_transformation_mode="tf_crop_and_resize"),
    "resize_crop_roi_count": bad("Resize", [1, 1, 2, 2], 18, "input 'roi' has 4 values, want 2 "
                                 "(a start and an end per resized axis)", ["r", "s"],
                                 [f32("r", [0, 0, 1, 1]), f32("s", [2])], axes=[3],
                                 coordinate_transformation_mode="tf_crop_and_resize"),
    "resize_tf_half_pixel_for_nn": bad("Resize", [1, 1, 2, 2], 11, "'tf_half_pixel_for_nn' is "
                                       "not supported", ["r", "s"],
                                       [f32("r", []), f32("s", [1, 1, 2, 2])],
                                       coordinate_transformation_mode="tf_half_pixel_for_nn"),
    "resize_mode": bad("Resize", [1, 1, 2, 2], 13, "attribute 'mode' must be nearest, linear or "
                       "cubic, got 'area'", ["", "s"], [f32("s", [1, 1, 2, 2])], mode="area"),
    "resize_scales_count": bad("Resize", [1, 1, 2, 2], 13, "'scales' has 2 values, want 4",
                               ["", "s"], [f32("s", [2, 2])]),
}


def lowp_variant(m):
    """m with its float input x (last dim L) read through MatMul(x, I_L), or
    None when m has no such input."""
    x = next((i for i in m.graph.input if i.name == "x"), None)
    dims = [d.dim_value for d in x.type.tensor_type.shape.dim] if x else []
    if not dims or x.type.tensor_type.elem_type != FLOAT:
        return None
    low = onnx.ModelProto()
    low.CopyFrom(m)
    low.graph.input[list(m.graph.input).index(x)].name = "x_in"
    low.graph.node.insert(0, helper.make_node("MatMul", ["x_in", "eye"], ["x"], name="to_lowp"))
    low.graph.initializer.append(f32("eye", np.eye(dims[-1])))
    return low


def compare(got, want):
    """(max_rel, cosine) of got against want; raises on a shape mismatch."""
    if got.shape != want.shape:
        raise ValueError(f"shape {got.shape}, want {want.shape}")
    g = got.astype(np.float64).ravel()
    w = want.astype(np.float64).ravel()
    if not np.isfinite(g).all():
        raise ValueError("non-finite values")
    scale = max(float(np.abs(w).max(initial=0.0)), 1e-30)
    rel = float(np.abs(g - w).max(initial=0.0)) / scale
    denom = np.linalg.norm(g) * np.linalg.norm(w)
    cos = 1.0 if denom == 0 and np.array_equal(g, w) else float(g @ w / denom) if denom else 0.0
    return rel, cos


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mixprec", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("-k", action="append", default=[])
    args = ap.parse_args()
    with open(os.path.join(HERE, "precision_bounds.json")) as f:
        bounds = json.load(f)["bounds"]
    passed = failed = 0

    def report(ok, label, detail=""):
        nonlocal passed, failed
        print(f"{'ok  ' if ok else 'FAIL'} {label}" + (f": {detail}" if detail else ""))
        passed += ok
        failed += not ok

    def check(name, m, runs):
        """Runs model m (saved under name) with `runs` against onnxruntime."""
        d = os.path.join(args.work, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        onnx.save(m, path)
        gen = np.random.default_rng(zlib.crc32(name.encode()))
        feeds, flags_in = {}, []
        for i in m.graph.input:
            dims = [d.dim_value for d in i.type.tensor_type.shape.dim]
            v = gen.standard_normal(dims).astype(np.float32)
            if "logsum_" in name:  # ReduceLogSum: positive sums
                v = np.abs(v) + 0.1
            feeds[i.name] = v
            np.save(os.path.join(d, i.name + ".npy"), v)
            flags_in += ["--input", f"{i.name}={os.path.join(d, i.name + '.npy')}"]
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        names = [o.name for o in m.graph.output]
        want = dict(zip(names, sess.run(None, feeds)))
        for label, precision, flags in runs:
            out = os.path.join(d, label)
            model_arg = path
            if precision:
                mpk = os.path.join(d, f"{label}.mpk")
                r = run([args.mixprec, "compile", path, "--precision", precision, "-o", mpk])
                if r.returncode != 0:
                    report(False, f"{name} [{label}]", f"compile exit {r.returncode}: "
                           f"{r.stderr.strip()}")
                    continue
                model_arg = mpk
                flags = ["--backend", "cpu"]
            r = run([args.mixprec, "run", model_arg, "--output-dir", out] + flags_in + flags)
            if r.returncode != 0:
                report(False, f"{name} [{label}]", f"run exit {r.returncode}: {r.stderr.strip()}")
                continue
            for o in names:
                file = os.path.join(out, o + ".npy")
                try:
                    rel, cos = compare(np.load(file).astype(np.float32),
                                       want[o].astype(np.float32))
                except (OSError, ValueError) as e:
                    report(False, f"{name}:{o} [{label}]", str(e))
                    continue
                if want[o].dtype.kind == "i":
                    got = np.load(file)
                    ok = got.dtype == want[o].dtype and np.array_equal(got, want[o])
                elif precision:
                    b = bounds[precision]
                    ok = rel <= b["max_rel"] and cos >= b["min_cosine"]
                else:
                    ok = rel <= 1e-5
                report(ok, f"{name}:{o} [{label}]", f"max_rel {rel:.2e} cosine {cos:.7f}")

    runs = [("interpreter", None, ["--backend", "interpreter"]),
            ("cpu-fp32", None, ["--backend", "cpu", "--precision", "fp32"]),
            ("bf16", "bf16", []), ("fp16", "fp16", [])]
    for name, build in CASES.items():
        if args.k and not any(k in name for k in args.k):
            continue
        m = build()
        check(name, m, runs)
        # The same op on 16-bit data: x through a MatMul by the identity
        # first (a GEMM, so the mixed plans run it and what follows it in
        # bf16/fp16 rather than keeping the whole graph in FP32).
        # (Not for MaxPool's Indices: values that round to equal 16-bit
        # values tie, and the first of them wins.)
        low = lowp_variant(m) if "indices" not in name else None
        if low is not None:
            check(name + "_lowp", low, runs[2:])

    for name, (m, want) in BAD.items():
        if args.k and not any(k in name for k in args.k):
            continue
        d = os.path.join(args.work, "bad")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, name + ".onnx")
        onnx.save(m, path)
        r = run([args.mixprec, "import", path, "-o", os.path.join(d, name + ".mlir")])
        lines = r.stderr.strip().splitlines()
        ok = r.returncode == 1 and len(lines) == 1 and want in lines[0] and \
            "bad_node" in lines[0] and not os.path.exists(os.path.join(d, name + ".mlir"))
        report(ok, f"error {name}", f"exit {r.returncode}: {r.stderr.strip()}")

    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
