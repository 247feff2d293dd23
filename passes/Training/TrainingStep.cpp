//===- TrainingStep.cpp - --mp-build-training-step ------------------------===//
//
// The step is built in three functions, the first two temporary:
//   @<name>_loss(data, labels, [scale], params) -> scaled loss
//       the forward graph with its trained constants as arguments, the loss
//       and the loss scaling;
//   @<name>_loss_grad = buildGradientFunction(@<name>_loss, wrt = params);
//   @<name>(data, labels, state...) -> (loss, skipped, grad_norm, scale,
//       state updates): the gradient function's body, then unscaling, the
//       non-finite check, clipping, the optimizer and the loss-scale update,
//       each written as mp ops (GraphBuilder), so that each reads as its
//       formula and the precision passes see ordinary FP32 element-wise ops.
//
//===----------------------------------------------------------------------===//
#include "passes/Training/TrainingStep.h"

#include "passes/Fusion/FuseAttention.h"
#include "passes/Passes.h"
#include "passes/Precision/PrecisionUtils.h"
#include "passes/Training/Autodiff.h"

#include "dialects/Graph/IR/GraphBuilder.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/StorageFormat.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/GlobPattern.h"

#include <cmath>

namespace mixprec::passes {
#define GEN_PASS_DEF_BUILDTRAININGSTEPPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;
using mixprec::graph::GraphBuilder;
using mixprec::graph::GraphDialect;
using mixprec::graph::shapeOf;

namespace mixprec::passes {

bool parseLoss(llvm::StringRef text, TrainingOptions::Loss &out) {
  auto v = llvm::StringSwitch<std::optional<TrainingOptions::Loss>>(text)
               .Cases("ce", "cross-entropy", TrainingOptions::Loss::CrossEntropy)
               .Case("mse", TrainingOptions::Loss::Mse)
               .Case("model", TrainingOptions::Loss::Model)
               .Default(std::nullopt);
  if (v)
    out = *v;
  return v.has_value();
}

bool parseOptimizer(llvm::StringRef text, TrainingOptions::Optimizer &out) {
  auto v = llvm::StringSwitch<std::optional<TrainingOptions::Optimizer>>(text)
               .Case("sgd", TrainingOptions::Optimizer::Sgd)
               .Case("adamw", TrainingOptions::Optimizer::AdamW)
               .Default(std::nullopt);
  if (v)
    out = *v;
  return v.has_value();
}

bool parseScaling(llvm::StringRef text, TrainingOptions::Scaling &out) {
  auto v = llvm::StringSwitch<std::optional<TrainingOptions::Scaling>>(text)
               .Case("none", TrainingOptions::Scaling::None)
               .Case("static", TrainingOptions::Scaling::Static)
               .Case("dynamic", TrainingOptions::Scaling::Dynamic)
               .Default(std::nullopt);
  if (v)
    out = *v;
  return v.has_value();
}

std::string checkTrainingOptions(const TrainingOptions &o) {
  auto finite = [](double v) { return std::isfinite(v); };
  auto text = [](double v) { return std::to_string(v); };
  if (!finite(o.lr) || o.lr <= 0)
    return "the learning rate must be > 0, got " + text(o.lr);
  if (!finite(o.momentum) || o.momentum < 0 || o.momentum >= 1)
    return "momentum must be in [0, 1), got " + text(o.momentum);
  if (!finite(o.weightDecay) || o.weightDecay < 0)
    return "weight decay must be >= 0, got " + text(o.weightDecay);
  if (!finite(o.beta1) || o.beta1 < 0 || o.beta1 >= 1)
    return "beta1 must be in [0, 1), got " + text(o.beta1);
  if (!finite(o.beta2) || o.beta2 < 0 || o.beta2 >= 1)
    return "beta2 must be in [0, 1), got " + text(o.beta2);
  if (!finite(o.eps) || o.eps <= 0)
    return "eps must be > 0, got " + text(o.eps);
  if (!finite(o.initScale) || o.initScale <= 0 || o.initScale > 3.0e38)
    return "the initial loss scale must be in (0, 3e38], got " + text(o.initScale);
  if (!finite(o.growthFactor) || o.growthFactor <= 1)
    return "the growth factor must be > 1, got " + text(o.growthFactor);
  if (!finite(o.backoffFactor) || o.backoffFactor <= 0 || o.backoffFactor >= 1)
    return "the backoff factor must be in (0, 1), got " + text(o.backoffFactor);
  if (o.growthInterval < 1 || o.growthInterval > (int64_t(1) << 24))
    return "the growth interval must be in [1, 2^24], got " + std::to_string(o.growthInterval);
  if (o.hysteresis < 1 || o.hysteresis > (int64_t(1) << 24))
    return "hysteresis must be in [1, 2^24], got " + std::to_string(o.hysteresis);
  if (!finite(o.minScale) || o.minScale < 0 || o.minScale > o.initScale)
    return "the minimum loss scale must be in [0, init scale], got " + text(o.minScale);
  if (!finite(o.clipNorm) || o.clipNorm < 0)
    return "the clipping norm must be >= 0, got " + text(o.clipNorm);
  if (o.accumulate < 1 || o.accumulate > 4096)
    return "the micro-batches to accumulate must be in [1, 4096], got " +
           std::to_string(o.accumulate);
  if (o.allreduceDType != "fp32" && o.allreduceDType != "bf16" && o.allreduceDType != "fp16")
    return "the all-reduce dtype must be fp32, bf16 or fp16, got '" + o.allreduceDType + "'";
  if (!finite(o.bucketMB) || o.bucketMB <= 0 || o.bucketMB > 1e6)
    return "the gradient bucket size must be in (0, 1e6] MB, got " + text(o.bucketMB);
  if (o.world < 1 || o.world > (int64_t(1) << 20))
    return "the world size must be in [1, 2^20], got " + std::to_string(o.world);
  if (o.shardOptimizer && !o.dataParallel)
    return "sharding the optimizer state needs data parallelism (data-parallel=true)";
  for (const std::string &g : o.frozen)
    if (auto glob = llvm::GlobPattern::create(g); !glob) {
      llvm::consumeError(glob.takeError());
      return "frozen pattern '" + g + "' is not a valid glob";
    }
  return "";
}

namespace {

/// The name of the step's second input: the targets of MSE, else labels.
StringRef labelsName(const TrainingOptions &o) {
  return o.loss == TrainingOptions::Loss::Mse ? "targets" : "labels";
}

/// A trained constant: its name and its value, widened to FP32 (the master).
struct Param {
  std::string name;
  graph::ConstantOp constant;
  DenseElementsAttr master;
};

/// The constants the step trains: named float constants of rank >= 1 that
/// no frozen glob matches, in body order.
FailureOr<SmallVector<Param>> findParams(func::FuncOp f, const TrainingOptions &o) {
  SmallVector<llvm::GlobPattern> frozen;
  for (const std::string &g : o.frozen)
    frozen.push_back(cantFail(llvm::GlobPattern::create(g)));
  SmallVector<Param> params;
  llvm::StringSet<> seen;
  for (auto c : f.getBody().getOps<graph::ConstantOp>()) {
    auto type = dyn_cast<RankedTensorType>(c.getType());
    if (!type || !isa<FloatType>(type.getElementType()) || type.getRank() < 1)
      continue;
    std::string name = constantName(c);
    if (name.empty() || llvm::any_of(frozen, [&](auto &g) { return g.match(name); }))
      continue;
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!dense)
      return c.emitError() << "parameter '" << name
                           << "' has no dense value to start training from";
    if (!seen.insert(name).second)
      return c.emitError() << "two trained constants are named '" << name
                           << "': freeze one (--frozen) or rename it";
    std::vector<float> values = graph::readFloatConstant(dense);
    auto masterType = type.clone(Float32Type::get(c.getContext()));
    params.push_back({name, c, DenseElementsAttr::get(masterType, ArrayRef<float>(values))});
  }
  if (params.empty())
    return f.emitError() << "nothing to train: no named float constant of rank >= 1 "
                         << (o.frozen.empty() ? "" : "that no --frozen glob matches ")
                         << "in @" << f.getName();
  return params;
}

/// The index of the forward result the loss reads.
FailureOr<unsigned> findOutput(func::FuncOp f, StringRef name) {
  if (f.getNumResults() == 0)
    return f.emitError() << "@" << f.getName() << " has no result to train on";
  if (name.empty())
    return 0u;
  for (unsigned i = 0; i < f.getNumResults(); ++i)
    if (mpNameIn(f.getResultAttrDict(i)) == name)
      return i;
  return f.emitError() << "no result of @" << f.getName() << " is named '" << name << "'";
}

/// Builds @<name>_loss: the forward graph with the params as arguments
/// (FP32 masters, cast back to each constant's type where it had another),
/// then the loss, times the loss scale argument when scaling.
FailureOr<func::FuncOp> buildLossFunction(func::FuncOp f, ArrayRef<Param> params,
                                          unsigned outputIndex, const TrainingOptions &o,
                                          Type &labelsType) {
  MLIRContext *ctx = f.getContext();
  auto output = cast<RankedTensorType>(f.getResultTypes()[outputIndex]);
  Type f32 = Float32Type::get(ctx);
  switch (o.loss) {
  case TrainingOptions::Loss::CrossEntropy:
    if (output.getRank() < 1 || !isa<FloatType>(output.getElementType()) ||
        output.getShape().back() < 1)
      return f.emitError() << "cross-entropy needs logits with a class dim last, got " << output;
    labelsType = RankedTensorType::get(output.getShape().drop_back(), IntegerType::get(ctx, 64));
    break;
  case TrainingOptions::Loss::Mse:
    if (!isa<FloatType>(output.getElementType()))
      return f.emitError() << "MSE needs a float output, got " << output;
    labelsType = output.clone(f32);
    break;
  case TrainingOptions::Loss::Model:
    if (!isa<FloatType>(output.getElementType()) || output.getNumElements() != 1)
      return f.emitError() << "--loss model needs an output of one float element, got "
                           << output;
    labelsType = nullptr;
    break;
  }
  bool scaled = o.scaling != TrainingOptions::Scaling::None;

  SmallVector<Type> argTypes(f.getArgumentTypes());
  if (labelsType)
    argTypes.push_back(labelsType);
  if (scaled)
    argTypes.push_back(RankedTensorType::get({}, f32));
  for (const Param &p : params)
    argTypes.push_back(p.master.getType());
  OpBuilder b(ctx);
  b.setInsertionPointAfter(f);
  auto type = FunctionType::get(ctx, argTypes, {RankedTensorType::get({}, f32)});
  auto lossFn = b.create<func::FuncOp>(f.getLoc(), o.name + "_loss", type);
  Block *body = lossFn.addEntryBlock();
  unsigned arg = 0;
  for (; arg < f.getNumArguments(); ++arg)
    if (DictionaryAttr attrs = f.getArgAttrDict(arg))
      lossFn.setArgAttrs(arg, attrs);
  Value labels, scale;
  if (labelsType) {
    lossFn.setArgAttrs(arg, mpNameAttrs(b, labelsName(o)));
    labels = body->getArgument(arg++);
  }
  if (scaled) {
    lossFn.setArgAttrs(arg, mpNameAttrs(b, "loss_scale"));
    scale = body->getArgument(arg++);
  }

  b.setInsertionPointToEnd(body);
  IRMapping mapping;
  mapping.map(f.getArguments(), body->getArguments().take_front(f.getNumArguments()));
  for (Param p : params) {
    lossFn.setArgAttrs(arg, mpNameAttrs(b, p.name));
    Value master = body->getArgument(arg++);
    if (master.getType() != p.constant.getType()) {
      GraphBuilder gb(b, p.constant.getLoc());
      master = gb.cast(master, cast<RankedTensorType>(p.constant.getType()).getElementType());
    }
    mapping.map(p.constant.getResult(), master);
  }
  Block &fBody = f.getBody().front();
  for (Operation &op : fBody.without_terminator()) {
    auto constant = dyn_cast<graph::ConstantOp>(op);
    if (!constant || !mapping.contains(constant.getResult()))
      b.clone(op, mapping);
  }
  Value out = mapping.lookup(fBody.getTerminator()->getOperand(outputIndex));

  Location loc = NameLoc::get(b.getStringAttr("loss"), f.getLoc());
  GraphBuilder gb(b, loc);
  Value loss;
  int64_t rank = output.getRank();
  SmallVector<int64_t> allAxes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  switch (o.loss) {
  case TrainingOptions::Loss::CrossEntropy: {
    Value logits = gb.toF32(out);
    Value logp = b.create<graph::LogSoftmaxOp>(loc, logits.getType(), logits, rank - 1, TypeAttr());
    SmallVector<int64_t> pickedShape(output.getShape().drop_back());
    pickedShape.push_back(1);
    Value index = gb.reshape(labels, pickedShape);
    Value picked = b.create<graph::GatherElementsOp>(
        loc, RankedTensorType::get(pickedShape, f32), logp, index, rank - 1);
    loss = gb.neg(gb.reshape(gb.reduceMean(picked, allAxes), {}));
    break;
  }
  case TrainingOptions::Loss::Mse: {
    Value d = gb.sub(gb.toF32(out), labels);
    loss = gb.reshape(gb.reduceMean(gb.mul(d, d), allAxes), {});
    break;
  }
  case TrainingOptions::Loss::Model:
    loss = gb.reshape(gb.toF32(out), {});
    break;
  }
  if (scaled)
    loss = gb.mul(loss, scale);
  b.create<func::ReturnOp>(loc, loss);
  lossFn.setResultAttrs(0, mpNameAttrs(b, "scaled_loss"));
  return lossFn;
}

/// One state of the step: its argument (the value this step reads) and the
/// value it takes after the step (null: unchanged).
struct State {
  std::string name;
  DenseElementsAttr init;
  Value current;
  Value next;
};

/// Builds the step's body after the gradients: see the file comment.
class StepBuilder {
public:
  StepBuilder(OpBuilder &b, Location loc, const TrainingOptions &o) : b(b), gb(b, loc), o(o) {}

