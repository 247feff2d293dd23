//===- Autodiff.cpp - --mp-autodiff ----------------------------------------===//
//
// Reverse-mode differentiation of an mp graph function. The gradient
// function recomputes the forward ops (a copy of the function's body), then
// walks them backwards asking each op for its gradient rule
// (graph::GradientOpInterface): no list of op types lives here.
//
//===----------------------------------------------------------------------===//
#include "passes/Training/Autodiff.h"

#include "passes/Passes.h"
#include "passes/Precision/PrecisionUtils.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

namespace mixprec::passes {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;

namespace mixprec::passes {

StringRef mpNameIn(DictionaryAttr attrs) {
  auto name = attrs ? attrs.getAs<StringAttr>(graph::GraphDialect::kNameAttr) : nullptr;
  return name ? name.getValue() : "";
}

DictionaryAttr mpNameAttrs(Builder &b, StringRef name) {
  return b.getDictionaryAttr(b.getNamedAttr(graph::GraphDialect::kNameAttr, b.getStringAttr(name)));
}

std::string constantName(graph::ConstantOp op) {
  if (auto name = op->getAttrOfType<StringAttr>(graph::GraphDialect::kNameAttr))
    return name.str();
  return opName(op);
}

namespace {

bool isFloatTensor(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// The index of the loss among `f`'s results, or failure with an error.
FailureOr<unsigned> findLoss(func::FuncOp f, StringRef loss) {
  unsigned n = f.getNumResults();
  std::optional<unsigned> index;
  if (loss.empty()) {
    if (n != 1)
      return f.emitError() << "@" << f.getName() << " has " << n
                           << " results: name the loss (loss=NAME)";
    index = 0;
  } else {
    for (unsigned i = 0; i < n; ++i)
      if (mpNameIn(f.getResultAttrDict(i)) == loss)
        index = i;
    unsigned number;
    if (!index && !loss.getAsInteger(10, number) && number < n)
      index = number;
    if (!index)
      return f.emitError() << "loss '" << loss << "' is no result of @" << f.getName();
  }
  auto type = dyn_cast<RankedTensorType>(f.getResultTypes()[*index]);
  if (!type || !isFloatTensor(type) || type.getNumElements() != 1)
    return f.emitError() << "the loss (result #" << *index << " of @" << f.getName()
                         << ") must hold one float element, got " << f.getResultTypes()[*index];
  return *index;
}

/// What one wrt name stands for: an argument of f, or a constant.
struct WrtInput {
  std::string name;
  std::optional<unsigned> argument;
  graph::ConstantOp constant;
};

/// The inputs `wrt` names, in its order ("params" expanded in body order),
/// or failure with an error naming the first name that matches nothing.
FailureOr<SmallVector<WrtInput>> resolveWrt(func::FuncOp f, ArrayRef<std::string> wrt) {
  SmallVector<WrtInput> inputs;
  llvm::StringSet<> seen;
  auto add = [&](WrtInput input) -> LogicalResult {
    if (!seen.insert(input.name).second)
      return f.emitError() << "wrt names '" << input.name << "' twice";
    inputs.push_back(std::move(input));
    return success();
  };
  if (wrt.empty())
    return f.emitError() << "nothing to differentiate with respect to: give wrt=NAME,...";
  for (const std::string &name : wrt) {
    if (name == "params") {
      for (auto c : f.getBody().getOps<graph::ConstantOp>())
        if (isFloatTensor(c.getType()) && cast<RankedTensorType>(c.getType()).getRank() >= 1 &&
            !constantName(c).empty() && failed(add({constantName(c), std::nullopt, c})))
          return failure();
      continue;
    }
    std::optional<unsigned> argument;
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (mpNameIn(f.getArgAttrDict(i)) == name)
        argument = i;
    if (argument) {
      if (failed(add({name, argument, {}})))
        return failure();
      continue;
    }
    SmallVector<graph::ConstantOp> matches;
    for (auto c : f.getBody().getOps<graph::ConstantOp>())
      if (constantName(c) == name)
        matches.push_back(c);
    if (matches.empty())
      return f.emitError() << "wrt '" << name << "' is neither an argument nor a constant of @"
                           << f.getName();
    if (matches.size() > 1)
      return f.emitError() << "wrt '" << name << "' names " << matches.size() << " constants";
    if (!isFloatTensor(matches[0].getType()))
      return f.emitError() << "wrt '" << name << "' is not a float tensor";
    if (failed(add({name, std::nullopt, matches[0]})))
      return failure();
  }
  return inputs;
}

/// The sum of the adjoint contributions `parts` (each of one value's type):
/// in FP32 when that type is narrower, rounded once to it at the end.
Value sumAdjoints(OpBuilder &b, Location loc, ArrayRef<Value> parts) {
  if (parts.size() == 1)
    return parts[0];
  auto type = cast<RankedTensorType>(parts[0].getType());
  auto f32 = type.clone(b.getF32Type());
  auto widen = [&](Value v) -> Value {
    return type == f32 ? v : b.create<graph::CastOp>(loc, f32, v).getResult();
  };
  Value sum = widen(parts[0]);
  for (Value part : parts.drop_front())
    sum = b.create<graph::AddOp>(loc, f32, sum, widen(part));
  return type == f32 ? sum : b.create<graph::CastOp>(loc, type, sum).getResult();
}

/// A splat constant of a float tensor type.
Value splatOf(OpBuilder &b, Location loc, Type type, double value) {
  auto tensor = cast<RankedTensorType>(type);
  return b.create<graph::ConstantOp>(
      loc, tensor, DenseElementsAttr::get(tensor, FloatAttr::get(tensor.getElementType(), value)));
}

/// The location of the sum of a value's adjoints: after its producer.
Location adjointLocation(Value v) {
  Location loc = v.getLoc();
  if (auto name = dyn_cast<NameLoc>(loc))
    return NameLoc::get(StringAttr::get(loc.getContext(), name.getName().str() + ".adjoint"), loc);
  return loc;
}

/// Runs the reverse sweep over `ops` (the forward ops of the gradient
/// function, in order) from `loss`, building at `b`: returns each value's
/// summed adjoint, or failure with an error on the op at fault. Only values
/// that depend on `inputs` through float values (active ones) get one.
FailureOr<llvm::DenseMap<Value, Value>> reverseSweep(OpBuilder &b, ArrayRef<Operation *> ops,
                                                     ArrayRef<Value> inputs, Value loss) {
  llvm::DenseSet<Value> active(inputs.begin(), inputs.end());
  for (Operation *op : ops)
    if (llvm::any_of(op->getOperands(), [&](Value v) { return active.contains(v); }))
      for (Value r : op->getResults())
        if (isFloatTensor(r.getType()))
          active.insert(r);

  llvm::DenseMap<Value, SmallVector<Value>> parts;
  llvm::DenseMap<Value, Value> adjoints;
  auto adjointOf = [&](Value v) -> Value {
    auto it = parts.find(v);
    if (it == parts.end())
      return {};
    Value sum = sumAdjoints(b, adjointLocation(v), it->second);
    adjoints[v] = sum;
    return sum;
  };
  if (active.contains(loss))
    parts[loss].push_back(splatOf(b, loss.getLoc(), loss.getType(), 1.0));

  for (Operation *op : llvm::reverse(ops)) {
    if (!llvm::any_of(op->getOperands(), [&](Value v) { return active.contains(v); }))
      continue;
    SmallVector<Value> resultGrads;
    for (Value r : op->getResults())
      resultGrads.push_back(adjointOf(r));
    if (llvm::all_of(resultGrads, [](Value v) { return !v; }))
      continue;
    auto rule = dyn_cast<graph::GradientOpInterface>(op);
    if (!rule)
      return op->emitError() << "'" << op->getName()
                             << "' has no gradient rule, and the loss depends on it";
    SmallVector<Value> operandGrads;
    if (failed(rule.buildGradients(b, resultGrads, operandGrads)))
      return failure();
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
      if (grad && active.contains(operand))
        parts[operand].push_back(grad);
  }
  for (Value input : inputs)
    adjointOf(input);
  return adjoints;
}

/// Erases the ops of `f` whose results nobody reads, last first.
void eraseDeadOps(func::FuncOp f) {
  SmallVector<Operation *> ops;
  for (Operation &op : f.getBody().front())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
}

} // namespace

FailureOr<func::FuncOp> buildGradientFunction(func::FuncOp f, const GradientOptions &options) {
  if (!f.getBody().hasOneBlock())
    return f.emitError() << "@" << f.getName() << " must have one block to be differentiated";
  FailureOr<unsigned> lossIndex = findLoss(f, options.loss);
  if (failed(lossIndex))
    return failure();
  FailureOr<SmallVector<WrtInput>> wrt = resolveWrt(f, options.wrt);
  if (failed(wrt))
    return failure();
  std::string name = options.name.empty() ? (f.getName() + "_grad").str() : options.name;
  auto module = f->getParentOfType<ModuleOp>();
  if (module && module.lookupSymbol(name))
    return f.emitError() << "@" << name << " exists already";

  // 1. The signature: f's arguments, then the constants differentiated.
  MLIRContext *ctx = f.getContext();
  SmallVector<Type> argTypes(f.getArgumentTypes());
  SmallVector<Type> resultTypes{f.getResultTypes()[*lossIndex]};
  for (WrtInput &input : *wrt) {
    Type t = input.argument ? f.getArgumentTypes()[*input.argument] : input.constant.getType();
    if (input.constant)
      argTypes.push_back(t);
    resultTypes.push_back(t);
  }
  OpBuilder b(ctx);
  b.setInsertionPointAfter(f);
  auto grad = b.create<func::FuncOp>(f.getLoc(), name, FunctionType::get(ctx, argTypes, resultTypes));
  Block *body = grad.addEntryBlock();
  auto nameAttr = [&](StringRef n) { return mpNameAttrs(b, n); };
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (DictionaryAttr attrs = f.getArgAttrDict(i))
      grad.setArgAttrs(i, attrs);
  unsigned nextArg = f.getNumArguments();
  StringRef lossName = mpNameIn(f.getResultAttrDict(*lossIndex));
  grad.setResultAttrs(0, nameAttr(lossName.empty() ? "loss" : lossName));

  // 2. The forward ops, the differentiated constants read from arguments.
  IRMapping mapping;
  mapping.map(f.getArguments(), body->getArguments().take_front(f.getNumArguments()));
  SmallVector<Value> inputs;
  for (auto [i, input] : llvm::enumerate(*wrt)) {
    if (input.constant) {
      grad.setArgAttrs(nextArg, nameAttr(input.name));
      mapping.map(input.constant.getResult(), body->getArgument(nextArg++));
    }
    grad.setResultAttrs(i + 1, nameAttr("grad:" + input.name));
  }
  b.setInsertionPointToEnd(body);
  SmallVector<Operation *> forward;
  Operation *terminator = f.getBody().front().getTerminator();
  for (Operation &op : f.getBody().front().without_terminator()) {
    auto constant = dyn_cast<graph::ConstantOp>(op);
    if (!constant || !mapping.contains(constant.getResult()))
      forward.push_back(b.clone(op, mapping));
  }
  for (WrtInput &input : *wrt)
    inputs.push_back(input.constant ? mapping.lookup(input.constant.getResult())
                                    : body->getArgument(*input.argument));
  Value loss = mapping.lookup(terminator->getOperand(*lossIndex));

  // 3. The reverse sweep; inputs the loss does not reach get zeros.
  FailureOr<llvm::DenseMap<Value, Value>> adjoints = reverseSweep(b, forward, inputs, loss);
  if (failed(adjoints)) {
    grad.erase();
    return failure();
  }
  SmallVector<Value> results{loss};
  for (Value input : inputs) {
    Value adjoint = adjoints->lookup(input);
    results.push_back(adjoint ? adjoint : splatOf(b, input.getLoc(), input.getType(), 0.0));
  }
  b.create<func::ReturnOp>(f.getLoc(), results);
  eraseDeadOps(grad);
  return grad;
}

//===----------------------------------------------------------------------===//
// --mp-autodiff
//===----------------------------------------------------------------------===//

namespace {

struct AutodiffPass : impl::AutodiffPassBase<AutodiffPass> {
  using AutodiffPassBase::AutodiffPassBase;

  /// The function to differentiate: `func=`, else @main or the only one.
  func::FuncOp findFunction(ModuleOp module) {
    if (!funcName.empty()) {
      auto f = module.lookupSymbol<func::FuncOp>(funcName);
      if (!f)
        module.emitError() << "--mp-autodiff: no function @" << funcName;
      return f;
    }
    if (auto main = module.lookupSymbol<func::FuncOp>("main"))
      return main;
    auto funcs = llvm::to_vector(module.getOps<func::FuncOp>());
    if (funcs.size() == 1)
      return funcs[0];
    module.emitError() << "--mp-autodiff: the module has " << funcs.size()
                       << " functions and no @main: name one (func=NAME)";
    return {};
  }

  void runOnOperation() override {
    func::FuncOp f = findFunction(getOperation());
    GradientOptions options;
    options.wrt.assign(wrt.begin(), wrt.end());
    options.loss = loss;
    if (!f || failed(buildGradientFunction(f, options)))
      signalPassFailure();
  }
};

} // namespace
} // namespace mixprec::passes
