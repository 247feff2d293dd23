//===- Interpreter.cpp - reference execution of mp graphs ------------------===//
#include "compiler/Interpreter/Interpreter.h"

#include "common/Shapes.h"
#include "compiler/Interpreter/Evaluator.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "runtime/kernels/Kernels.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
namespace cpu = mixprec::runtime::cpu;

namespace mixprec::compiler {

HostTensor::Kind kindOfType(Type elementType) {
  if (elementType.isInteger(1))
    return HostTensor::Kind::Bool;
  if (isa<IntegerType>(elementType))
    return HostTensor::Kind::Int;
  return HostTensor::Kind::Float;
}

namespace {

/// Checks one runtime input against its declared type (`wide`: float
/// values in HostTensor::doubles, the FP64 mode).
bool checkInput(const TensorSpec &spec, const HostTensor &t, bool wide, std::string &error) {
  if (t.shape != spec.shape) {
    error = "input '" + spec.name + "' has shape " + shapes::formatShape(t.shape) +
            ", the graph expects " + shapes::formatShape(spec.shape);
    return false;
  }
  HostTensor::Kind want = kindOfType(spec.elementType);
  if (t.kind != want) {
    std::string expected;
    llvm::raw_string_ostream os(expected);
    os << spec.elementType;
    error = "input '" + spec.name + "' has the wrong element kind, the graph expects " +
            expected;
    return false;
  }
  size_t stored = t.kind == HostTensor::Kind::Float ? (wide ? t.doubles.size() : t.floats.size())
                  : t.kind == HostTensor::Kind::Int ? t.ints.size()
                                                    : t.bools.size();
  if (static_cast<int64_t>(stored) != t.numElements()) {
    error = "input '" + spec.name + "' holds " + std::to_string(stored) + " values for shape " +
            shapes::formatShape(t.shape);
    return false;
  }
  return true;
}

} // namespace

GraphSignature getSignature(func::FuncOp func) {
  GraphSignature sig;
  FunctionType type = func.getFunctionType();
  auto spec = [](Type t, StringAttr name, std::string fallback) {
    auto tensor = cast<RankedTensorType>(t);
    return TensorSpec{name ? name.getValue().str() : std::move(fallback),
                      {tensor.getShape().begin(), tensor.getShape().end()},
                      tensor.getElementType()};
  };
  for (unsigned i = 0; i < type.getNumInputs(); ++i)
    sig.inputs.push_back(spec(type.getInput(i),
                              func.getArgAttrOfType<StringAttr>(i, graph::GraphDialect::kNameAttr),
                              "input_" + std::to_string(i)));
  for (unsigned i = 0; i < type.getNumResults(); ++i)
    sig.outputs.push_back(
        spec(type.getResult(i),
             func.getResultAttrOfType<StringAttr>(i, graph::GraphDialect::kNameAttr),
             "output_" + std::to_string(i)));
  return sig;
}

func::FuncOp findEntryFunction(ModuleOp module, std::string &error) {
  auto funcs = llvm::to_vector(module.getOps<func::FuncOp>());
  for (func::FuncOp f : funcs)
    if (f.getSymName() == "main")
      return f;
  if (funcs.size() == 1)
    return funcs.front();
  error = funcs.empty() ? "the module has no function"
                        : "the module has several functions and none is named @main";
  return nullptr;
}

bool Interpreter::prepare(std::string &error) {
  for (Type t : func.getFunctionType().getInputs())
    if (!isa<RankedTensorType>(t) || !cast<RankedTensorType>(t).hasStaticShape()) {
      error = "graph inputs must be statically shaped tensors";
      return false;
    }
  for (Type t : func.getFunctionType().getResults())
    if (!isa<RankedTensorType>(t)) {
      error = "graph outputs must be ranked tensors";
      return false;
    }
  if (!func.getBody().hasOneBlock()) {
    error = "graph function must have one block";
    return false;
  }
  // Every op, fusion bodies included, must be one the interpreter can run.
  WalkResult walk = func.getBody().walk([&](Operation *op) {
    if (isa<func::ReturnOp>(op))
      return WalkResult::advance();
    if (!isa_and_nonnull<graph::GraphDialect>(op->getDialect()))
      error = describeOp(op) + ": unsupported op (the interpreter runs mp ops only)";
    else if (!hasReferenceSemantics(op))
      error = describeOp(op) + ": the interpreter has no reference semantics for this op "
                               "(registerReferenceExternalModels attaches them)";
    else
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  if (walk.wasInterrupted())
    return false;
  for (Operation &op : func.getBody().front()) {
    ElementsAttr value = constantValueOf(&op);
    if (!value)
      continue;
    HostTensor t;
    if (!decodeConstant(value, t, error, mode == Mode::Fp64)) {
      error = describeOp(&op) + ": " + error;
      return false;
    }
    constants[op.getResult(0)] = std::move(t);
  }
  prepared = true;
  return true;
}

bool Interpreter::run(const std::vector<HostTensor> &inputs, std::vector<HostTensor> &outputs,
                      std::string &error) {
  if (!prepared && !prepare(error))
    return false;
  GraphSignature sig = getSignature(func);
  if (inputs.size() != sig.inputs.size()) {
    error = "expected " + std::to_string(sig.inputs.size()) + " inputs, got " +
            std::to_string(inputs.size());
    return false;
  }
  Block &body = func.getBody().front();

  // Free each intermediate after its last use so peak memory stays near the
  // largest live set, not the sum of all tensors.
  llvm::DenseMap<Operation *, unsigned> position;
  unsigned index = 0;
  for (Operation &op : body)
    position[&op] = index++;
  llvm::DenseMap<Operation *, SmallVector<Value>> dyingAfter;
  auto noteLastUse = [&](Value v) {
    Operation *last = nullptr;
    for (Operation *user : v.getUsers())
      if (!last || position[user] > position[last])
        last = user;
    if (last && !isa<func::ReturnOp>(last))
      dyingAfter[last].push_back(v);
  };

  llvm::DenseMap<Value, HostTensor> env;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (!checkInput(sig.inputs[i], inputs[i], mode == Mode::Fp64, error))
      return false;
    HostTensor t = inputs[i];
    if (t.kind == HostTensor::Kind::Float && mode == Mode::Fp32)
      roundToStorage(sig.inputs[i].elementType, t.floats);
    env[arg] = std::move(t);
    noteLastUse(arg);
  }

  Evaluator evaluator(env, constants, mode == Mode::Fp64);
  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      outputs.clear();
      for (Value v : ret.getOperands()) {
        auto it = env.find(v);
        outputs.push_back(it != env.end() ? it->second : constants.find(v)->second);
      }
      return true;
    }
    if (!constantValueOf(&op) && failed(evaluator.execute(&op))) {
      error = describeOp(&op) + ": " + evaluator.error();
      return false;
    }
    if (observer) {
      SmallVector<const HostTensor *> results;
      for (Value result : op.getResults()) {
        auto it = env.find(result);
        results.push_back(it != env.end() ? &it->second : &constants.find(result)->second);
      }
      observer(&op, results);
    }
    for (Value result : op.getResults())
      noteLastUse(result);
    auto dying = dyingAfter.find(&op);
    if (dying != dyingAfter.end())
      for (Value v : dying->second)
        env.erase(v);
  }
  error = "graph function has no return";
  return false;
}

