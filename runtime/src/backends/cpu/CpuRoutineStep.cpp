//===- CpuRoutineStep.cpp - routine routines on the reference kernels ------===//
//
// Data movement copies raw elements of any dtype; float routines decode
// their inputs to FP32, run the reference kernel the interpreter runs
// (runtime/kernels/Kernels.h) and round the result once. Convolutions
// oneDNN takes (CpuDnnl.h) skip the decode: oneDNN's FP32 result of the
// operands as stored, then the same one rounding.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cpu/CpuBackend.h"

#include "common/numerics/BlockScaling.h"
#include "runtime/format/CudaErrorRecord.h"
#include "runtime/kernels/Attention.h"
#include "runtime/kernels/AttentionBlocked.h"
#include "runtime/kernels/Indexing.h"
#include "runtime/kernels/IntElementwise.h"
#include "runtime/kernels/Kernels.h"

#include <cstring>

namespace mixprec::runtime {

using schema::DType;

Status CpuBackend::storeFloats(const RoutineOp &op, const float *values) {
  const TensorDesc &d = module->tensors()[op.output];
  uint8_t *out = tensorData(op.output);
  // One rounding per element (a float dtype): slices over the threads give
  // the same bytes.
  forSlices(d.elements, [&](int64_t begin, int64_t n) {
    float bad = 0.0f;
    storeRun(d.dtype, out, begin, 1, n, values + begin, bad);
  });
  return okStatus();
}

Status CpuBackend::runRoutine(const RoutineOp &op) {
  switch (op.kind) {
  case RoutineKind::Transpose:
  case RoutineKind::Slice:
  case RoutineKind::Concat:
  case RoutineKind::Gather:
  case RoutineKind::GatherElements:
  case RoutineKind::GatherNd:
    return runDataMovement(op);
  case RoutineKind::ArgMax:
  case RoutineKind::ArgMin:
  case RoutineKind::TopK:
  case RoutineKind::CumSum:
  case RoutineKind::ScatterNd:
  case RoutineKind::MaxPoolIndices:
    return runIndexRoutine(op);
  case RoutineKind::IntElementwise:
    return runIntRoutine(op);
  case RoutineKind::AllReduce: {
    // The input's bytes, then the collective in place on the output.
    const TensorDesc &x = module->tensors()[op.inputs[0]];
    const TensorDesc &y = module->tensors()[op.output];
    uint8_t *out = tensorData(op.output);
    const uint8_t *in = tensorData(op.inputs[0]);
    if (out != in && y.bytes)
      std::memmove(out, in, y.bytes);
    return allReduceInPlace(op.name, out, static_cast<size_t>(x.elements),
                            static_cast<mixprec_dtype_t>(y.dtype), op.reduction, nullptr);
  }
  case RoutineKind::RankSlice: {
    const TensorDesc &y = module->tensors()[op.output];
    uint8_t *out = tensorData(op.output);
    const uint8_t *in = tensorData(op.inputs[0]);
    return rankSlice(op.name, op.world, y.bytes, [&](size_t offset) {
      if (y.bytes)
        std::memmove(out, in + offset, y.bytes);
      return okStatus();
    });
  }
  case RoutineKind::AllGather: {
    const TensorDesc &x = module->tensors()[op.inputs[0]];
    const TensorDesc &y = module->tensors()[op.output];
    uint8_t *out = tensorData(op.output);
    const uint8_t *in = tensorData(op.inputs[0]);
    return allGather(op.name, op.world, in, out, static_cast<size_t>(x.elements),
                     static_cast<mixprec_dtype_t>(y.dtype), nullptr, [&] {
                       if (y.bytes && out != in)
                         std::memmove(out, in, y.bytes);
                       return okStatus();
                     });
  }
  default:
    return runFloatRoutine(op);
  }
}

/// The i64 or i32 tensor `tensor` as int64 values, widened into `s` when
/// narrower; null when scratch runs out.
const int64_t *CpuBackend::indexOperand(int32_t tensor, Scratch &s) {
  const TensorDesc &d = module->tensors()[tensor];
  const uint8_t *data = tensorData(tensor);
  if (d.dtype == DType::I64)
    return reinterpret_cast<const int64_t *>(data);
  int64_t *wide = static_cast<int64_t *>(s.bytes(d.elements * 8));
  if (!wide)
    return nullptr;
  const int32_t *narrow = reinterpret_cast<const int32_t *>(data);
  for (int64_t i = 0; i < d.elements; ++i)
    wide[i] = narrow[i];
  return wide;
}

/// The execution error of a gather_elements, gather_nd or scatter_nd index
/// out of range.
Status CpuBackend::indexRangeError(const RoutineOp &op, const cpu::BadIndex &bad) {
  return Status(MIXPREC_EXECUTION_ERROR,
                indexOutOfRangeMessage(op.name, bad.value, /*withPosition=*/true, bad.position,
                                       bad.dim, bad.size));
}

/// Copies raw elements; through scratch if the plan overlaps the output
/// with an input (the kernels need distinct buffers).
Status CpuBackend::runDataMovement(const RoutineOp &op) {
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
  case RoutineKind::Transpose:
    cpu::detail::transposeRaw(x, shapeOf(0), op.perm, dst, elemSize);
    break;
  case RoutineKind::Slice:
    cpu::detail::sliceRaw(x, shapeOf(0), op.starts, op.steps, y.shape, dst, elemSize);
    break;
  case RoutineKind::Concat: {
    std::vector<const void *> ins;
    std::vector<cpu::Shape> shapes;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      ins.push_back(tensorData(op.inputs[i]));
      shapes.push_back(shapeOf(i));
    }
    cpu::detail::concatRaw(ins, shapes, op.axis, dst, elemSize);
    break;
  }
  case RoutineKind::GatherElements:
  case RoutineKind::GatherNd: {
    const TensorDesc &idx = tensors[op.inputs[1]];
    const int64_t *indices = indexOperand(op.inputs[1], scratch[1]);
    if (!indices)
      return outOfMemory(op.name, idx.elements * 8);
    cpu::BadIndex bad =
        op.kind == RoutineKind::GatherElements
            ? cpu::gatherElementsRaw(x, shapeOf(0), indices, idx.shape, op.axis, dst, elemSize)
            : cpu::gatherNdRaw(x, shapeOf(0), indices, idx.shape, op.batchDims, dst, elemSize);
    if (!bad.ok())
      return indexRangeError(op, bad);
    break;
  }
  default: {
    const TensorDesc &idx = tensors[op.inputs[1]];
    const int64_t *indices = indexOperand(op.inputs[1], scratch[1]);
    if (!indices)
      return outOfMemory(op.name, idx.elements * 8);
    const int64_t dim = shapeOf(0)[op.axis];
    if (!cpu::detail::gatherRaw(x, shapeOf(0), indices, idx.shape, op.axis, dst, elemSize)) {
      int64_t at = 0;
      while (at + 1 < idx.elements && indices[at] >= -dim && indices[at] < dim)
        ++at;
      return Status(
          MIXPREC_EXECUTION_ERROR,
          indexOutOfRangeMessage(op.name, indices[at], /*withPosition=*/false, at, op.axis, dim));
    }
    break;
  }
  }
  if (alias)
    std::memcpy(tensorData(op.output), dst, y.bytes);
  return okStatus();
}