  Value c(double v) { return gb.splat(v, b.getF32Type()); }
  /// The sum over every element, as a rank-0 FP32 value.
  Value sumAll(Value x) {
    auto axes = llvm::to_vector(llvm::seq<int64_t>(0, shapeOf(x).size()));
    return gb.reshape(gb.reduceSum(x, axes, /*keepDims=*/false), {});
  }
  /// 1 if any element of `g` is inf or NaN, else 0 (rank-0 FP32).
  Value nonFinite(Value g) {
    auto boolType = RankedTensorType::get(shapeOf(g), b.getI1Type());
    Value nan = b.create<graph::IsNaNOp>(gb.loc, boolType, g);
    Value inf = b.create<graph::IsInfOp>(gb.loc, boolType, g, true, true);
    Value bad = gb.indicator(b.create<graph::OrOp>(gb.loc, boolType, nan, inf), g);
    auto axes = llvm::to_vector(llvm::seq<int64_t>(0, shapeOf(g).size()));
    if (axes.empty())
      return bad;
    auto reduced = RankedTensorType::get({}, b.getF32Type());
    return b.create<graph::ReduceMaxOp>(gb.loc, reduced, bad, axes, false, TypeAttr());
  }
  Value min(Value x, Value y) { return gb.binary<graph::MinOp>(x, y); }
  Value max(Value x, Value y) { return gb.binary<graph::MaxOp>(x, y); }
  Value sqrt(Value x) { return gb.unary<graph::SqrtOp>(x); }
  Value pow(Value x, Value y) { return gb.binary<graph::PowOp>(x, y); }
  Value greaterEq(Value x, Value y) { return gb.compare<graph::GreaterOrEqualOp>(x, y); }
  Value lessEq(Value x, Value y) { return gb.compare<graph::LessOrEqualOp>(x, y); }
  /// Elements [from, from + length) of the FP32 vector `v` (`v` itself
  /// when that is all of it).
  Value part(Value v, int64_t from, int64_t length) {
    if (from == 0 && length == cast<RankedTensorType>(v.getType()).getDimSize(0))
      return v;
    auto type = RankedTensorType::get({length}, b.getF32Type());
    return b.create<graph::SliceOp>(gb.loc, type, v, ArrayRef<int64_t>{from}, ArrayRef<int64_t>{1});
  }