namespace {

/// Whether a double holds an integer that int64 and double both represent
/// exactly (|v| < 2^53).
bool isExactInteger(double v) { return std::trunc(v) == v && std::fabs(v) < 0x1p53; }

/// An FP64-mode input as the interpreter holds it, checking that integer
/// and bool values are integral and fit their element type.
bool toHostTensor(const TensorSpec &spec, const HostTensorF64 &in, HostTensor &out,
                  std::string &error) {
  out.kind = kindOfType(spec.elementType);
  out.shape = in.shape;
  if (out.kind == HostTensor::Kind::Float) {
    out.doubles = in.values;
    return true;
  }
  unsigned width = spec.elementType.getIntOrFloatBitWidth();
  for (auto [i, v] : llvm::enumerate(in.values)) {
    bool fits = isExactInteger(v);
    if (fits && out.kind == HostTensor::Kind::Bool)
      fits = v == 0 || v == 1;
    else if (fits && width < 64)
      fits = v >= -std::ldexp(1.0, width - 1) && v < std::ldexp(1.0, width - 1);
    if (!fits) {
      std::string type;
      llvm::raw_string_ostream(type) << spec.elementType;
      error = "input '" + spec.name + "' element " + std::to_string(i) + " (" +
              std::to_string(v) + ") is not a " + type + " value";
      return false;
    }
    if (out.kind == HostTensor::Kind::Bool)
      out.bools.push_back(v != 0);
    else
      out.ints.push_back(static_cast<int64_t>(v));
  }
  return true;
}

/// An FP64-mode output: floats as held, integers as exact doubles (an
/// integer of 2^53 or more has none: an error), bools as 0/1.
bool toHostTensorF64(const TensorSpec &spec, const HostTensor &in, HostTensorF64 &out,
                     std::string &error) {
  out.shape = in.shape;
  switch (in.kind) {
  case HostTensor::Kind::Float:
    out.values = in.doubles;
    return true;
  case HostTensor::Kind::Bool:
    out.values.assign(in.bools.begin(), in.bools.end());
    return true;
  case HostTensor::Kind::Int:
    for (auto [i, v] : llvm::enumerate(in.ints)) {
      if (v <= -(int64_t(1) << 53) || v >= (int64_t(1) << 53)) {
        error = "output '" + spec.name + "' element " + std::to_string(i) + " (" +
                std::to_string(v) + ") is not exactly representable as a double";
        return false;
      }
      out.values.push_back(static_cast<double>(v));
    }
    return true;
  }
  return false;
}

} // namespace

FailureOr<std::vector<HostTensorF64>> interpretF64(func::FuncOp func,
                                                   ArrayRef<HostTensorF64> inputs,
                                                   std::string &error) {
  // prepare() first: it checks the signature that getSignature reads.
  Interpreter interpreter(func, Interpreter::Mode::Fp64);
  if (!interpreter.prepare(error))
    return failure();
  GraphSignature sig = getSignature(func);
  if (inputs.size() != sig.inputs.size()) {
    error = "expected " + std::to_string(sig.inputs.size()) + " inputs, got " +
            std::to_string(inputs.size());
    return failure();
  }
  std::vector<HostTensor> hostInputs(inputs.size());
  for (auto [spec, in, host] : llvm::zip(sig.inputs, inputs, hostInputs))
    if (!toHostTensor(spec, in, host, error))
      return failure();
  std::vector<HostTensor> hostOutputs;
  if (!interpreter.run(hostInputs, hostOutputs, error))
    return failure();
  std::vector<HostTensorF64> outputs(hostOutputs.size());
  for (auto [spec, host, out] : llvm::zip(sig.outputs, hostOutputs, outputs))
    if (!toHostTensorF64(spec, host, out, error))
      return failure();
  return outputs;
}

} // namespace mixprec::compiler
