//===- ElementwiseReference.cpp - element-wise ops by their ScalarFn ------===//
//
// An element-wise op names the scalar function it computes
// (ElementwiseOpInterface); this file maps each function to its CPU
// reference kernel. A new element-wise op with an existing function needs
// nothing here; a new function needs nothing either: the switch expands
// runtime/format/ScalarFns.def, whose eval column names the form.
// Every function is written once for float tensors held as T: float (the
// FP32 mode, FP32 arithmetic) or double (the FP64 mode, double arithmetic).
//
//===----------------------------------------------------------------------===//
#include "compiler/Interpreter/Evaluator.h"

#include "common/numerics/Rounding.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/StorageFormat.h"
#include "runtime/kernels/IntElementwise.h"
#include "runtime/kernels/Kernels.h"
#include "runtime/kernels/ScalarFunctions.h"

#include <cmath>

using namespace mlir;
namespace cpu = mixprec::runtime::cpu;
namespace scalar = mixprec::runtime::cpu::scalar;
namespace num = mixprec::numerics;
using mixprec::graph::ScalarFn;

namespace mixprec::compiler {
namespace {

/// Element `i` of `t` (floats held as T) as a double: exact for floats,
/// bools and the int64 values a model holds in practice (|x| < 2^53).
template <typename T> double elementAsDouble(const HostTensor &t, int64_t i) {
  switch (t.kind) {
  case HostTensor::Kind::Float:
    return floatStorage<T>(t)[i];
  case HostTensor::Kind::Int:
    return static_cast<double>(t.ints[i]);
  case HostTensor::Kind::Bool:
    return t.bools[i];
  }
  return 0;
}

/// result = kind(operand 0), element by element.
template <typename T> LogicalResult unary(Operation *op, cpu::UnaryOp kind, Evaluator &e) {
  Value in = op->getOperand(0), out = op->getResult(0);
  std::vector<T> r = e.alloc<T>(out);
  cpu::unary(kind, e.values<T>(in), r.data(), static_cast<int64_t>(r.size()));
  e.setFloat(out, std::move(r));
  return success();
}

/// result = operand 0 (kind) operand 1, broadcasting.
template <typename T> LogicalResult binary(Operation *op, cpu::BinaryOp kind, Evaluator &e) {
  Value a = op->getOperand(0), b = op->getOperand(1), out = op->getResult(0);
  std::vector<T> r = e.alloc<T>(out);
  cpu::binary(kind, e.values<T>(a), shapeOf(a), e.values<T>(b), shapeOf(b), r.data(),
              shapeOf(out));
  e.setFloat(out, std::move(r));
  return success();
}

/// result = condition ? lhs : rhs, broadcasting.
template <typename T> LogicalResult select(Operation *op, Evaluator &e) {
  Value c = op->getOperand(0), a = op->getOperand(1), b = op->getOperand(2),
        out = op->getResult(0);
  std::vector<T> r = e.alloc<T>(out);
  cpu::where(e.get(c).bools.data(), shapeOf(c), e.values<T>(a), shapeOf(a), e.values<T>(b),
             shapeOf(b), r.data(), shapeOf(out));
  e.setFloat(out, std::move(r));
  return success();
}

/// Converts between any element kinds: floats round to the result dtype
/// (in the FP64 mode they stay as they are), floats to integers truncate
/// toward zero (ONNX Cast), non-zero is true.
template <typename T> LogicalResult castElements(Operation *op, Evaluator &e) {
  const HostTensor &in = e.get(op->getOperand(0));
  Type to = elementTypeOf(op->getResult(0));
  HostTensor out;
  out.kind = kindOfType(to);
  out.shape = in.shape;
  int64_t n = in.numElements();
  auto valueAt = [&](int64_t i) { return elementAsDouble<T>(in, i); };
  switch (out.kind) {
  case HostTensor::Kind::Float: {
    std::vector<T> &values = floatStorage<T>(out);
    values.resize(n);
    for (int64_t i = 0; i < n; ++i)
      values[i] = static_cast<T>(valueAt(i));
    if constexpr (std::is_same_v<T, float>)
      roundToStorage(to, values);
    break;
  }
  case HostTensor::Kind::Int:
    out.ints.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      double v = valueAt(i);
      // ONNX leaves NaN/out-of-range casts undefined; refuse to invent a value.
      if (!std::isfinite(v) || std::fabs(v) >= 9.2e18)
        return e.fail("cannot cast non-finite or out-of-range value " + std::to_string(v) +
                      " to an integer");
      out.ints[i] = static_cast<int64_t>(std::trunc(v));
    }
    break;
  case HostTensor::Kind::Bool:
    out.bools.resize(n);
    for (int64_t i = 0; i < n; ++i)
      out.bools[i] = valueAt(i) != 0.0;
    break;
  }
  e.set(op->getResult(0), std::move(out));
  return success();
}

/// The values of `t` at every point of `outShape`, broadcast NumPy-style,
/// as doubles: exact for floats, bools and integers below 2^53.
template <typename T>
std::vector<double> broadcastValues(const HostTensor &t, const std::vector<int64_t> &outShape) {
  size_t rank = outShape.size();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = 0; i < t.shape.size(); ++i) {
    size_t d = t.shape.size() - 1 - i;
    if (t.shape[d] != 1)
      strides[rank - 1 - i] = stride;
    stride *= t.shape[d];
  }
  int64_t n = 1;
  for (int64_t d : outShape)
    n *= d;
  std::vector<double> out(n);
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t flat = 0; flat < n; ++flat) {
    out[flat] = elementAsDouble<T>(t, offset);
    for (size_t d = rank; d-- > 0;) {
      offset += strides[d];
      if (++index[d] < outShape[d])
        break;
      offset -= strides[d] * outShape[d];
      index[d] = 0;
    }
  }
  return out;
}

