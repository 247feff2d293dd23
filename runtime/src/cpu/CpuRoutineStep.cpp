//===- CpuRoutineStep.cpp - opaque routines on the reference kernels ------===//
//
// Data movement copies raw elements of any dtype; float routines decode
// their inputs to FP32, run the reference kernel the interpreter runs
// (runtime/cpu/Kernels.h) and round the result once.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/CpuBackend.h"

#include "runtime/cpu/Kernels.h"

namespace mixprec::runtime {

using schema::DType;

Status CpuBackend::storeFloats(const OpaqueOp &op, const float *values) {
  const TensorDesc &d = module->tensors()[op.output];
  float bad = 0.0f;
  storeRun(d.dtype, tensorData(op.output), 0, 1, d.elements, values, bad); // float dtype
  return okStatus();
}

Status CpuBackend::runOpaque(const OpaqueOp &op) {
  if (op.kind == OpaqueKind::Transpose || op.kind == OpaqueKind::Slice ||
      op.kind == OpaqueKind::Concat || op.kind == OpaqueKind::Gather)
    return runDataMovement(op);
  return runFloatRoutine(op);
}

/// Copies raw elements; through scratch if the plan overlaps the output
/// with an input (the kernels need distinct buffers).
Status CpuBackend::runDataMovement(const OpaqueOp &op) {
  const std::vector<TensorDesc> &tensors = module->tensors();
  const TensorDesc &y = tensors[op.output];
  auto shapeOf = [&](size_t i) -> const cpu::Shape & { return tensors[op.inputs[i]].shape; };
  const size_t elemSize = dtypeSize(y.dtype);
  bool alias = false;
  for (int32_t t : op.inputs)
    alias |= overlaps(t, op.output);
  uint8_t *dst = tensorData(op.output);
  if (alias && !(dst = static_cast<uint8_t *>(scratch[5].bytes(y.bytes))))
    return outOfMemory(op.name, y.bytes);
  const void *x = tensorData(op.inputs[0]);
  switch (op.kind) {
  case OpaqueKind::Transpose:
    cpu::detail::transposeRaw(x, shapeOf(0), op.perm, dst, elemSize);
    break;
  case OpaqueKind::Slice:
    cpu::detail::sliceRaw(x, shapeOf(0), op.starts, op.steps, y.shape, dst, elemSize);
    break;
  case OpaqueKind::Concat: {
    std::vector<const void *> ins;
    std::vector<cpu::Shape> shapes;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      ins.push_back(tensorData(op.inputs[i]));
      shapes.push_back(shapeOf(i));
    }
    cpu::detail::concatRaw(ins, shapes, op.axis, dst, elemSize);
    break;
  }
  default: {
    const TensorDesc &idx = tensors[op.inputs[1]];
    const int64_t *indices = reinterpret_cast<const int64_t *>(tensorData(op.inputs[1]));
    if (idx.dtype == DType::I32) {
      int64_t *wide = static_cast<int64_t *>(scratch[1].bytes(idx.elements * 8));
      if (!wide)
        return outOfMemory(op.name, idx.elements * 8);
      const int32_t *narrow = reinterpret_cast<const int32_t *>(tensorData(op.inputs[1]));
      for (int64_t i = 0; i < idx.elements; ++i)
        wide[i] = narrow[i];
      indices = wide;
    }
    const int64_t dim = shapeOf(0)[op.axis];
    if (!cpu::detail::gatherRaw(x, shapeOf(0), indices, idx.shape, op.axis, dst, elemSize)) {
      int64_t badIndex = 0;
      for (int64_t i = 0; i < idx.elements; ++i)
        if (indices[i] < -dim || indices[i] >= dim) {
          badIndex = indices[i];
          break;
        }
      return Status(MIXPREC_EXECUTION_ERROR,
                    op.name + ": index " + std::to_string(badIndex) +
                        " is out of range for dim " + std::to_string(op.axis) + " of size " +
                        std::to_string(dim));
    }
    break;
  }
  }
  if (alias)
    std::memcpy(tensorData(op.output), dst, y.bytes);
  return okStatus();
}

/// Points `a` and `b` (inputs 0 and 1 of `op`, as FP32) at copies rounded
/// to TF32 in scratch[0] and scratch[1]; false when scratch runs out.
bool CpuBackend::roundGemmOperandsToTf32(const OpaqueOp &op, const float *&a,
                                         const float *&b) {
  a = tf32Copy(a, module->tensors()[op.inputs[0]].elements, scratch[0]);
  b = tf32Copy(b, module->tensors()[op.inputs[1]].elements, scratch[1]);
  return a && b;
}