/// arg_max, arg_min, topk, cumsum, scatter_nd and max_pool_indices on FP32 (float inputs, decoded
/// exactly) or int64 (i32/i64 inputs); index outputs are i64, values keep
/// the input dtype.
Status CpuBackend::runIndexRoutine(const RoutineOp &op) {
  const std::vector<TensorDesc> &tensors = module->tensors();
  const TensorDesc &x = tensors[op.inputs[0]], &y = tensors[op.output];
  const bool isFloat = isFloatDType(x.dtype);
  // The input as FP32 or int64; the results in scratch (the plan may place
  // the output over the input).
  const float *xf = isFloat ? floatOperand(op.inputs[0], scratch[0]) : nullptr;
  const int64_t *xi = isFloat ? nullptr : indexOperand(op.inputs[0], scratch[0]);
  int64_t *indices = static_cast<int64_t *>(scratch[4].bytes(y.elements * 8));
  void *values = scratch[5].bytes(y.elements * 8);
  if ((!xf && !xi) || !indices || !values)
    return outOfMemory(op.name, (x.elements + 2 * y.elements) * 8);
  float *vf = static_cast<float *>(values);
  int64_t *vi = static_cast<int64_t *>(values);
  switch (op.kind) {
  case RoutineKind::ArgMax:
  case RoutineKind::ArgMin: {
    const bool isMax = op.kind == RoutineKind::ArgMax;
    if (isFloat)
      cpu::argReduce(xf, x.shape, op.axis, isMax, op.selectLast, indices);
    else
      cpu::argReduce(xi, x.shape, op.axis, isMax, op.selectLast, indices);
    std::memcpy(tensorData(op.output), indices, y.bytes);
    return okStatus();
  }
  case RoutineKind::TopK:
    if (isFloat)
      cpu::topK(xf, x.shape, op.axis, op.k, op.largest, vf, indices);
    else
      cpu::topK(xi, x.shape, op.axis, op.k, op.largest, vi, indices);
    if (op.writesIndices) {
      std::memcpy(tensorData(op.output), indices, y.bytes);
      return okStatus();
    }
    break;
  case RoutineKind::MaxPoolIndices:
    // The loader checked a float input; the values are not kept.
    cpu::maxPool(xf, x.shape, op.window, vf, y.shape, indices, op.columnMajor);
    std::memcpy(tensorData(op.output), indices, y.bytes);
    return okStatus();
  case RoutineKind::CumSum:
    if (isFloat)
      cpu::cumSum(xf, x.shape, op.axis, op.exclusive, op.reverse, vf);
    else
      cpu::cumSum(xi, x.shape, op.axis, op.exclusive, op.reverse, vi);
    break;
  case RoutineKind::ScatterNd: {
    const TensorDesc &idx = tensors[op.inputs[1]];
    const int64_t *indices = indexOperand(op.inputs[1], scratch[1]);
    const float *uf = isFloat ? floatOperand(op.inputs[2], scratch[2]) : nullptr;
    const int64_t *ui = isFloat ? nullptr : indexOperand(op.inputs[2], scratch[2]);
    if (!indices || (!uf && !ui))
      return outOfMemory(op.name, (idx.elements + tensors[op.inputs[2]].elements) * 8);
    const auto reduction = static_cast<cpu::ScatterReduction>(op.scatterReduction);
    cpu::BadIndex bad =
        isFloat ? cpu::scatterNd(xf, x.shape, indices, idx.shape, uf, reduction, vf)
                : cpu::scatterNd(xi, x.shape, indices, idx.shape, ui, reduction, vi);
    if (!bad.ok())
      return indexRangeError(op, bad);
    break;
  }
  default:
    return Status(MIXPREC_INTERNAL, op.name + ": not an index routine");
  }
  if (isFloat)
    return storeFloats(op, vf);
  // Integer values in the input's dtype (i32 wraps as the sum would).
  if (y.dtype == DType::I64) {
    std::memcpy(tensorData(op.output), vi, y.bytes);
  } else {
    int32_t *out = reinterpret_cast<int32_t *>(tensorData(op.output));
    for (int64_t i = 0; i < y.elements; ++i)
      out[i] = static_cast<int32_t>(vi[i]);
  }
  return okStatus();
}