/// result = f(operands..., params...) at every point, from the operands'
/// exact values (f computes in T: FP32 as the CPU backend's instruction, or
/// double); a bool result is f != 0, a float one rounded once to its dtype
/// (FP32 mode). Predicates on integers compare them exactly (doubles hold
/// every |x| <= 2^53).
template <typename T, typename F> LogicalResult pointwise(Operation *op, Evaluator &e, F f) {
  Value out = op->getResult(0);
  std::vector<int64_t> outShape = shapeOf(out);
  std::vector<std::vector<double>> args;
  for (Value operand : op->getOperands())
    args.push_back(broadcastValues<T>(e.get(operand), outShape));
  SmallVector<float, 2> params = cast<graph::ElementwiseOpInterface>(op).getScalarParams();
  int64_t n = 1;
  for (int64_t d : outShape)
    n *= d;
  std::vector<double> point(args.size() + params.size());
  auto evalAt = [&](int64_t i) {
    for (size_t a = 0; a < args.size(); ++a)
      point[a] = args[a][i];
    for (size_t p = 0; p < params.size(); ++p)
      point[args.size() + p] = params[p];
    return f(point.data());
  };
  if (kindOfType(elementTypeOf(out)) == HostTensor::Kind::Bool) {
    HostTensor r;
    r.kind = HostTensor::Kind::Bool;
    r.shape = outShape;
    r.bools.resize(n);
    for (int64_t i = 0; i < n; ++i)
      r.bools[i] = evalAt(i) != 0.0;
    e.set(out, std::move(r));
    return success();
  }
  std::vector<T> r = e.alloc<T>(out);
  for (int64_t i = 0; i < n; ++i)
    r[i] = static_cast<T>(evalAt(i));
  e.setFloat(out, std::move(r));
  return success();
}

/// A float function of one operand, computed in T.
template <typename T, typename F> LogicalResult pointwise1(Operation *op, Evaluator &e, F f) {
  return pointwise<T>(op, e, [f](const double *x) {
    return static_cast<double>(f(static_cast<T>(x[0])));
  });
}

/// A float function of two operands (or an operand and a parameter), in T.
template <typename T, typename F> LogicalResult pointwise2(Operation *op, Evaluator &e, F f) {
  return pointwise<T>(op, e, [f](const double *x) {
    return static_cast<double>(f(static_cast<T>(x[0]), static_cast<T>(x[1])));
  });
}

/// A float function of three values, in T.
template <typename T, typename F> LogicalResult pointwise3(Operation *op, Evaluator &e, F f) {
  return pointwise<T>(op, e, [f](const double *x) {
    return static_cast<double>(
        f(static_cast<T>(x[0]), static_cast<T>(x[1]), static_cast<T>(x[2])));
  });
}

/// An op on integers (graph::computesOnIntegers), exactly as the runtime's
/// int_elementwise routine: operands widened to int64 (bools 0/1; pow's
/// float exponent as is), cpu::intElementwise, the result kept in its
/// dtype (i32: the low 32 bits; bool: != 0).
LogicalResult integerOp(Operation *op, Evaluator &e) {
  int64_t intOp = graph::intElementwiseOpOf(op);
  if (intOp < 0)
    return e.fail("has no integer form");
  std::vector<cpu::IntOperand> operands(op->getNumOperands());
  std::vector<std::vector<int64_t>> widened(op->getNumOperands());
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    const HostTensor &t = e.get(operand);
    operands[i].shape = t.shape;
    if (t.kind == HostTensor::Kind::Float) {
      // The kernel reads a float exponent as FP32: no FP64 form.
      if (e.computesInDouble())
        return e.fail("an integer op with a float operand is not supported in the FP64 mode");
      operands[i].floats = t.floats.data();
    } else if (t.kind == HostTensor::Kind::Int) {
      operands[i].ints = t.ints.data();
    } else {
      widened[i].assign(t.bools.begin(), t.bools.end());
      operands[i].ints = widened[i].data();
    }
  }
  Value out = op->getResult(0);
  HostTensor r;
  r.kind = kindOfType(elementTypeOf(out));
  r.shape = shapeOf(out);
  std::vector<int64_t> values(r.numElements());
  cpu::intElementwise(static_cast<cpu::IntOp>(intOp), operands.data(),
                      static_cast<int>(operands.size()), values.data(), r.shape);
  if (r.kind == HostTensor::Kind::Bool) {
    r.bools.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i)
      r.bools[i] = values[i] != 0;
  } else {
    if (elementTypeOf(out).isInteger(32))
      for (int64_t &v : values)
        v = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
    r.ints = std::move(values);
  }
  e.set(out, std::move(r));
  return success();
}

