//===- Interpreter.cpp - reference execution of mp graphs ------------------===//
#include "compiler/Interpreter/Interpreter.h"

#include "compiler/Interpreter/Evaluator.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"
#include "runtime/cpu/Kernels.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cpu = mixprec::runtime::cpu;

namespace mixprec::compiler {

int64_t HostTensor::numElements() const { return cpu::numElements(shape); }

HostTensor HostTensor::makeFloat(std::vector<int64_t> shape, std::vector<float> values) {
  HostTensor t;
  t.shape = std::move(shape);
  t.floats = std::move(values);
  return t;
}

HostTensor::Kind HostTensor::kindOf(Type elementType) {
  if (elementType.isInteger(1))
    return Kind::Bool;
  if (isa<IntegerType>(elementType))
    return Kind::Int;
  return Kind::Float;
}

namespace {

/// Checks one runtime input against its declared type.
bool checkInput(const TensorSpec &spec, const HostTensor &t, std::string &error) {
  if (t.shape != spec.shape) {
    error = "input '" + spec.name + "' has shape " + graph::formatShape(t.shape) +
            ", the graph expects " + graph::formatShape(spec.shape);
    return false;
  }
  HostTensor::Kind want = HostTensor::kindOf(spec.elementType);
  if (t.kind != want) {
    std::string expected;
    llvm::raw_string_ostream os(expected);
    os << spec.elementType;
    error = "input '" + spec.name + "' has the wrong element kind, the graph expects " +
            expected;
    return false;
  }
  size_t stored = t.kind == HostTensor::Kind::Float ? t.floats.size()
                  : t.kind == HostTensor::Kind::Int ? t.ints.size()
                                                    : t.bools.size();
  if (static_cast<int64_t>(stored) != t.numElements()) {
    error = "input '" + spec.name + "' holds " + std::to_string(stored) +
            " values for shape " + graph::formatShape(t.shape);
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
    if (!decodeConstant(value, t, error)) {
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
    if (!checkInput(sig.inputs[i], inputs[i], error))
      return false;
    HostTensor t = inputs[i];
    if (t.kind == HostTensor::Kind::Float)
      roundToStorage(sig.inputs[i].elementType, t.floats);
    env[arg] = std::move(t);
    noteLastUse(arg);
  }

  Evaluator evaluator(env, constants);
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

} // namespace mixprec::compiler
