//===- ElementwiseReference.cpp - element-wise ops by their ScalarFn ------===//
//
// An element-wise op names the scalar function it computes
// (ElementwiseOpInterface); this file maps each function to its CPU
// reference kernel. A new element-wise op with an existing function needs
// nothing here; a new function needs one case (the switch is exhaustive).
//
//===----------------------------------------------------------------------===//
#include "compiler/Interpreter/Evaluator.h"

#include "common/numerics/Rounding.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/StorageFormat.h"
#include "runtime/cpu/Kernels.h"

#include <cmath>

using namespace mlir;
namespace cpu = mixprec::runtime::cpu;
namespace num = mixprec::numerics;
using mixprec::graph::ScalarFn;

namespace mixprec::compiler {
namespace {

/// result = kind(operand 0), element by element.
LogicalResult unary(Operation *op, cpu::UnaryOp kind, Evaluator &e) {
  Value in = op->getOperand(0), out = op->getResult(0);
  std::vector<float> r = e.allocFloats(out);
  cpu::unary(kind, e.floats(in), r.data(), static_cast<int64_t>(r.size()));
  e.setFloat(out, std::move(r));
  return success();
}

/// result = operand 0 (kind) operand 1, broadcasting.
LogicalResult binary(Operation *op, cpu::BinaryOp kind, Evaluator &e) {
  Value a = op->getOperand(0), b = op->getOperand(1), out = op->getResult(0);
  std::vector<float> r = e.allocFloats(out);
  cpu::binary(kind, e.floats(a), shapeOf(a), e.floats(b), shapeOf(b), r.data(), shapeOf(out));
  e.setFloat(out, std::move(r));
  return success();
}

/// result = condition ? lhs : rhs, broadcasting.
LogicalResult select(Operation *op, Evaluator &e) {
  Value c = op->getOperand(0), a = op->getOperand(1), b = op->getOperand(2),
        out = op->getResult(0);
  std::vector<float> r = e.allocFloats(out);
  cpu::where(e.get(c).bools.data(), shapeOf(c), e.floats(a), shapeOf(a), e.floats(b),
             shapeOf(b), r.data(), shapeOf(out));
  e.setFloat(out, std::move(r));
  return success();
}

/// Converts between any element kinds: floats round to the result dtype,
/// floats to integers truncate toward zero (ONNX Cast), non-zero is true.
LogicalResult castElements(Operation *op, Evaluator &e) {
  const HostTensor &in = e.get(op->getOperand(0));
  Type to = elementTypeOf(op->getResult(0));
  HostTensor out;
  out.kind = HostTensor::kindOf(to);
  out.shape = in.shape;
  int64_t n = in.numElements();
  // Gather every source element as double: exact for float32 and for the
  // int64 values a model casts in practice (|x| < 2^53).
  auto valueAt = [&](int64_t i) -> double {
    switch (in.kind) {
    case HostTensor::Kind::Float:
      return in.floats[i];
    case HostTensor::Kind::Int:
      return static_cast<double>(in.ints[i]);
    case HostTensor::Kind::Bool:
      return in.bools[i];
    }
    return 0;
  };
  switch (out.kind) {
  case HostTensor::Kind::Float:
    out.floats.resize(n);
    for (int64_t i = 0; i < n; ++i)
      out.floats[i] = static_cast<float>(valueAt(i));
    roundToStorage(to, out.floats);
    break;
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

/// result = fp8(input * scale), saturating finite values; an inf or NaN
/// (or a NaN scale) is NaN.
LogicalResult quantize(Operation *op, Evaluator &e) {
  float scale = e.floats(op->getOperand(1))[0];
  Value out = op->getResult(0);
  std::vector<float> r(e.get(op->getOperand(0)).floats);
  num::quantizeFp8Array(*graph::storageFormatOf(elementTypeOf(out)), r.data(), scale, r.data(),
                        r.size());
  e.setFloat(out, std::move(r)); // exact: already FP8 values
  return success();
}

/// result = input / scale.
LogicalResult dequantize(Operation *op, Evaluator &e) {
  float scale = e.floats(op->getOperand(1))[0];
  std::vector<float> r(e.get(op->getOperand(0)).floats);
  for (float &v : r)
    v /= scale;
  e.setFloat(op->getResult(0), std::move(r));
  return success();
}

} // namespace

LogicalResult evaluateElementwise(Operation *op, Evaluator &e) {
  switch (cast<graph::ElementwiseOpInterface>(op).getScalarFn()) {
  case ScalarFn::Add:
    return binary(op, cpu::BinaryOp::Add, e);
  case ScalarFn::Sub:
    return binary(op, cpu::BinaryOp::Sub, e);
  case ScalarFn::Mul:
    return binary(op, cpu::BinaryOp::Mul, e);
  case ScalarFn::Div:
    return binary(op, cpu::BinaryOp::Div, e);
  case ScalarFn::Pow:
    return binary(op, cpu::BinaryOp::Pow, e);
  case ScalarFn::Neg:
    return unary(op, cpu::UnaryOp::Neg, e);
  case ScalarFn::Relu:
    return unary(op, cpu::UnaryOp::Relu, e);
  case ScalarFn::Tanh:
    return unary(op, cpu::UnaryOp::Tanh, e);
  case ScalarFn::Sigmoid:
    return unary(op, cpu::UnaryOp::Sigmoid, e);
  case ScalarFn::Silu:
    return unary(op, cpu::UnaryOp::Silu, e);
  case ScalarFn::Exp:
    return unary(op, cpu::UnaryOp::Exp, e);
  case ScalarFn::Log:
    return unary(op, cpu::UnaryOp::Log, e);
  case ScalarFn::Sqrt:
    return unary(op, cpu::UnaryOp::Sqrt, e);
  case ScalarFn::Rsqrt:
    return unary(op, cpu::UnaryOp::Rsqrt, e);
  case ScalarFn::Erf:
    return unary(op, cpu::UnaryOp::Erf, e);
  case ScalarFn::Reciprocal:
    return unary(op, cpu::UnaryOp::Reciprocal, e);
  case ScalarFn::GeluErf:
    return unary(op, cpu::UnaryOp::GeluErf, e);
  case ScalarFn::GeluTanh:
    return unary(op, cpu::UnaryOp::GeluTanh, e);
  case ScalarFn::Select:
    return select(op, e);
  case ScalarFn::Cast:
    return castElements(op, e);
  case ScalarFn::Quantize:
    return quantize(op, e);
  case ScalarFn::Dequantize:
    return dequantize(op, e);
  }
  return e.fail("unknown scalar function");
}

} // namespace mixprec::compiler