/// result = fp8(input * scale), saturating finite values; an inf or NaN
/// (or a NaN scale) is NaN. In the FP64 mode: input * scale in double, no
/// FP8 grid and no saturation.
template <typename T> LogicalResult quantize(Operation *op, Evaluator &e) {
  T scale = e.values<T>(op->getOperand(1))[0];
  Value out = op->getResult(0);
  std::vector<T> r(floatStorage<T>(e.get(op->getOperand(0))));
  if constexpr (std::is_same_v<T, float>)
    num::quantizeFp8Array(*graph::storageFormatOf(elementTypeOf(out)), r.data(), scale,
                          r.data(), r.size());
  else
    for (T &v : r)
      v *= scale;
  e.setFloat(out, std::move(r)); // FP32 mode: exact, already FP8 values
  return success();
}

/// result = input / scale.
template <typename T> LogicalResult dequantize(Operation *op, Evaluator &e) {
  T scale = e.values<T>(op->getOperand(1))[0];
  std::vector<T> r(floatStorage<T>(e.get(op->getOperand(0))));
  for (T &v : r)
    v /= scale;
  e.setFloat(op->getResult(0), std::move(r));
  return success();
}

// How the interpreter computes each form of ScalarFns.def's eval column:
// UNARY and BINARY call the kernels of runtime/kernels/Kernels.h (BINARY
// broadcasting), PRED compares the exact values as doubles, FN computes
// its formula in T, REF and REF_ONLY call their reference function above.
#define MP_REF_ARGS_1 [[maybe_unused]] double x = v[0];
#define MP_REF_ARGS_2 MP_REF_ARGS_1 [[maybe_unused]] double y = v[1];
#define MP_REF_ARGS_3 MP_REF_ARGS_2 [[maybe_unused]] double z = v[2];
#define MP_REF_PARAMS_1 auto x
#define MP_REF_PARAMS_2 auto x, auto y
#define MP_REF_PARAMS_3 auto x, auto y, auto z
#define MP_REF_UNARY(K) unary<T>(op, cpu::UnaryOp::K, e)
#define MP_REF_BINARY(K, ...) binary<T>(op, cpu::BinaryOp::K, e)
#define MP_REF_PRED(arity, ...)                                                                    \
  pointwise<T>(op, e, [](const double *v) { MP_REF_ARGS_##arity return double(__VA_ARGS__); })
#define MP_REF_FN(arity, ...)                                                                      \
  pointwise##arity<T>(op, e, [](MP_REF_PARAMS_##arity) { return __VA_ARGS__; })
#define MP_REF_REF(f, ...) f<T>(op, e)
#define MP_REF_REF_ONLY(f) f<T>(op, e)

/// evaluateElementwise with float tensors held as T: each function as
/// runtime/format/ScalarFns.def's eval column says.
template <typename T> LogicalResult evaluateAs(Operation *op, Evaluator &e) {
  switch (cast<graph::ElementwiseOpInterface>(op).getScalarFn()) {
#define MP_SCALAR_FN(Name, mnemonic, value, arity, opcode, cuda, cudaUlp, eval, ...)               \
  case ScalarFn::Name:                                                                             \
    return MP_REF_##eval;
#include "runtime/format/ScalarFns.def"
  }
  return e.fail("unknown scalar function");
}

#undef MP_REF_ARGS_1
#undef MP_REF_ARGS_2
#undef MP_REF_ARGS_3
#undef MP_REF_PARAMS_1
#undef MP_REF_PARAMS_2
#undef MP_REF_PARAMS_3
#undef MP_REF_UNARY
#undef MP_REF_BINARY
#undef MP_REF_PRED
#undef MP_REF_FN
#undef MP_REF_REF
#undef MP_REF_REF_ONLY

} // namespace

LogicalResult evaluateElementwise(Operation *op, Evaluator &e) {
  if (graph::computesOnIntegers(op))
    return integerOp(op, e);
  if (e.computesInDouble())
    return evaluateAs<double>(op, e);
  return evaluateAs<float>(op, e);
}

} // namespace mixprec::compiler