  OpBuilder &b;
  GraphBuilder gb;
  const TrainingOptions &o;
};

/// The elements of one rank's slice of a flattened tensor of `n` elements
/// sharded over `world` ranks (the last slices zero-padded).
int64_t shardElements(int64_t n, int64_t world) { return (n + world - 1) / world; }

/// The step's states, masters first, and where the special ones are.
struct StepStates {
  SmallVector<State> states;
  size_t numParams = 0, stepIndex = 0, scaleIndex = 0, trackerIndex = 0, hysteresisIndex = 0;
};

/// The step's states: the FP32 masters, the optimizer's buffers, the step
/// count and, with dynamic scaling, the loss scale's.
StepStates collectStates(ArrayRef<Param> params, const TrainingOptions &o, MLIRContext *ctx) {
  Type f32 = Float32Type::get(ctx);
  auto scalarType = RankedTensorType::get({}, f32);
  auto scalarInit = [&](double v) {
    return DenseElementsAttr::get(scalarType, static_cast<float>(v));
  };
  // Sharded: this rank's slice of the flattened parameter.
  auto zerosOf = [&](DenseElementsAttr like) {
    auto type = cast<ShapedType>(like.getType());
    if (o.shardOptimizer)
      type = RankedTensorType::get({shardElements(type.getNumElements(), o.world)}, f32);
    return DenseElementsAttr::get(type, 0.0f);
  };
  bool dynamic = o.scaling == TrainingOptions::Scaling::Dynamic;
  StepStates st;
  SmallVector<State> &states = st.states;
  for (const Param &p : params) {
    states.push_back({p.name, p.master, {}, {}});
  }
  st.numParams = params.size();
  for (const Param &p : params) {
    if (o.optimizer == TrainingOptions::Optimizer::Sgd && o.momentum > 0)
      states.push_back({p.name + ".momentum_buffer", zerosOf(p.master), {}, {}});
    if (o.optimizer == TrainingOptions::Optimizer::AdamW) {
      states.push_back({p.name + ".exp_avg", zerosOf(p.master), {}, {}});
      states.push_back({p.name + ".exp_avg_sq", zerosOf(p.master), {}, {}});
    }
  }
  states.push_back({"step", scalarInit(0), {}, {}});
  st.stepIndex = states.size() - 1;
  if (dynamic) {
    states.push_back({"loss_scale", scalarInit(o.initScale), {}, {}});
    st.scaleIndex = states.size() - 1;
    states.push_back({"growth_tracker", scalarInit(0), {}, {}});
    st.trackerIndex = states.size() - 1;
    if (o.hysteresis > 1) {
      states.push_back({"hysteresis", scalarInit(double(o.hysteresis)), {}, {}});
      st.hysteresisIndex = states.size() - 1;
    }
  }
  return st;
}

/// The empty step function after `forward`: data, labels (when the loss
/// has them), then the states as arguments; the four scalars, the states'
/// next values and (--gradient-outputs) the gradients as results. Sets
/// `labels` and each state's current value to its argument.
FailureOr<func::FuncOp> createStepFunction(OpBuilder &b, func::FuncOp forward, Type labelsType,
                                           StepStates &st, const TrainingOptions &o,
                                           Value &labels) {
  MLIRContext *ctx = forward.getContext();
  auto scalarType = RankedTensorType::get({}, Float32Type::get(ctx));
  SmallVector<State> &states = st.states;
  // With accumulation every data input and the labels hold `accumulate`
  // micro-batches along dim 0.
  const int64_t micro = o.accumulate;
  auto accumulated = [&](Type t) -> FailureOr<Type> {
    auto ranked = cast<RankedTensorType>(t);
    if (micro == 1)
      return Type(ranked);
    if (ranked.getRank() == 0)
      return failure();
    SmallVector<int64_t> shape(ranked.getShape());
    shape[0] *= micro;
    return Type(ranked.clone(shape));
  };
  SmallVector<Type> argTypes;
  for (auto [i, t] : llvm::enumerate(forward.getArgumentTypes())) {
    FailureOr<Type> type = accumulated(t);
    if (failed(type))
      return forward.emitError() << "gradient accumulation needs a batch dim (dim 0) on every "
                                    "input; input #" << i << " is a scalar";
    argTypes.push_back(*type);
  }
  if (labelsType) {
    FailureOr<Type> type = accumulated(labelsType);
    if (failed(type))
      return forward.emitError() << "gradient accumulation needs a batch dim on the labels";
    argTypes.push_back(*type);
  }
  for (const State &s : states)
    argTypes.push_back(s.init.getType());
  SmallVector<Type> resultTypes(4, scalarType);
  for (const State &s : states)
    resultTypes.push_back(s.init.getType());
  if (o.gradientOutputs)
    for (size_t i = 0; i < st.numParams; ++i)
      resultTypes.push_back(states[i].init.getType());
  b.setInsertionPointAfter(forward);
  auto step = b.create<func::FuncOp>(forward.getLoc(), o.name,
                                     FunctionType::get(ctx, argTypes, resultTypes));
  Block *body = step.addEntryBlock();
  unsigned arg = 0;
  for (; arg < forward.getNumArguments(); ++arg)
    if (DictionaryAttr attrs = forward.getArgAttrDict(arg))
      step.setArgAttrs(arg, attrs);
  if (labelsType) {
    step.setArgAttrs(arg, mpNameAttrs(b, labelsName(o)));
    labels = body->getArgument(arg++);
  }
  for (State &s : states) {
    step.setArgAttrs(arg, b.getDictionaryAttr({
                              b.getNamedAttr(GraphDialect::kNameAttr, b.getStringAttr(s.name)),
                              b.getNamedAttr(GraphDialect::kStateAttr, b.getStringAttr(s.name)),
                              b.getNamedAttr(GraphDialect::kStateInitAttr, s.init),
                          }));
    s.current = body->getArgument(arg++);
  }
  return step;
}

/// Clones `gradFn`'s body into the step once per micro-batch, on its rows
/// of the data and labels; sets the scaled loss and the FP32 gradients,
/// summed over the micro-batches, then averaged.
void inlineGradients(StepBuilder &sb, func::FuncOp forward, func::FuncOp gradFn, Block *body,
                     Value labels, Value scale, const StepStates &st, Value &scaledLoss,
                     SmallVector<Value> &grads) {
  OpBuilder &b = sb.b;
  GraphBuilder &gb = sb.gb;
  const TrainingOptions &o = sb.o;
  const int64_t micro = o.accumulate;
  const bool scaled = o.scaling != TrainingOptions::Scaling::None;
  const size_t numParams = st.numParams;
  Block &gradBody = gradFn.getBody().front();
  Operation *gradReturn = gradBody.getTerminator();
  grads.assign(numParams, Value());
  auto microBatch = [&](Value full, int64_t k) -> Value {
    if (micro == 1)
      return full;
    auto type = cast<RankedTensorType>(full.getType());
    SmallVector<int64_t> shape(type.getShape()), starts(shape.size(), 0), steps(shape.size(), 1);
    shape[0] /= micro;
    starts[0] = k * shape[0];
    return b.create<graph::SliceOp>(gb.loc, type.clone(shape), full, starts, steps).getResult();
  };
  for (int64_t k = 0; k < micro; ++k) {
    IRMapping mapping;
    unsigned gradArg = 0;
    for (; gradArg < forward.getNumArguments(); ++gradArg)
      mapping.map(gradBody.getArgument(gradArg), microBatch(body->getArgument(gradArg), k));
    if (labels)
      mapping.map(gradBody.getArgument(gradArg++), microBatch(labels, k));
    if (scaled)
      mapping.map(gradBody.getArgument(gradArg++), scale);
    for (size_t i = 0; i < numParams; ++i)
      mapping.map(gradBody.getArgument(gradArg++), st.states[i].current);
    for (Operation &op : gradBody.without_terminator())
      b.clone(op, mapping);
    Value l = mapping.lookup(gradReturn->getOperand(0));
    scaledLoss = k == 0 ? l : gb.add(scaledLoss, l);
    for (size_t i = 0; i < numParams; ++i) {
      Value g = gb.toF32(mapping.lookup(gradReturn->getOperand(1 + i)));
      grads[i] = k == 0 ? g : gb.add(grads[i], g);
    }
  }
  if (micro > 1) {
    Value mean = sb.c(1.0 / double(micro));
    scaledLoss = gb.mul(scaledLoss, mean);
    for (Value &g : grads)
      g = gb.mul(g, mean);
  }
}

/// The buckets of a collective: [first, last) ranges in order, each of at
/// least one item, then of as many more as keep its bytes within
/// `capBytes` (PyTorch DDP's bucket_cap_mb).
SmallVector<std::pair<size_t, size_t>> bucketsOf(ArrayRef<double> bytes, double capBytes) {
  SmallVector<std::pair<size_t, size_t>> buckets;
  for (size_t first = 0; first < bytes.size();) {
    size_t last = first + 1;
    double total = bytes[first];
    while (last < bytes.size() && total + bytes[last] <= capBytes)
      total += bytes[last++];
    buckets.push_back({first, last});
    first = last;
  }
  return buckets;
}

/// Sharding: this rank's slice of `full` flattened (zero-padded to world
/// slices).
Value rankSlice(StepBuilder &sb, Value full) {
  GraphBuilder &gb = sb.gb;
  const int64_t world = sb.o.world;
  const int64_t n = cast<RankedTensorType>(full.getType()).getNumElements();
  const int64_t s = shardElements(n, world);
  Value flat = gb.reshape(full, {n});
  if (world * s > n)
    flat = gb.concat({flat, gb.splat(0.0, sb.b.getF32Type(), {world * s - n})}, 0);
  auto type = RankedTensorType::get({s}, sb.b.getF32Type());
  return sb.b.create<graph::RankSliceOp>(gb.loc, type, flat, world).getResult();
}

/// Sharding: each rank's new slices of the masters (`shards`, one per
/// parameter), all-gathered in buckets of at most o.bucketMB (the slices
/// concatenated, one mp.all_gather; rank r's part of parameter i is at
/// r x bucket + its offset), become the masters' next values.
void gatherMasters(StepBuilder &sb, StepStates &st, ArrayRef<Value> shards) {
  GraphBuilder &gb = sb.gb;
  OpBuilder &b = sb.b;
  const int64_t world = sb.o.world;
  auto lengthOf = [](Value v) { return cast<RankedTensorType>(v.getType()).getDimSize(0); };
  SmallVector<double> bytes; // gathered: world x the slice, FP32
  for (Value v : shards)
    bytes.push_back(double(lengthOf(v)) * 4.0 * double(world));
  for (auto [first, last] : bucketsOf(bytes, sb.o.bucketMB * 1024.0 * 1024.0)) {
    int64_t total = 0;
    for (size_t i = first; i < last; ++i)
      total += lengthOf(shards[i]);
    Value mine = last - first > 1
                     ? gb.concat(SmallVector<Value>(shards.slice(first, last - first)), 0)
                     : shards[first];
    auto wholeType = RankedTensorType::get({world * total}, b.getF32Type());
    Value gathered = b.create<graph::AllGatherOp>(gb.loc, wholeType, mine, world).getResult();
    // [world, bucket]: parameter i's slices are the columns at its offset.
    Value byRank = last - first > 1 ? gb.reshape(gathered, {world, total}) : gathered;
    int64_t offset = 0;
    for (size_t i = first; i < last; ++i) {
      const int64_t s = lengthOf(shards[i]);
      Value whole = gathered;
      if (last - first > 1) {
        auto type = RankedTensorType::get({world, s}, b.getF32Type());
        Value columns = b.create<graph::SliceOp>(gb.loc, type, byRank, ArrayRef<int64_t>{0, offset},
                                                 ArrayRef<int64_t>{1, 1});
        whole = gb.reshape(columns, {world * s});
      }
      State &master = st.states[i];
      const int64_t n = cast<RankedTensorType>(master.init.getType()).getNumElements();
      master.next = gb.reshape(sb.part(whole, 0, n), graph::shapeOf(master.current));
      offset += s;
    }
  }
}

/// The optimizer (torch.optim.SGD / AdamW) on the FP32 masters: sets each
/// state's next value; a skipped step keeps every master, optimizer state
/// and the count.
void applyOptimizer(StepBuilder &sb, StepStates &st, ArrayRef<Value> grads, Value skip) {
  GraphBuilder &gb = sb.gb;
  const TrainingOptions &o = sb.o;
  SmallVector<State> &states = st.states;
  const size_t numParams = st.numParams;
  Value stepCount = states[st.stepIndex].current;
  Value nextCount = gb.add(stepCount, sb.c(1.0));
  states[st.stepIndex].next = nextCount;
  size_t nextState = numParams;
  SmallVector<Value> newShards;
  for (size_t i = 0; i < numParams; ++i) {
    Value w = states[i].current;
    Value g = grads[i];
    if (o.shardOptimizer) {
      w = rankSlice(sb, w);
      g = rankSlice(sb, g);
    }
    auto setMaster = [&](Value next) {
      if (o.shardOptimizer)
        newShards.push_back(next);
      else
        states[i].next = next;
    };
    if (o.optimizer == TrainingOptions::Optimizer::Sgd) {
      if (o.weightDecay > 0)
        g = gb.add(g, gb.mul(w, sb.c(o.weightDecay)));
      if (o.momentum > 0) {
        State &buffer = states[nextState++];
        buffer.next = gb.add(gb.mul(buffer.current, sb.c(o.momentum)), g);
        g = buffer.next;
      }
      setMaster(gb.sub(w, gb.mul(g, sb.c(o.lr))));
      continue;
    }
    State &m = states[nextState++];
    State &v = states[nextState++];
    m.next = gb.add(gb.mul(m.current, sb.c(o.beta1)), gb.mul(g, sb.c(1.0 - o.beta1)));
    v.next = gb.add(gb.mul(v.current, sb.c(o.beta2)), gb.mul(gb.mul(g, g), sb.c(1.0 - o.beta2)));
    Value correction1 = gb.sub(sb.c(1.0), sb.pow(sb.c(o.beta1), nextCount));
    Value correction2 = gb.sub(sb.c(1.0), sb.pow(sb.c(o.beta2), nextCount));
    Value stepSize = gb.div(sb.c(o.lr), correction1);
    Value denominator = gb.add(gb.div(sb.sqrt(v.next), sb.sqrt(correction2)), sb.c(o.eps));
    Value decayed = o.weightDecay > 0 ? gb.mul(w, sb.c(1.0 - o.lr * o.weightDecay)) : w;
    setMaster(gb.sub(decayed, gb.mul(gb.div(m.next, denominator), stepSize)));
  }
  if (o.shardOptimizer)
    gatherMasters(sb, st, newShards);
  // A skipped step keeps every master, optimizer state and the count.
  for (State &s : states)
    if (s.next)
      s.next = gb.where(skip, s.current, s.next);
}

/// The loss-scale update (GradScaler; hysteresis as DeepSpeed's): sets the
/// next values of the dynamic scaling's states.
void updateLossScale(StepBuilder &sb, StepStates &st, Value scale, Value skip) {
  GraphBuilder &gb = sb.gb;
  const TrainingOptions &o = sb.o;
  SmallVector<State> &states = st.states;
  Value tracker = states[st.trackerIndex].current;
  Value counted = gb.add(tracker, sb.c(1.0));
  Value grow = sb.greaterEq(counted, sb.c(double(o.growthInterval)));
  Value backedOff = sb.max(gb.mul(scale, sb.c(o.backoffFactor)), sb.c(o.minScale));
  Value grown = gb.where(grow, gb.mul(scale, sb.c(o.growthFactor)), scale);
  Value onOverflow = backedOff;
  if (o.hysteresis > 1) {
    Value left = states[st.hysteresisIndex].current;
    Value absorbed = gb.compare<graph::GreaterOp>(left, sb.c(1.0));
    onOverflow = gb.where(absorbed, scale, backedOff);
    Value leftAfterOverflow = sb.max(gb.sub(left, sb.c(1.0)), sb.c(1.0));
    Value leftAfterClean = gb.where(grow, sb.c(double(o.hysteresis)), left);
    states[st.hysteresisIndex].next = gb.where(skip, leftAfterOverflow, leftAfterClean);
  }
  states[st.scaleIndex].next = gb.where(skip, onOverflow, grown);
  states[st.trackerIndex].next = gb.where(skip, sb.c(0.0), gb.where(grow, sb.c(0.0), counted));
}

/// Makes the parameters' gradients FP32 where they are made: each gradient
/// traced back through reshapes, transposes, the sums of several uses or
/// micro-batches and their mean to the ops that make it; a GEMM is marked
/// mp.fp32_output (its operands keep the precision), an op that follows its
/// inputs' dtype (an embedding's scatter-add) is pinned to FP32; the FP32
/// class (reductions: biases, norms' scales) is FP32 already.
void markWeightGradientGemms(ArrayRef<Value> grads) {
  SmallVector<Value> work(grads.begin(), grads.end());
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Operation *op = work.pop_back_val().getDefiningOp();
    if (!op || !seen.insert(op).second)
      continue;
    if (isa<graph::GemmOpInterface>(op)) {
      op->setAttr(GraphDialect::kFp32OutputAttr, UnitAttr::get(op->getContext()));
      continue;
    }
    if (isa<graph::ReshapeOp, graph::TransposeOp>(op)) {
      work.push_back(op->getOperand(0));
    } else if (isa<graph::AddOp>(op)) {
      work.append(op->operand_begin(), op->operand_end());
    } else if (isa<graph::MulOp>(op)) { // accumulation's 1/K
      for (Value v : op->getOperands())
        if (!matchPattern(v, m_Constant()))
          work.push_back(v);
    } else if (graph::precisionClassOf(op) == graph::PrecisionClass::Follow) {
      // An embedding's scatter-add (a BF16 sum of BF16 rows otherwise).
      op->setAttr(GraphDialect::kPinnedPrecisionAttr,
                  TypeAttr::get(Float32Type::get(op->getContext())));
    }
  }
}

/// Pins every float op the step's builder makes from here on to FP32
/// (GraphDialect::kPinnedPrecisionAttr): the update after the gradients.
struct PinFp32 : OpBuilder::Listener {
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    if (op->hasTrait<OpTrait::ConstantLike>() || op->getNumResults() == 0)
      return;
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (type && isa<FloatType>(type.getElementType()))
      op->setAttr(GraphDialect::kPinnedPrecisionAttr,
                  TypeAttr::get(Float32Type::get(op->getContext())));
  }
};