/// int_elementwise: every operand widened to int64 (bool as 0/1; pow's
/// float exponent decoded to FP32), the op in int64 (cpu::intElementwise,
/// the interpreter's function), the result stored in the output's dtype:
/// i32 keeps the low 32 bits (two's complement), bool is != 0.
Status CpuBackend::runIntRoutine(const RoutineOp &op) {
  const std::vector<TensorDesc> &tensors = module->tensors();
  const TensorDesc &y = tensors[op.output];
  cpu::IntOperand operands[3];
  const int count = static_cast<int>(op.inputs.size());
  for (int i = 0; i < count; ++i) {
    const TensorDesc &d = tensors[op.inputs[i]];
    operands[i].shape = d.shape;
    const uint8_t *data = tensorData(op.inputs[i]);
    if (isFloatDType(d.dtype)) {
      if (!(operands[i].floats = floatOperand(op.inputs[i], scratch[i])))
        return outOfMemory(op.name, d.elements * 4);
    } else if (d.dtype == DType::I64) {
      operands[i].ints = reinterpret_cast<const int64_t *>(data);
    } else {
      int64_t *wide = static_cast<int64_t *>(scratch[i].bytes(d.elements * 8));
      if (!wide)
        return outOfMemory(op.name, d.elements * 8);
      for (int64_t e = 0; e < d.elements; ++e)
        wide[e] = d.dtype == DType::I32 ? reinterpret_cast<const int32_t *>(data)[e]
                                        : static_cast<int64_t>(data[e] != 0);
      operands[i].ints = wide;
    }
  }
  // The result in scratch: the plan may place the output over an input.
  int64_t *values = static_cast<int64_t *>(scratch[5].bytes(y.elements * 8));
  if (!values)
    return outOfMemory(op.name, y.elements * 8);
  cpu::intElementwise(static_cast<cpu::IntOp>(op.intOp), operands, count, values, y.shape);
  uint8_t *out = tensorData(op.output);
  switch (y.dtype) {
  case DType::I64:
    std::memcpy(out, values, y.bytes);
    break;
  case DType::I32:
    for (int64_t i = 0; i < y.elements; ++i) {
      // The low 32 bits, as two's complement (no out-of-range conversion).
      const auto low = static_cast<uint32_t>(static_cast<uint64_t>(values[i]));
      std::memcpy(out + 4 * i, &low, 4);
    }
    break;
  default: // Bool
    for (int64_t i = 0; i < y.elements; ++i)
      out[i] = values[i] != 0 ? 1 : 0;
    break;
  }
  return okStatus();
}