/// FP32 in, the reference kernel, one rounding to the output dtype.
Status CpuBackend::runFloatRoutine(const OpaqueOp &op) {
  const std::vector<TensorDesc> &tensors = module->tensors();
  const TensorDesc &y = tensors[op.output];
  auto shapeOf = [&](size_t i) -> const cpu::Shape & { return tensors[op.inputs[i]].shape; };
  auto present = [&](size_t i) { return i < op.inputs.size() && op.inputs[i] >= 0; };
  auto input = [&](size_t i) { return floatOperand(op.inputs[i], scratch[i]); };
  float *result = scratch[5].floats(y.elements);
  if (!result)
    return outOfMemory(op.name, y.elements * 4);
  const float *x = input(0);
  if (!x)
    return outOfMemory(op.name, tensors[op.inputs[0]].elements * 4);
  switch (op.kind) {
  case OpaqueKind::Conv2d: {
    const float *w = input(1);
    const float *bias = present(2) ? input(2) : nullptr;
    if (!w || (present(2) && !bias))
      return outOfMemory(op.name, tensors[op.inputs[1]].elements * 4);
    // As the interpreter's TF32 GEMM operands: x and w, not the bias.
    if (op.tf32 && !roundGemmOperandsToTf32(op, x, w))
      return outOfMemory(op.name, tensors[op.inputs[0]].elements * 4);
    cpu::conv2d(x, shapeOf(0), w, shapeOf(1), bias, op.strides, op.pads, op.dilations,
                op.groups, result, y.shape);
    break;
  }
  case OpaqueKind::MaxPool2d:
    cpu::maxPool2d(x, shapeOf(0), op.kernel, op.strides, op.pads, op.dilations, result,
                   y.shape);
    break;
  case OpaqueKind::AvgPool2d:
    cpu::avgPool2d(x, shapeOf(0), op.kernel, op.strides, op.pads, op.countIncludePad, result,
                   y.shape, op.dilations);
    break;
  case OpaqueKind::Softmax:
    cpu::softmax(x, shapeOf(0), op.axis, result);
    break;
  case OpaqueKind::LogSoftmax:
    cpu::logSoftmax(x, shapeOf(0), op.axis, result);
    break;
  case OpaqueKind::LayerNorm: {
    const cpu::Shape &s = shapeOf(0);
    int64_t normalized = 1;
    for (size_t d = op.axis; d < s.size(); ++d)
      normalized *= s[d];
    const float *scale = present(1) ? input(1) : nullptr;
    const float *bias = present(2) ? input(2) : nullptr;
    if (!present(1)) {
      // No scale: ones, as the interpreter passes.
      float *ones = scratch[1].floats(normalized);
      if (!ones)
        return outOfMemory(op.name, normalized * 4);
      std::fill(ones, ones + normalized, 1.0f);
      scale = ones;
    }
    if (!scale || (present(2) && !bias))
      return outOfMemory(op.name, normalized * 4);
    cpu::layerNorm(x, s, op.axis, scale, bias, op.epsilon, result);
    break;
  }
  case OpaqueKind::RmsNorm: {
    const float *scale = present(1) ? input(1) : nullptr;
    if (present(1) && !scale)
      return outOfMemory(op.name, tensors[op.inputs[1]].elements * 4);
    cpu::rmsNorm(x, shapeOf(0), op.axis, scale, op.epsilon, result);
    break;
  }
  case OpaqueKind::BatchNorm: {
    const float *p[4];
    for (size_t i = 0; i < 4; ++i)
      if (!(p[i] = input(i + 1)))
        return outOfMemory(op.name, tensors[op.inputs[i + 1]].elements * 4);
    cpu::batchNormInference(x, shapeOf(0), p[0], p[1], p[2], p[3], op.epsilon, result);
    break;
  }
  case OpaqueKind::ReduceSum:
  case OpaqueKind::ReduceMean:
  case OpaqueKind::ReduceMax: {
    const cpu::ReduceOp kind = op.kind == OpaqueKind::ReduceSum    ? cpu::ReduceOp::Sum
                               : op.kind == OpaqueKind::ReduceMean ? cpu::ReduceOp::Mean
                                                                   : cpu::ReduceOp::Max;
    cpu::reduce(kind, x, shapeOf(0), op.axes, op.keepDims, result);
    break;
  }
  case OpaqueKind::Fp8Scale: {
    // The same function as the compiler and the interpreter.
    result[0] = num::fp8Scale(formatOf(op.fp8Format), x[0], op.margin);
    break;
  }
  case OpaqueKind::Matmul: {
    const float *b = input(1);
    if (!b)
      return outOfMemory(op.name, tensors[op.inputs[1]].elements * 4);
    if (op.tf32 && !roundGemmOperandsToTf32(op, x, b))
      return outOfMemory(op.name, tensors[op.inputs[0]].elements * 4);
    cpu::matmul(x, shapeOf(0), b, shapeOf(1), result, y.shape);
    break;
  }
  default:
    return Status(MIXPREC_INTERNAL, op.name + ": not a float routine");
  }
  return storeFloats(op, result);
}

} // namespace mixprec::runtime