/// Data parallelism: the scaled gradients averaged across the ranks, in
/// buckets of at most `o.bucketMB` (each gradient flattened, the bucket
/// concatenated, one mp.all_reduce mean pinned to the wire dtype, sliced
/// and reshaped), in the order the gradients come.
void allReduceGradients(StepBuilder &sb, SmallVector<Value> &grads, const TrainingOptions &o) {
  GraphBuilder &gb = sb.gb;
  OpBuilder &b = sb.b;
  Type wire = o.allreduceDType == "bf16"   ? Type(b.getBF16Type())
              : o.allreduceDType == "fp16" ? Type(b.getF16Type())
                                           : Type(b.getF32Type());
  const int64_t elementBytes = wire.getIntOrFloatBitWidth() / 8;
  SmallVector<double> bytes;
  for (Value g : grads)
    bytes.push_back(double(cast<RankedTensorType>(g.getType()).getNumElements()) * elementBytes);
  for (auto [first, last] : bucketsOf(bytes, o.bucketMB * 1024.0 * 1024.0)) {
    SmallVector<Value> flat;
    SmallVector<int64_t> sizes;
    for (size_t i = first; i < last; ++i) {
      int64_t n = cast<RankedTensorType>(grads[i].getType()).getNumElements();
      sizes.push_back(n);
      flat.push_back(gb.reshape(grads[i], {n}));
    }
    // The bucket travels in the wire dtype: the precision passes cast it
    // to that dtype at the all_reduce and back to FP32 at the slices.
    Value bucket = gb.concat(flat, 0);
    Value reduced =
        b.create<graph::AllReduceOp>(gb.loc, bucket.getType(), bucket, b.getStringAttr("mean"));
    reduced.getDefiningOp()->setAttr(GraphDialect::kPinnedPrecisionAttr, TypeAttr::get(wire));
    int64_t offset = 0;
    for (size_t i = first; i < last; ++i) {
      Value part = sb.part(reduced, offset, sizes[i - first]);
      offset += sizes[i - first];
      grads[i] = gb.reshape(part, graph::shapeOf(grads[i]));
    }
  }
}

