//===- Evaluator.cpp - the value environment of the interpreter -----------===//
#include "compiler/Interpreter/Evaluator.h"

#include "common/Shapes.h"
#include "common/numerics/Rounding.h"
#include "compiler/Interpreter/ReferenceOpInterface.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/StorageFormat.h"
#include "runtime/kernels/HostMemory.h"
#include "runtime/kernels/Kernels.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/raw_ostream.h"

#include <cassert>

using namespace mlir;
namespace cpu = mixprec::runtime::cpu;
namespace num = mixprec::numerics;

namespace mixprec::compiler {

std::string describeOp(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName().getStringRef();
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    os << " '" << name.getName().getValue() << "'";
  else
    os << " at " << op->getLoc();
  return s;
}

std::vector<int64_t> shapeOf(Value v) {
  ArrayRef<int64_t> s = cast<RankedTensorType>(v.getType()).getShape();
  return {s.begin(), s.end()};
}

Type elementTypeOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

void roundToStorage(Type elementType, std::vector<float> &values) {
  std::optional<num::Format> format = graph::storageFormatOf(elementType);
  if (!format || *format == num::Format::F32)
    return;
  num::roundArray(*format, values.data(), values.data(), values.size(),
                  graph::storeRoundOptions(*format));
}

ElementsAttr constantValueOf(Operation *op) {
  Attribute value;
  if (!op->hasTrait<OpTrait::ConstantLike>() || !matchPattern(op, m_Constant(&value)))
    return nullptr;
  return dyn_cast<ElementsAttr>(value);
}

namespace {

/// The values of a float constant as doubles, widened exactly from its dtype.
std::vector<double> readWideConstant(DenseElementsAttr dense) {
  std::vector<double> values;
  values.reserve(dense.getNumElements());
  if (dense.getElementType().isF32()) {
    for (float v : dense.getValues<float>())
      values.push_back(v);
    return values;
  }
  for (APFloat v : dense.getValues<APFloat>()) {
    bool losesInfo = false;
    v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &losesInfo);
    values.push_back(v.convertToDouble());
  }
  return values;
}

} // namespace

bool decodeConstant(ElementsAttr attr, HostTensor &out, std::string &error, bool wide) {
  auto type = cast<RankedTensorType>(attr.getType());
  out.kind = kindOfType(type.getElementType());
  out.shape.assign(type.getShape().begin(), type.getShape().end());
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense) {
    error = "only dense constants are supported";
    return false;
  }
  switch (out.kind) {
  case HostTensor::Kind::Float:
    if (wide)
      out.doubles = readWideConstant(dense);
    else
      out.floats = graph::readFloatConstant(dense);
    return true;
  case HostTensor::Kind::Int:
    out.ints.reserve(dense.getNumElements());
    for (const APInt &v : dense.getValues<APInt>())
      out.ints.push_back(v.getSExtValue());
    return true;
  case HostTensor::Kind::Bool:
    out.bools.reserve(dense.getNumElements());
    for (bool v : dense.getValues<bool>())
      out.bools.push_back(v ? 1 : 0);
    return true;
  }
  return false;
}