/// Points `a` and `b` (inputs 0 and 1 of `op`, as FP32) at copies rounded
/// to TF32 in scratch[0] and scratch[1]; false when scratch runs out.
bool CpuBackend::roundGemmOperandsToTf32(const RoutineOp &op, const float *&a,
                                         const float *&b) {
  a = tf32Copy(a, module->tensors()[op.inputs[0]].elements, scratch[0]);
  b = tf32Copy(b, module->tensors()[op.inputs[1]].elements, scratch[1]);
  return a && b;
}

/// FP32 in, the reference kernel, one rounding to the output dtype.
Status CpuBackend::runFloatRoutine(const RoutineOp &op) {
  const std::vector<TensorDesc> &tensors = module->tensors();
  const TensorDesc &y = tensors[op.output];
  auto shapeOf = [&](size_t i) -> const cpu::Shape & { return tensors[op.inputs[i]].shape; };
  auto present = [&](size_t i) { return i < op.inputs.size() && op.inputs[i] >= 0; };
  auto input = [&](size_t i) { return floatOperand(op.inputs[i], scratch[i]); };
  float *result = scratch[5].floats(y.elements);
  if (!result)
    return outOfMemory(op.name, y.elements * 4);
  // A convolution on oneDNN (CpuDnnl.h): the operands as stored, its weight
  // packed at load; the FP32 result rounded once, as below. An FP32 output
  // that shares no bytes with the operands takes the result directly (the
  // rounding to FP32 is the copy storeFloats would make).
  const size_t index = static_cast<size_t>(&op - module->routines().data());
  if (dnnlConvs.handles(index)) {
    if (index < convEpilogues.size() && convEpilogues[index].kernelStep >= 0 &&
        convEpilogues[index].narrow) {
      // A BF16 or F16 output (CpuConvFusion.cpp): the FP32 result rounded
      // to its dtype as the step stores it and the kernel loads it, then the
      // kernel's instructions on it, each result rounded to that dtype
      // where the kernel rounds it (a + b, the operands in the kernel's
      // order, rounded where the Add is in that dtype; relu(v) of a value
      // of the dtype is one), stored as the kernel stores it: the kernel's
      // bits by construction, in one pass over the output (cache-sized
      // pieces, slices over the threads).
      const ConvEpilogue &e = convEpilogues[index];
      const DType dtype = y.dtype;
      const num::Format f = formatOf(dtype);
      const bool reluHere = e.reluInPool < 0;
      const void *bias = present(2) ? tensorData(op.inputs[2]) : nullptr;
      if (Status s =
              dnnlConvs.run(index, tensorData(op.inputs[0]), bias, result, nullptr, pool.get());
          !s.ok())
        return s.withContext(op.name + ": ");
      uint8_t *out = tensorData(e.output);
      const uint8_t *addend = e.addend >= 0 ? tensorData(e.addend) : nullptr;
      forSlices(tensors[e.output].elements, [&](int64_t begin, int64_t n) {
        constexpr int64_t kPiece = 512;
        alignas(64) float v[kPiece], a[kPiece];
        for (int64_t first = begin; first < begin + n; first += kPiece) {
          const int64_t m = std::min(kPiece, begin + n - first);
          const size_t count = static_cast<size_t>(m);
          num::roundArray(f, result + first, v, count, storeOptions(dtype));
          if (addend) {
            loadRun(dtype, addend, first, 1, m, a);
            if (e.addendFirst)
              for (int64_t i = 0; i < m; ++i)
                v[i] = a[i] + v[i];
            else
              for (int64_t i = 0; i < m; ++i)
                v[i] = v[i] + a[i];
            if (e.sumRounded)
              num::roundArray(f, v, v, count, storeOptions(dtype));
          }
          if (reluHere)
            cpu::unary(cpu::UnaryOp::Relu, v, v, m);
          float bad = 0.0f;
          storeRun(dtype, out, first, 1, m, v, bad);
        }
      });
      return okStatus();
    }
    // With the kernel after it (CpuConvFusion.cpp): into that kernel's
    // output, the addend added by oneDNN, then the kernel's ReLU in place.
    // Where that output shares bytes with an operand (the arena reuses a
    // dead input's) and oneDNN writes it while reading them (a plain dst),
    // elsewhere first: into the addend's own bytes where it dies here and
    // shares none with the operands (the sum in place: no copy of the
    // addend into dst), else through the result buffer; then the ReLU
    // copies it to the output.
    if (index < convEpilogues.size() && convEpilogues[index].kernelStep >= 0) {
      const ConvEpilogue &e = convEpilogues[index];
      const TensorDesc &o = tensors[e.output];
      float *out = reinterpret_cast<float *>(tensorData(e.output));
      const bool clash =
          overlaps(op.inputs[0], e.output) || (present(2) && overlaps(op.inputs[2], e.output));
      const bool direct = !clash || dnnlConvs.writesDstLast(index);
      float *addend = e.addend >= 0 ? reinterpret_cast<float *>(tensorData(e.addend)) : nullptr;
      const bool intoAddend = !direct && e.addendDies && !overlaps(op.inputs[0], e.addend) &&
                              !(present(2) && overlaps(op.inputs[2], e.addend));
      float *dst = direct ? out : intoAddend ? addend : result;
      const void *bias = present(2) ? tensorData(op.inputs[2]) : nullptr;
      // The ReLU as the convolution stores its result where it can
      // (appliesRelu: the same function per element).
      const bool relu = e.reluInPool < 0 && dnnlConvs.appliesRelu(index);
      if (Status s =
              dnnlConvs.run(index, tensorData(op.inputs[0]), bias, dst, addend, pool.get(), relu);
          !s.ok())
        return s.withContext(op.name + ": ");
      // The ReLU (and the copy) in slices over the threads (element-wise:
      // the same bits for any count); only the copy where the max pool after
      // or the convolution applies the ReLU.
      const bool reluDone = e.reluInPool >= 0 || relu;
      if (reluDone && dst == out)
        return okStatus();
      forSlices(o.elements, [&](int64_t begin, int64_t n) {
        if (reluDone)
          std::memcpy(out + begin, dst + begin, static_cast<size_t>(n) * 4);
        else
          cpu::unary(cpu::UnaryOp::Relu, dst + begin, out + begin, n);
      });
      return okStatus();
    }
    const bool direct = y.dtype == DType::F32 && !overlaps(op.inputs[0], op.output) &&
                        !(present(2) && overlaps(op.inputs[2], op.output));
    float *dst = direct ? reinterpret_cast<float *>(tensorData(op.output)) : result;
    const void *bias = present(2) ? tensorData(op.inputs[2]) : nullptr;
    if (Status s = dnnlConvs.run(index, tensorData(op.inputs[0]), bias, dst, nullptr, pool.get());
        !s.ok())
      return s.withContext(op.name + ": ");
    return direct ? okStatus() : storeFloats(op, result);
  }
  const float *x = input(0);
  if (!x)
    return outOfMemory(op.name, tensors[op.inputs[0]].elements * 4);
  switch (op.kind) {
  case RoutineKind::Conv2d:
  case RoutineKind::Conv:
  case RoutineKind::ConvTranspose: {
    const float *w = input(1);
    const float *bias = present(2) ? input(2) : nullptr;
    if (!w || (present(2) && !bias))
      return outOfMemory(op.name, tensors[op.inputs[1]].elements * 4);
    // As the interpreter's TF32 GEMM operands: x and w, not the bias.
    if (op.tf32 && !roundGemmOperandsToTf32(op, x, w))
      return outOfMemory(op.name, tensors[op.inputs[0]].elements * 4);
    if (op.kind == RoutineKind::ConvTranspose)
      cpu::convTranspose(x, shapeOf(0), w, shapeOf(1), bias, op.window, op.groups, result,
                         y.shape);
    else
      cpu::conv(x, shapeOf(0), w, shapeOf(1), bias, op.window, op.groups, result, y.shape);
    break;
  }
  case RoutineKind::MaxPool2d:
  case RoutineKind::MaxPool:
  case RoutineKind::AvgPool2d:
  case RoutineKind::AvgPool: {
    // Planes (batch x channels) in chunks over the threads: each output
    // depends on its plane alone, so the bits are one thread's.
    const cpu::Shape &is = shapeOf(0);
    const int64_t planes = is[0] * is[1];
    const int64_t inPlane = tensors[op.inputs[0]].elements / std::max<int64_t>(planes, 1);
    const int64_t outPlane = y.elements / std::max<int64_t>(planes, 1);
    const bool max = op.kind == RoutineKind::MaxPool2d || op.kind == RoutineKind::MaxPool;
    // The ReLU of the convolution before (ConvEpilogue::reluInPool) over
    // the pooled values: relu(max) is max(relu) bit for bit (a NaN, the
    // first in the taps' order, stays; a largest value <= 0 gives +0 either
    // way), over a quarter of the values.
    const bool relu = index < poolRelus.size() && poolRelus[index] != 0;
    auto reluOf = [&](float *values, int64_t n) {
      if (relu)
        cpu::unary(cpu::UnaryOp::Relu, values, values, n);
    };
    if (const uint8_t kept = keptLayouts[op.inputs[0]]; max && kept) {
      // Between convolutions kept channels-last (CpuConvFusion.cpp): rows
      // of output positions, all channels at once, into an FP32 output
      // directly; the output in that layout too where it is kept so (else
      // plain). Channels in blocks of B ([N, C/B, H, W, B]) are N C/B
      // channels-last images of B channels, and the plain layout of those
      // is the plain layout of the whole.
      cpu::Shape viewIn = is, viewOut = y.shape;
      if (kept != kChannelsLast) {
        viewIn = {is[0] * (is[1] / kept), kept, is[2], is[3]};
        viewOut = {y.shape[0] * (y.shape[1] / kept), kept, y.shape[2], y.shape[3]};
      }
      const int64_t rows = viewIn[0] * viewOut[2];
      const bool direct = y.dtype == DType::F32 && !overlaps(op.inputs[0], op.output);
      float *dst = direct ? reinterpret_cast<float *>(tensorData(op.output)) : result;
      const bool lastOut = keptLayouts[op.output] != 0;
      const int64_t parts = chunksOf(rows, y.elements),
                    row = y.elements / std::max<int64_t>(rows, 1);
      pool->run(parts, [&](int64_t i, int) {
        const int64_t first = rows * i / parts, end = rows * (i + 1) / parts;
        cpu::maxPool2dChannelsLast(x, viewIn, op.window, dst, viewOut, lastOut, first, end);
        if (lastOut) // the rows just written, while in cache
          reluOf(dst + first * row, (end - first) * row);
      });
      if (relu && !lastOut)
        forSlices(y.elements, [&](int64_t begin, int64_t n) { reluOf(dst + begin, n); });
      if (direct)
        return okStatus();
      break;
    }
    const int64_t chunks = chunksOf(planes, y.elements);
    auto chunk = [&](int64_t c, int) {
      const int64_t first = planes * c / chunks, end = planes * (c + 1) / chunks;
      if (first == end)
        return;
      cpu::Shape part = is, outPart = y.shape;
      part[0] = outPart[0] = 1;
      part[1] = outPart[1] = end - first;
      if (max) {
        cpu::maxPool(x + first * inPlane, part, op.window, result + first * outPlane, outPart);
        reluOf(result + first * outPlane, (end - first) * outPlane);
      } else
        cpu::avgPool(x + first * inPlane, part, op.window, op.countIncludePad,
                     result + first * outPlane, outPart);
    };
    pool->run(chunks, chunk); // (one chunk: on this thread)
    break;
  }
  case RoutineKind::Softmax:
    cpu::softmax(x, shapeOf(0), op.axis, result);
    break;
  case RoutineKind::LogSoftmax:
    cpu::logSoftmax(x, shapeOf(0), op.axis, result);
    break;
  case RoutineKind::LayerNorm: {
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
  case RoutineKind::RmsNorm: {
    const float *scale = present(1) ? input(1) : nullptr;
    if (present(1) && !scale)
      return outOfMemory(op.name, tensors[op.inputs[1]].elements * 4);
    cpu::rmsNorm(x, shapeOf(0), op.axis, scale, op.epsilon, result);
    break;
  }
  case RoutineKind::BatchNorm: {
    const float *p[4];
    for (size_t i = 0; i < 4; ++i)
      if (!(p[i] = input(i + 1)))
        return outOfMemory(op.name, tensors[op.inputs[i + 1]].elements * 4);
    cpu::batchNormInference(x, shapeOf(0), p[0], p[1], p[2], p[3], op.epsilon, result);
    break;
  }
  case RoutineKind::ReduceSum:
  case RoutineKind::ReduceMean:
  case RoutineKind::ReduceMax:
  case RoutineKind::ReduceProd: {
    const cpu::ReduceOp kind = op.kind == RoutineKind::ReduceSum    ? cpu::ReduceOp::Sum
                               : op.kind == RoutineKind::ReduceMean ? cpu::ReduceOp::Mean
                               : op.kind == RoutineKind::ReduceProd ? cpu::ReduceOp::Prod
                                                                   : cpu::ReduceOp::Max;
    cpu::reduce(kind, x, shapeOf(0), op.axes, op.keepDims, result);
    break;
  }
  case RoutineKind::Fp8Scale: {
    // The same function as the compiler and the interpreter.
    result[0] = num::fp8Scale(formatOf(op.fp8Format), x[0], op.margin);
    break;
  }
  case RoutineKind::BlockScale:
  case RoutineKind::BlockQuantize: {
    // numerics/BlockScaling.h, as the compiler and the interpreter.
    const num::BlockLayout layout = num::BlockLayout::of(shapeOf(0), op.blockRows, op.blockCols);
    if (op.kind == RoutineKind::BlockScale) {
      num::computeBlockScales(formatOf(op.fp8Format), static_cast<num::BlockRecipe>(op.blockRecipe),
                              op.margin, layout, x, result);
      break;
    }
    const float *scales = input(1);
    if (!scales)
      return outOfMemory(op.name, tensors[op.inputs[1]].elements * 4);
    num::blockQuantize(formatOf(op.fp8Format), layout, x, scales, result);
    break;
  }
  case RoutineKind::BlockScaledGemm: {
    // numerics::blockScaledGemm, as the compiler's interpreter; then the
    // bias and the epilogue in FP32 (storeFloats rounds once).
    const float *b = input(1), *sa = input(2), *sb = input(3);
    const float *bias = present(4) ? input(4) : nullptr;
    if (!b || !sa || !sb || (present(4) && !bias))
      return outOfMemory(op.name, tensors[op.inputs[1]].elements * 4);
    auto format = [&](size_t i) { return formatOf(tensors[op.inputs[i]].dtype); };
    num::blockScaledGemm(format(0), x, sa, op.blockRows, format(1), b, sb, op.bBlockRows,
                         op.blockCols, op.gemmM, op.gemmN, op.gemmK, result);
    if (bias)
      cpu::binary(cpu::BinaryOp::Add, result, y.shape, bias, shapeOf(4), result, y.shape);
    if (op.epilogue == 1)
      cpu::unary(cpu::UnaryOp::Relu, result, result, y.elements);
    if (op.epilogue == 2) // cuBLASLt's GELU epilogue, as the GEMM steps
      cpu::unary(cpu::UnaryOp::GeluTanh, result, result, y.elements);
    break;
  }
  case RoutineKind::Matmul: {
    const float *b = input(1);
    if (!b)
      return outOfMemory(op.name, tensors[op.inputs[1]].elements * 4);
    if (op.tf32 && !roundGemmOperandsToTf32(op, x, b))
      return outOfMemory(op.name, tensors[op.inputs[0]].elements * 4);
    cpu::matmul(x, shapeOf(0), b, shapeOf(1), result, y.shape);
    break;
  }
  case RoutineKind::Attention:
  case RoutineKind::AttentionGrad: {
    const bool grad = op.kind == RoutineKind::AttentionGrad;
    const size_t biasIndex = grad ? 6 : 3;
    const float *in[6] = {x, nullptr, nullptr, nullptr, nullptr, nullptr};
    // Operands 5 and 6 (dout, the gradient's bias) decode past the results'
    // scratch[5].
    auto decode = [&](size_t i) { return floatOperand(op.inputs[i], scratch[i < 5 ? i : i + 2]); };
    for (size_t i = 1; i < biasIndex; ++i)
      if (!(in[i] = decode(i)))
        return outOfMemory(op.name, tensors[op.inputs[i]].elements * 4);
    const float *bias = present(biasIndex) ? decode(biasIndex) : nullptr;
    if (present(biasIndex) && !bias)
      return outOfMemory(op.name, tensors[op.inputs[biasIndex]].elements * 4);
    const TensorDesc &value = tensors[op.inputs[2]];
    cpu::AttentionParams p = cpu::attentionShapeParams(shapeOf(0), shapeOf(1), value.shape);
    p.scale = op.attentionScale;
    p.causal = op.causal;
    // As the interpreter and the CUDA kernel: P in V's dtype for P.V.
    p.pRounding = value.dtype == DType::BF16  ? cpu::AttentionRounding::BF16
                  : value.dtype == DType::F16 ? cpu::AttentionRounding::FP16
                                              : cpu::AttentionRounding::None;
    const std::array<int64_t, 4> biasStrides =
        cpu::attentionBiasStrides(present(biasIndex) ? shapeOf(biasIndex) : cpu::Shape{});
    if (grad) {
      // The two gradients this call does not write go to scratch.
      float *g[3] = {nullptr, nullptr, nullptr};
      for (int i = 0; i < 3; ++i) {
        const int64_t n = tensors[op.inputs[i]].elements;
        g[i] = i == op.attentionGrad ? result : scratch[9 + i].floats(n);
        if (!g[i])
          return outOfMemory(op.name, n * 4);
      }
      cpu::attentionBackward(in[0], in[1], in[2], bias, biasStrides, p, in[3], in[4], in[5], g[0],
                             g[1], g[2]);
      break;
    }
    // The forward on the blocked kernel (online softmax, AttentionBlocked.h
    // says how far from the reference), its (batch, head, 32 query rows)
    // units split over the session's threads.
    float *out = result, *lse = nullptr;
    if (op.writesLse) {
      // The log-sum-exp call computes the output too (into scratch).
      const int64_t outElements = p.batch * p.heads * p.seqQ * p.valueDim;
      out = scratch[9].floats(outElements);
      lse = result;
      if (!out)
        return outOfMemory(op.name, outElements * 4);
    }
    if (Status s = runAttention(op, x, in[1], in[2], bias, biasStrides, p, out, lse); !s.ok())
      return s;
    break;
  }
  default:
    return Status(MIXPREC_INTERNAL, op.name + ": not a float routine");
  }
  return storeFloats(op, result);
}

Status CpuBackend::runAttention(const RoutineOp &op, const float *q, const float *k, const float *v,
                                const float *bias, const std::array<int64_t, 4> &biasStrides,
                                const cpu::AttentionParams &p, float *out, float *lse) {
  const int64_t units = cpu::attentionBlockedUnits(p);
  const size_t floats = cpu::attentionBlockedScratchFloats(p);
  // Its multiply-adds: under 64 x parallelPoints (about 50 us on one core)
  // on the calling thread alone. The e2e encoder's (2 x 4 heads, 16
  // queries and keys, head dim 16: 65536) took 13 us on one thread and 46
  // on two (an AVX2 EPYC VM: the parallel region cost more than it split).
  const int64_t work = p.batch * p.heads * p.seqQ * p.seqK * (p.headDim + p.valueDim);
  const int threads =
      work < 64 * parallelPoints ? 1 : static_cast<int>(std::min<int64_t>(pool->size(), units));
  // Every worker's: whichever of the pool's threads takes a chunk runs it.
  for (Worker &w : workers)
    if (!w.attention.floats(static_cast<int64_t>(floats)))
      return outOfMemory(op.name, static_cast<int64_t>(floats) * 4);
  // Contiguous units per chunk; a unit's rows depend on that unit alone.
  const int64_t chunks = threads > 1 ? std::min<int64_t>(units, int64_t(threads) * 4) : 1;
  pool->run(chunks, [&](int64_t chunk, int worker) {
    cpu::attentionBlocked(q, k, v, bias, biasStrides, p, out, lse, units * chunk / chunks,
                          units * (chunk + 1) / chunks, workers[worker].attention.data());
  });
  return okStatus();
}

} // namespace mixprec::runtime