/// Returns the step's results and names them: the four scalars, the
/// states' next values and (--gradient-outputs) the unscaled gradients.
void returnStepResults(OpBuilder &b, func::FuncOp step, Location loc, ArrayRef<Value> scalars,
                       const StepStates &st, ArrayRef<Value> unscaled,
                       const TrainingOptions &o) {
  const SmallVector<State> &states = st.states;
  SmallVector<Value> results(scalars.begin(), scalars.end());
  for (const State &s : states)
    results.push_back(s.next ? s.next : s.current);
  if (o.gradientOutputs)
    results.append(unscaled.begin(), unscaled.end());
  b.create<func::ReturnOp>(loc, results);
  const char *names[] = {"loss", "skipped", "grad_norm", "loss_scale"};
  for (unsigned i = 0; i < 4; ++i)
    step.setResultAttrs(i, mpNameAttrs(b, names[i]));
  for (auto [i, s] : llvm::enumerate(states))
    step.setResultAttrs(4 + i, b.getDictionaryAttr(b.getNamedAttr(
                                   GraphDialect::kStateUpdateAttr, b.getStringAttr(s.name))));
  if (o.gradientOutputs)
    for (size_t i = 0; i < st.numParams; ++i)
      step.setResultAttrs(4 + states.size() + i, mpNameAttrs(b, "grad." + states[i].name));
}

} // namespace