uint64_t addBytes(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

uint64_t mulBytes(uint64_t a, uint64_t b) {
  uint64_t product;
  if (a == UINT64_MAX || b == UINT64_MAX || __builtin_mul_overflow(a, b, &product))
    return UINT64_MAX;
  return product;
}

uint64_t hostBytesOf(Type type, bool wide) {
  auto tensor = cast<RankedTensorType>(type);
  HostTensor::Kind kind = kindOfType(tensor.getElementType());
  uint64_t bytes = kind == HostTensor::Kind::Float ? (wide ? 8 : 4)
                   : kind == HostTensor::Kind::Int ? 8
                                                   : 1;
  for (int64_t d : tensor.getShape())
    if (d < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
      return UINT64_MAX;
  return bytes;
}

namespace {

uint64_t hostBytes(const HostTensor &t) {
  return t.floats.size() * sizeof(float) + t.doubles.size() * sizeof(double) +
         t.ints.size() * sizeof(int64_t) + t.bools.size();
}

/// What an op allocates besides its results: what its reference kernel
/// says (ReferenceOpInterface), plus TF32 copies of its operands. In the
/// FP64 mode (`wide`) the kernels' float scratch is double, twice as large,
/// and there are no TF32 copies.
uint64_t scratchBytesOf(Operation *op, bool wide) {
  uint64_t bytes = 0;
  if (auto reference = dyn_cast<ReferenceOpInterface>(op))
    bytes = reference.getScratchBytes();
  if (wide)
    return mulBytes(bytes, 2);
  if (graph::computesInTf32(op))
    for (Value v : op->getOperands())
      bytes = addBytes(bytes, hostBytesOf(v.getType()));
  return bytes;
}

} // namespace

bool hasReferenceSemantics(Operation *op) {
  return constantValueOf(op) || op->hasTrait<OpTrait::IsTerminator>() ||
         isa<graph::ElementwiseOpInterface, ReferenceOpInterface>(op);
}

//===----------------------------------------------------------------------===//
// Evaluator
//===----------------------------------------------------------------------===//

Evaluator::Evaluator(llvm::DenseMap<Value, HostTensor> &env,
                     const llvm::DenseMap<Value, HostTensor> &constants, bool wide)
    : env(env), constants(constants), wide(wide) {
  for (const auto &entry : constants)
    constantBytes += hostBytes(entry.second);
}

LogicalResult Evaluator::fail(std::string message) {
  lastError = std::move(message);
  return failure();
}

const HostTensor &Evaluator::get(Value v) const {
  auto it = env.find(v);
  return it != env.end() ? it->second : constants.find(v)->second;
}

int64_t Evaluator::numElementsOf(Value v) { return cpu::numElements(shapeOf(v)); }

void Evaluator::setFloat(Value result, std::vector<float> values) {
  assert(!wide && "an FP32 result in the FP64 mode");
  roundToStorage(elementTypeOf(result), values);
  env[result] = HostTensor::makeFloat(shapeOf(result), std::move(values));
}

void Evaluator::setFloat(Value result, std::vector<double> values) {
  assert(wide && "an FP64 result in the FP32 mode");
  HostTensor t;
  t.shape = shapeOf(result);
  t.doubles = std::move(values);
  env[result] = std::move(t);
}

void Evaluator::set(Value result, HostTensor tensor) { env[result] = std::move(tensor); }

const float *Evaluator::gemmOperand(Operation *gemm, Value v, std::vector<float> &scratch) const {
  if (!graph::computesInTf32(gemm))
    return floats(v);
  scratch = get(v).floats;
  for (float &x : scratch)
    x = num::roundToTf32(x);
  return scratch.data();
}

LogicalResult Evaluator::checkMemory(Operation *op) {
  uint64_t results = 0;
  for (Value v : op->getResults())
    results = addBytes(results, hostBytesOf(v.getType(), wide));
  uint64_t live = constantBytes;
  for (const auto &entry : env)
    live = addBytes(live, hostBytes(entry.second));
  const uint64_t need = addBytes(results, scratchBytesOf(op, wide));
  if (cpu::fitsInMemory(live, need))
    return success();
  std::string shapes;
  for (Value v : op->getResults()) {
    llvm::raw_string_ostream os(shapes);
    os << (shapes.empty() ? "" : ", ") << shapes::formatShape(shapeOf(v)) << " "
       << elementTypeOf(v);
  }
  return fail("needs " +
              (need == UINT64_MAX ? std::string("more than 2^64") : std::to_string(need)) +
              " bytes for its result (" + shapes + ")" + (need > results ? " and scratch" : "") +
              " beside " + std::to_string(live) + " bytes of live tensors, more than " +
              cpu::describeUsableMemory());
}

LogicalResult Evaluator::execute(Operation *op) {
  if (failed(checkMemory(op)))
    return failure();
  if (ElementsAttr value = constantValueOf(op)) {
    HostTensor t;
    std::string why;
    if (!decodeConstant(value, t, why, wide))
      return fail(why);
    set(op->getResult(0), std::move(t));
    return success();
  }
  if (isa<graph::ElementwiseOpInterface>(op))
    return evaluateElementwise(op, *this);
  if (auto reference = dyn_cast<ReferenceOpInterface>(op))
    return reference.evaluate(*this);
  return fail("the interpreter has no reference semantics for this op");
}

} // namespace mixprec::compiler