FailureOr<func::FuncOp> buildTrainingStep(func::FuncOp forward, const TrainingOptions &o) {
  if (std::string why = checkTrainingOptions(o); !why.empty())
    return forward.emitError() << why;
  if (!forward.getBody().hasOneBlock())
    return forward.emitError() << "@" << forward.getName() << " must have one block";
  auto module = forward->getParentOfType<ModuleOp>();
  for (const char *suffix : {"", "_loss", "_loss_grad"})
    if (module && module.lookupSymbol(o.name + suffix))
      return forward.emitError() << "@" << o.name << suffix << " exists already";
  FailureOr<unsigned> outputIndex = findOutput(forward, o.output);
  if (failed(outputIndex))
    return failure();
  FailureOr<SmallVector<Param>> params = findParams(forward, o);
  if (failed(params))
    return failure();

  // Attention as one op before differentiating: its gradient recomputes
  // the scores (mp.attention_grad) instead of keeping the S x S
  // probabilities for the unfused softmax's and GEMMs' rules.
  fuseAttention(forward);

  // 1. The loss function and its gradients.
  Type labelsType;
  FailureOr<func::FuncOp> lossFn = buildLossFunction(forward, *params, *outputIndex, o, labelsType);
  if (failed(lossFn))
    return failure();
  GradientOptions gradOptions;
  for (const Param &p : *params)
    gradOptions.wrt.push_back(p.name);
  FailureOr<func::FuncOp> gradFn = buildGradientFunction(*lossFn, gradOptions);
  lossFn->erase();
  if (failed(gradFn))
    return failure();

  // 2. The step's signature: data, labels, then the state.
  bool scaled = o.scaling != TrainingOptions::Scaling::None;
  bool dynamic = o.scaling == TrainingOptions::Scaling::Dynamic;
  StepStates st = collectStates(*params, o, forward.getContext());
  SmallVector<State> &states = st.states;
  OpBuilder b(forward.getContext());
  Value labels;
  FailureOr<func::FuncOp> step = createStepFunction(b, forward, labelsType, st, o, labels);
  if (failed(step))
    return failure();
  Block *body = &step->getBody().front();

  // 3. The gradient function's body, its arguments mapped to the step's.
  b.setInsertionPointToEnd(body);
  StepBuilder sb(b, NameLoc::get(b.getStringAttr("train_step"), forward.getLoc()), o);
  GraphBuilder &gb = sb.gb;
  Value scale = dynamic  ? states[st.scaleIndex].current
                : scaled ? sb.c(o.initScale)
                         : Value();
  Value scaledLoss;
  SmallVector<Value> grads;
  inlineGradients(sb, forward, *gradFn, body, labels, scale, st, scaledLoss, grads);
  gradFn->erase();
  markWeightGradientGemms(grads);
  // From here on the update: FP32 whatever the precision (as PyTorch's
  // optimizers on FP32 .grad), so the gradients enter it exactly.
  PinFp32 pin;
  b.setListener(&pin);

  // 3b. Data parallelism: every rank's scaled gradients and loss, averaged
  // (the gradient of the mean loss over the global batch).
  if (o.dataParallel) {
    allReduceGradients(sb, grads, o);
    scaledLoss = b.create<graph::AllReduceOp>(sb.gb.loc, scaledLoss.getType(), scaledLoss,
                                              b.getStringAttr("mean"));
  }

  // 4. Unscale (1/scale: exact for the powers of two dynamic scaling keeps),
  // the non-finite check over every gradient, the global norm and clipping.
  Value inverse = scaled ? gb.unary<graph::ReciprocalOp>(scale) : Value();
  Value loss = scaled ? gb.mul(scaledLoss, inverse) : scaledLoss;
  Value found = sb.c(0.0), sumSquares = sb.c(0.0);
  SmallVector<Value> unscaled;
  for (Value &g : grads) {
    if (scaled)
      g = gb.mul(g, inverse);
    unscaled.push_back(g);
    found = sb.max(found, sb.nonFinite(g));
    sumSquares = gb.add(sumSquares, sb.sumAll(gb.mul(g, g)));
  }
  // Every rank takes the same decision (the reduced gradients are the same
  // bits everywhere; the flag's max makes it so by construction).
  if (o.dataParallel)
    found = b.create<graph::AllReduceOp>(sb.gb.loc, found.getType(), found, b.getStringAttr("max"));
  Value norm = sb.sqrt(sumSquares);
  if (o.clipNorm > 0) {
    Value coefficient = sb.min(sb.c(1.0), gb.div(sb.c(o.clipNorm), gb.add(norm, sb.c(1e-6))));
    for (Value &g : grads)
      g = gb.mul(g, coefficient);
  }
  Value skip = gb.compare<graph::GreaterOp>(found, sb.c(0.0));

  // 5. The optimizer (torch.optim.SGD / AdamW), on the FP32 masters.
  applyOptimizer(sb, st, grads, skip);
  // 6. The loss-scale update (GradScaler; hysteresis as DeepSpeed's).
  if (dynamic)
    updateLossScale(sb, st, scale, skip);

  // The scale this step used, as a value of its own: an output may not be a
  // state's buffer (the commit of the update after the run would change it).
  Value usedScale = dynamic ? gb.binary<graph::MulOp>(scale, sb.c(1.0))
                    : scaled ? scale
                             : sb.c(1.0);
  b.setListener(nullptr);
  returnStepResults(b, *step, forward.getLoc(), {loss, found, norm, usedScale}, st, unscaled, o);
  return *step;
}

FailureOr<func::FuncOp> buildEvalFunction(func::FuncOp forward, const TrainingOptions &o,
                                           StringRef name) {
  if (!forward.getBody().hasOneBlock())
    return forward.emitError() << "@" << forward.getName() << " must have one block";
  auto module = forward->getParentOfType<ModuleOp>();
  if (module && module.lookupSymbol(name))
    return forward.emitError() << "@" << name << " exists already";
  FailureOr<SmallVector<Param>> params = findParams(forward, o);
  if (failed(params))
    return failure();
  MLIRContext *ctx = forward.getContext();
  SmallVector<Type> argTypes(forward.getArgumentTypes());
  SmallVector<Type> resultTypes(forward.getResultTypes());
  for (const Param &p : *params) {
    argTypes.push_back(p.master.getType());
    resultTypes.push_back(p.master.getType());
  }
  OpBuilder b(ctx);
  b.setInsertionPointAfter(forward);
  auto eval = b.create<func::FuncOp>(forward.getLoc(), name,
                                     FunctionType::get(ctx, argTypes, resultTypes));
  Block *body = eval.addEntryBlock();
  unsigned numArgs = forward.getNumArguments(), numResults = forward.getNumResults();
  for (unsigned i = 0; i < numArgs; ++i)
    if (DictionaryAttr attrs = forward.getArgAttrDict(i))
      eval.setArgAttrs(i, attrs);
  for (unsigned i = 0; i < numResults; ++i)
    if (DictionaryAttr attrs = forward.getResultAttrDict(i))
      eval.setResultAttrs(i, attrs);
  b.setInsertionPointToEnd(body);
  IRMapping mapping;
  mapping.map(forward.getArguments(), body->getArguments().take_front(numArgs));
  SmallVector<Value> updates;
  for (auto [i, p] : llvm::enumerate(*params)) {
    unsigned arg = numArgs + i;
    eval.setArgAttrs(arg, b.getDictionaryAttr({
                              b.getNamedAttr(GraphDialect::kNameAttr, b.getStringAttr(p.name)),
                              b.getNamedAttr(GraphDialect::kStateAttr, b.getStringAttr(p.name)),
                              b.getNamedAttr(GraphDialect::kStateInitAttr, p.master),
                          }));
    eval.setResultAttrs(numResults + i,
                        b.getDictionaryAttr(b.getNamedAttr(GraphDialect::kStateUpdateAttr,
                                                           b.getStringAttr(p.name))));
    Value master = body->getArgument(arg);
    updates.push_back(master);
    if (master.getType() != p.constant.getType()) {
      GraphBuilder gb(b, p.constant.getLoc());
      master = gb.cast(master, cast<RankedTensorType>(p.constant.getType()).getElementType());
    }
    mapping.map(p.constant.getResult(), master);
  }
  Block &fBody = forward.getBody().front();
  for (Operation &op : fBody.without_terminator()) {
    auto constant = dyn_cast<graph::ConstantOp>(op);
    if (!constant || !mapping.contains(constant.getResult()))
      b.clone(op, mapping);
  }
  SmallVector<Value> results;
  for (Value v : fBody.getTerminator()->getOperands())
    results.push_back(mapping.lookupOrDefault(v));
  results.append(updates);
  b.create<func::ReturnOp>(forward.getLoc(), results);
  return eval;
}

//===----------------------------------------------------------------------===//
// --mp-build-training-step
//===----------------------------------------------------------------------===//

namespace {

struct BuildTrainingStepPass : impl::BuildTrainingStepPassBase<BuildTrainingStepPass> {
  using BuildTrainingStepPassBase::BuildTrainingStepPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(funcName);
    if (!forward) {
      module.emitError() << "--mp-build-training-step: no function @" << funcName;
      return signalPassFailure();
    }
    TrainingOptions o;
    auto bad = [&](StringRef what, StringRef value) {
      module.emitError() << "--mp-build-training-step: unknown " << what << " '" << value << "'";
      signalPassFailure();
    };
    if (!parseLoss(lossKind, o.loss))
      return bad("loss", lossKind);
    if (!parseOptimizer(optimizerKind, o.optimizer))
      return bad("optimizer", optimizerKind);
    if (!parseScaling(scalingKind, o.scaling))
      return bad("loss scaling", scalingKind);
    o.output = output;
    o.lr = lr;
    o.momentum = momentum;
    o.weightDecay = weightDecay;
    o.beta1 = beta1;
    o.beta2 = beta2;
    o.eps = eps;
    o.initScale = initScale;
    o.growthFactor = growthFactor;
    o.backoffFactor = backoffFactor;
    o.growthInterval = growthInterval;
    o.hysteresis = hysteresis;
    o.minScale = minScale;
    o.clipNorm = clipNorm;
    o.accumulate = accumulate;
    o.frozen.assign(frozen.begin(), frozen.end());
    o.name = stepName;
    o.dataParallel = dataParallel;
    o.allreduceDType = allreduceDType;
    o.bucketMB = bucketMB;
    o.shardOptimizer = shardOptimizer;
    o.world = world;
    FailureOr<func::FuncOp> step = buildTrainingStep(forward, o);
    if (failed(step))
      return signalPassFailure();
    if (!keepForward) {
      forward.erase();
      if (stepName == "train_step" && !module.lookupSymbol("main"))
        step->setName("main");
    }
  }
};

} // namespace
} // namespace mixprec::passes
