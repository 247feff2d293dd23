//===- Trainer.cpp - `mixprec train`: build, compile, then the loop --------===//
//
// train(config, events): the data are read and checked, the step (and the
// evaluation function) built from the model and compiled at the precision
// to modules in memory; then trainer::runLoop (train/TrainLoop.h)
// runs them on the runtime one batch per run, the session keeping the
// training state. With --save-modules the modules and the facts the loop
// needs are written to a folder instead, for `mixprec-train-run`.
//
// Evaluation runs a second module: the forward graph whose trained
// constants are state of the same names (buildEvalFunction), into which the
// training session's master weights are copied by name.
//
// When the loss scale cannot recover (maxSkippedInARow skipped steps in a
// row) the loop stops with kTrainScaleStuck after a diagnosis from here
// that reruns the failing step on the interpreter and names the first op
// whose value was not finite.
//
//===----------------------------------------------------------------------===//
#include "compiler/Train/Trainer.h"

#include "codegen/Cuda/CudaProgram.h"
#include "codegen/Cuda/NvrtcCompiler.h"
#include "codegen/ModuleWriter.h"
#include "common/Escape.h"
#include "common/FileIO.h"
#include "common/Shapes.h"
#include "compiler/Compile/Compile.h"
#include "compiler/Compile/Session.h"
#include "compiler/Interpreter/Interpreter.h"
#include "compiler/Report/Report.h"
#include "compiler/Report/RunReport.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "mixprec/runtime.hpp"
#include "passes/Training/TrainingStep.h"
#include "runtime/format/ModuleHash.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>

using namespace mlir;
using mixprec::passes::TrainingOptions;

namespace mixprec::compiler {
namespace {

using trainer::Column;
using trainer::LossKind;
using trainer::StepFacts;
using trainer::StepModules;

/// What one train() call works with: its configuration, where it reports,
/// and how it ends.
struct Ctx {
  const TrainConfig &c;
  const TrainEvents &events;
  TrainOutcome &out;

  int fail(const std::string &message, int status = kTrainError) {
    out.status = status;
    out.error = common::escapeControls(message);
    return status;
  }
  int usage(const std::string &message) { return fail(message, kTrainUsage); }
  void print(const std::string &line) {
    if (events.print)
      events.print(line);
  }
};

/// An MLIR context prepared for models, with the first error emitted on it.
struct Compilation {
  Compilation() : first(context) { prepareContext(context); }
  /// Fails `ctx` with the error ("SUBJECT: ERROR") and its notes.
  int fail(Ctx &ctx, llvm::StringRef subject = "") {
    std::string line = first.message().empty() ? "failed without a diagnostic" : first.message();
    ctx.out.notes = first.notes();
    return ctx.fail(subject.empty() ? line : subject.str() + ": " + line);
  }
  mlir::MLIRContext context;
  FirstError first;
};

double millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

/// What a module is built from: the step, the evaluation function, or (for
/// the report's picture) the forward graph alone.
enum class Build { Step, Eval, Forward };

/// Bytes of a tensor type's elements (sub-byte types round up).
int64_t tensorBytes(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked || !ranked.hasStaticShape())
    return 0;
  return ranked.getNumElements() * int64_t((ranked.getElementTypeBitWidth() + 7) / 8);
}

/// The FLOPs of the annotated step (every op's getFlopCount: the forward and
/// backward as they run, each micro-batch) and the bytes of its state by
/// kind; the arena comes from the module writer's plan.
void collectCosts(func::FuncOp step, double &flops, trainer::StepMemory &memory) {
  flops = 0;
  step.walk([&](Operation *op) {
    if (auto policy = dyn_cast<graph::PrecisionPolicyOpInterface>(op))
      flops += double(policy.getFlopCount());
  });
  memory = trainer::StepMemory();
  Block &body = step.front();
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    auto name = step.getArgAttrOfType<StringAttr>(i, graph::GraphDialect::kStateAttr);
    if (!name)
      continue;
    llvm::StringRef n = name.getValue();
    int64_t bytes = tensorBytes(step.getArgumentTypes()[i]);
    if (!trainer::isParameterState(n.str())) {
      (trainer::isOptimizerState(n.str()) ? memory.optimizerState : memory.otherState) += bytes;
      continue;
    }
    // A parameter: its FP32 master, its FP32 gradient, and the copy the
    // GEMMs read (the narrowest cast of it, else the master itself).
    memory.masterWeights += bytes;
    memory.gradients += bytes;
    int64_t copy = bytes;
    for (Operation *user : body.getArgument(i).getUsers())
      if (isa<graph::CastOp, graph::QuantizeOp>(user) && user->getNumResults() == 1)
        copy = std::min(copy, tensorBytes(user->getResult(0).getType()));
    memory.weights += copy == bytes ? 0 : copy;
  }
}

/// The annotated forward graph as the run report draws it: one node per op
/// (constants and the return left out) with its result dtype, one edge per
/// operand.
std::string graphJson(func::FuncOp forward) {
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::DenseMap<Operation *, int> ids;
  os << "{\"nodes\": [";
  int next = 0;
  forward.walk([&](Operation *op) {
    if (op == forward.getOperation() || isa<func::ReturnOp>(op) ||
        op->hasTrait<OpTrait::ConstantLike>() || op->getNumResults() == 0)
      return;
    std::string dtype;
    llvm::raw_string_ostream ts(dtype);
    if (auto t = dyn_cast<ShapedType>(op->getResult(0).getType()))
      ts << t.getElementType();
    else
      ts << op->getResult(0).getType();
    ids[op] = next;
    os << (next ? ", " : "") << "{\"id\": " << next << ", \"name\": ";
    llvm::json::OStream(os).value(nodeLabel(op));
    os << ", \"op\": ";
    llvm::json::OStream(os).value(op->getName().getStringRef());
    os << ", \"dtype\": ";
    llvm::json::OStream(os).value(dtype);
    os << "}";
    ++next;
  });
  os << "], \"edges\": [";
  bool first = true;
  forward.walk([&](Operation *op) {
    auto to = ids.find(op);
    if (to == ids.end())
      return;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (auto from = ids.find(def); from != ids.end()) {
          os << (first ? "" : ", ") << "[" << from->second << ", " << to->second << "]";
          first = false;
        }
  });
  os << "]}";
  return out;
}

/// Loads the model with `batch` samples per run and builds the step or the
/// evaluation function as its only function (@main). Null after printing
/// the error.
/// `classes`, when given, gets the size of the last dim of the output the
/// loss reads (the classes of cross-entropy).
OwningOpRef<ModuleOp> buildGraph(Ctx &ctx, Compilation &command, Build build,
                                 const std::vector<Column> &columns, int64_t batch,
                                 int64_t *classes = nullptr) {
  const TrainConfig &t = ctx.c;
  LoadOptions load;
  load.inputShapes = t.shapes;
  for (const Column &c : columns)
    load.dataShapes[c.name] = c.batchShape(batch);
  // The labels column (last, for every loss but the model's: checkConfig)
  // is the step's, not the model's.
  if (!columns.empty() && t.step.loss != TrainingOptions::Loss::Model)
    load.dataShapes.erase(columns.back().name);
  load.dataMustBeInputs = true;
  SessionOptions options;
  options.model = t.model;
  options.load = std::move(load);
  CompileSession session(command.context, std::move(options));
  OwningOpRef<ModuleOp> module = session.load();
  if (!module) {
    command.fail(ctx);
    return nullptr;
  }
  func::FuncOp forward = session.entry(*module);
  if (!forward) {
    command.fail(ctx, t.model);
    return nullptr;
  }
  if (classes) {
    *classes = 0;
    for (unsigned i = 0; i < forward.getNumResults(); ++i) {
      auto name = forward.getResultAttrOfType<StringAttr>(i, graph::GraphDialect::kNameAttr);
      if (t.step.output.empty() ? i == 0 : name && name.getValue() == t.step.output)
        if (auto type = dyn_cast<RankedTensorType>(forward.getResultTypes()[i]);
            type && type.getRank() > 0)
          *classes = type.getShape().back();
    }
  }
  if (build == Build::Forward) {
    forward.setName("main");
    return module;
  }
  TrainingOptions o = t.step;
  o.name = build == Build::Step ? "mixprec_train_step" : "mixprec_eval";
  o.gradientOutputs = build == Build::Step && t.loop.compareEvery > 0;
  FailureOr<func::FuncOp> built = build == Build::Step
                                      ? passes::buildTrainingStep(forward, o)
                                      : passes::buildEvalFunction(forward, o, o.name);
  if (failed(built)) {
    command.fail(ctx, t.model);
    return nullptr;
  }
  forward.erase();
  built->setName("main");
  return module;
}

/// The compile session of a step or evaluation graph built from `model`:
/// the precision pipeline at `precision` on a graph without a plan.
CompileSession stepSession(Compilation &command, const std::string &model,
                           const passes::PrecisionPipelineOptions &precision) {
  SessionOptions options;
  options.model = model;
  options.precision = &precision;
  options.existing = ExistingPlan::Refuse;
  return CompileSession(command.context, std::move(options));
}

/// Compiles the graph at `precision` to a module image with CUDA code for
/// sm_`smVersion` (0: none). 0, or the exit status after failing ctx.
int compileImage(Ctx &ctx, Compilation &command, ModuleOp module,
                 const passes::PrecisionPipelineOptions &precision, int smVersion,
                 const std::string &sideFileName, codegen::ModuleImage &out,
                 double *flops = nullptr, trainer::StepMemory *memory = nullptr) {
  const std::string &model = ctx.c.model;
  CompileSession session = stepSession(command, model, precision);
  if (failed(session.applyPrecision(module)))
    return command.fail(ctx, model);
  double stepFlops = 0;
  if (memory)
    if (FailureOr<func::FuncOp> step = entryFunction(module); succeeded(step))
      collectCosts(*step, stepFlops, *memory);
  if (flops)
    *flops = stepFlops;
  codegen::CudaCompileOptions cuda;
  cuda.smVersion = smVersion;
  cuda.warn = [&ctx](const std::string &message) { ctx.print("warning: " + message); };
  codegen::CudaCompileStats cudaStats;
  codegen::ModuleWriteOptions writeOptions;
  writeOptions.producer = "mixprec train";
  codegen::ModuleStats stats;
  FailureOr<codegen::ModuleImage> image =
      session.image(module, sideFileName, writeOptions, stats, smVersion ? &cuda : nullptr,
                    smVersion ? &cudaStats : nullptr);
  if (failed(image))
    return command.fail(ctx, model);
  if (memory)
    memory->arena = stats.arenaBytes;
  out = std::move(*image);
  return 0;
}

/// Loads a module image on the runtime.
int loadImage(Ctx &ctx, const codegen::ModuleImage &image, mixprec::Module &out) {
  mixprec_load_options_t load = MIXPREC_LOAD_OPTIONS_INIT;
  load.side_file_data = image.sideFile.data();
  load.side_file_size = image.sideFile.size();
  if (mixprec::Status s =
          mixprec::Module::loadFromMemory(image.module.data(), image.module.size(), out, &load);
      !s.ok())
    return ctx.fail(ctx.c.model + ": the compiled step: " + s.message());
  return 0;
}

/// The modules of one run at `precision`, with CUDA code for sm_`smVersion`
/// (0: none): the step and, with test data, the evaluation function. Sets
/// `classes` when given (the step's). When saving, writes them to `saveTo`
/// instead of loading them.
int buildModules(Ctx &ctx, Compilation &command, const passes::PrecisionPipelineOptions &precision,
                 const std::vector<Column> &train, const std::vector<Column> &test,
                 int smVersion, StepModules &out, int64_t *classes = nullptr,
                 const std::string &saveTo = "", double *flops = nullptr,
                 trainer::StepMemory *memory = nullptr) {
  const TrainConfig &t = ctx.c;
  for (Build build : {Build::Step, Build::Eval}) {
    if (build == Build::Eval && test.empty())
      break;
    OwningOpRef<ModuleOp> graph =
        build == Build::Step
            ? buildGraph(ctx, command, build, train, t.batch, classes)
            : buildGraph(ctx, command, build, test, trainer::evalBatchFor(test.front().rows()));
    if (!graph)
      return kTrainError;
    std::string path;
    if (!saveTo.empty()) {
      llvm::SmallString<256> p(saveTo);
      llvm::sys::path::append(
          p, build == Build::Step ? trainer::kSavedStepFile : trainer::kSavedEvalFile);
      path = std::string(p);
    }
    codegen::ModuleImage image;
    const bool step = build == Build::Step;
    if (int rc = compileImage(ctx, command, *graph, precision, smVersion,
                              path.empty() ? "train.weights" : codegen::sideFileNameFor(path),
                              image, step ? flops : nullptr, step ? memory : nullptr))
      return rc;
    if (!path.empty()) {
      std::string error;
      if (!codegen::writeModuleFiles(path, image, error))
        return ctx.fail(error);
      ctx.print("wrote " + path);
      continue;
    }
    if (build == Build::Step) {
      if (int rc = loadImage(ctx, image, out.step))
        return rc;
    } else {
      out.eval.emplace();
      if (int rc = loadImage(ctx, image, *out.eval))
        return rc;
    }
  }
  return 0;
}

/// Reruns the step on the interpreter (the annotated graph, the session's
/// states, the failing batch) and names the first op whose value is not
/// finite; "" when it cannot tell.
std::string diagnoseOverflow(Ctx &ctx, const std::vector<Column> &columns,
                             const mixprec::Session &session,
                             const std::vector<HostTensor> &batch) {
  // Errors of this rerun are not the run's: they leave the outcome as it is.
  TrainOutcome scratch;
  Ctx quiet{ctx.c, TrainEvents(), scratch};
  Compilation command;
  OwningOpRef<ModuleOp> graph = buildGraph(quiet, command, Build::Step, columns, ctx.c.batch);
  if (!graph)
    return "";
  CompileSession compile = stepSession(command, ctx.c.model, *ctx.c.precision);
  func::FuncOp func;
  if (failed(compile.applyPrecision(*graph)) || !(func = compile.entry(*graph)))
    return "";
  std::vector<HostTensor> inputs = batch;
  for (unsigned i = inputs.size(); i < func.getNumArguments(); ++i) {
    auto name = func.getArgAttrOfType<StringAttr>(i, graph::GraphDialect::kStateAttr);
    if (!name)
      return "";
    auto type = cast<RankedTensorType>(func.getArgumentTypes()[i]);
    std::vector<float> values(type.getNumElements());
    if (!session.readState(name.str().c_str(), values.data(), values.size() * sizeof(float)).ok())
      return "";
    inputs.push_back(
        HostTensor::makeFloat(std::vector<int64_t>(type.getShape()), std::move(values)));
  }
  Operation *first = nullptr;
  std::string firstValue;
  Interpreter interpreter(func);
  interpreter.setObserver([&](Operation *op, llvm::ArrayRef<const HostTensor *> outputs) {
    if (first)
      return;
    for (const HostTensor *out : outputs)
      for (float v : out->floats)
        if (!std::isfinite(v)) {
          first = op;
          firstValue = std::isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf";
          return;
        }
  });
  std::vector<HostTensor> outputs;
  std::string error;
  if (!interpreter.prepare(error) || !interpreter.run(inputs, outputs, error) || !first)
    return "";
  std::string label = nodeLabel(first);
  // An op on a graph input carries the graph's location: name the input.
  for (Value operand : first->getOperands())
    if (auto arg = dyn_cast<BlockArgument>(operand); arg && arg.getOwner() == &func.front())
      if (auto name =
              func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), graph::GraphDialect::kNameAttr);
          name && (label.empty() || isa<UnknownLoc, NameLoc>(first->getLoc()) ||
                   label == nodeLabel(func.getOperation()))) {
        label = "";
        std::string text;
        llvm::raw_string_ostream os(text);
        os << "the result of " << first->getName().getStringRef() << " on graph input '"
           << name.getValue() << "' (" << first->getResult(0).getType()
           << "): the data overflows the plan's dtype, in the forward pass";
        return "the first non-finite value (" + firstValue + ") is " + text;
      }
  std::string type;
  llvm::raw_string_ostream os(type);
  if (first->getNumResults())
    os << first->getResult(0).getType();
  std::string text = "the first non-finite value (" + firstValue + ") is the result of " +
                     first->getName().getStringRef().str() +
                     (label.empty() ? "" : " '" + label + "'") + " (" + type + ")";
  // Gradient ops are named after the forward op (GraphGradients.cpp:
  // NAME.grad; Autodiff.cpp: NAME.adjoint for a sum of adjoints).
  llvm::StringRef l(label);
  if (l.consume_back(".grad") || l.consume_back(".adjoint"))
    text += ", in the backward pass: the gradient of '" + l.str() + "' overflows";
  else
    text += ", in the forward pass";
  return text;
}

/// The --precision the step was compiled at, as the option spells it.
std::string precisionOptionsText(passes::PrecisionPipelineOptions &options) {
  std::string s;
  llvm::raw_string_ostream os(s);
  options.print(os);
  return s;
}

/// The configuration's problems that need no file read: "" or the error.
std::string checkConfig(const TrainConfig &t) {
  const TrainingOptions &o = t.step;
  const bool modelLoss = o.loss == TrainingOptions::Loss::Model;
  if (t.data.empty())
    return "train: no training data: give --data NAME=FILE.npy for each graph input";
  if (!modelLoss && !t.labels)
    return std::string("train: --loss ") +
           (o.loss == TrainingOptions::Loss::Mse ? "mse needs --labels FILE.npy (the targets)"
                                                 : "ce needs --labels FILE.npy (a class per sample)");
  if (modelLoss && (t.labels || t.testLabels))
    return "train: --loss model takes no --labels: the model's output is the loss";
  if (!t.testData.empty() && !modelLoss && !t.testLabels)
    return "train: --test-data needs --test-labels";
  if (t.testData.empty() && t.testLabels)
    return "train: --test-labels needs --test-data";
  if (t.batch < 1)
    return "train: --batch, --log-every and --max-skipped-in-a-row must be >= 1; --steps, "
           "--epochs, --eval-every and --checkpoint-every >= 0";
  if (!t.compare.empty() && t.compare != "fp32")
    return "train: --compare takes fp32, got '" + t.compare + "'";
  if (!t.compare.empty() && (!t.loop.checkpoint.empty() || !t.loop.resume.empty()))
    return "train: --compare does not combine with --checkpoint or --resume (the FP32 run "
           "beside is not checkpointed)";
  if (t.loop.compareEvery && t.compare.empty())
    return "train: --compare-every needs --compare fp32";
  if (!t.saveModules.empty() && !t.compare.empty())
    return "train: --save-modules does not combine with --compare (save each precision to "
           "its own folder)";
  if (!t.precision)
    return "train: no precision options given";
  if (std::string why = passes::checkTrainingOptions(o); !why.empty())
    return "train: " + why;
  return "";
}

/// train's body.
int run(Ctx &ctx) {
  const TrainConfig &t = ctx.c;
  const TrainingOptions &o = t.step;
  if (std::string why = checkConfig(t); !why.empty())
    return ctx.usage(why);
  trainer::LoopInputs in;
  in.options = t.loop;
  if (std::string why = trainer::checkLoopOptions(in.options, !t.testData.empty()); !why.empty())
    return ctx.usage(why);
  in.inputs.emplace_back(t.model, "the model " + t.model);
  // FP8 training scales as Transformer Engine's default recipe does:
  // delayed scaling from an amax history kept in the step's state.
  passes::PrecisionPipelineOptions &precision = *t.precision;
  if (precision.precision.getValue() == passes::Precision::FP8 && !precision.fp8Scaling.hasValue())
    precision.fp8Scaling = passes::Fp8Scaling::Delayed;

  StepFacts &facts = in.facts;
  facts.loss = o.loss == TrainingOptions::Loss::Model ? LossKind::Model
               : o.loss == TrainingOptions::Loss::Mse ? LossKind::Mse
                                                      : LossKind::CrossEntropy;
  facts.accumulate = o.accumulate;
  facts.evalOutput = o.output;
  facts.model = t.model;
  facts.precisionOptions = precisionOptionsText(precision);
  facts.precisionName = passes::precisionName(precision.precision.getValue());
  facts.scaling = o.scaling == TrainingOptions::Scaling::Dynamic  ? "dynamic"
                  : o.scaling == TrainingOptions::Scaling::Static ? "static"
                                                                  : "none";
  facts.minScale = o.minScale;
  facts.batch = t.batch;
  facts.dataParallel = o.dataParallel;
  facts.shardWorld = o.shardOptimizer ? o.world : 0;
  in.collective = t.collective;
  in.collectiveTimeout = t.collectiveTimeout;
  const int64_t world = t.collective ? t.collective->worldSize() : 1;
  std::string error;
  if (!fileFingerprint(t.model, facts.modelFingerprint, error))
    return ctx.fail(error);

  // The data.
  std::string labelsName = trainer::labelsNameFor(facts.loss);
  if (!trainer::readColumns(t.data, t.labels, labelsName, "--data", in.train, in.inputs, error))
    return ctx.fail(error);
  if (!t.testData.empty() && !trainer::readColumns(t.testData, t.testLabels, labelsName,
                                                   "--test-data", in.test, in.inputs, error))
    return ctx.fail(error);
  if (std::string why = trainer::checkStepRows(t.batch * world, o.accumulate,
                                               in.train.front().rows(), in.train.front().path);
      !why.empty())
    return ctx.fail(world > 1 ? why + " (" + std::to_string(world) + " ranks x --batch " +
                                    std::to_string(t.batch) + ")"
                              : why);
  facts.evalBatch = in.test.empty() ? 0 : trainer::evalBatchFor(in.test.front().rows());

  // The CUDA code's architecture: --arch, else the device's when training
  // on one, else none.
  int smVersion = 0;
  if (!t.arch.empty() && !codegen::parseCudaArch(t.arch, smVersion, error))
    return ctx.usage("train: --arch: " + error);
  if (t.arch.empty() && t.saveModules.empty())
    // The device's architecture (CUDA, or auto with a device), none on the CPU.
    smVersion = t.loop.backend == MIXPREC_BACKEND_CPU ? 0 : deviceSmVersion();

  // The step (and the evaluation) at the precision, and at FP32 beside it.
  auto start = std::chrono::steady_clock::now();
  Compilation command;
  if (!t.saveModules.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(t.saveModules))
      return ctx.fail(t.saveModules + ": cannot create the folder: " + ec.message());
    if (int rc = buildModules(ctx, command, precision, in.train, in.test, smVersion, in.primary,
                              &facts.classes, t.saveModules))
      return rc;
    llvm::SmallString<256> path(t.saveModules);
    llvm::sys::path::append(path, trainer::kSavedFactsFile);
    std::string text = trainer::serializeFacts(facts);
    if (!common::writeFileAtomically(std::string(path), text.data(), text.size(), error))
      return ctx.fail(error);
    ctx.print(llvm::formatv("wrote {0}; compiled in {1:f2} s", path,
                            millisecondsSince(start) / 1000)
                  .str());
    return 0;
  }
  in.costs.known = true;
  if (int rc = buildModules(ctx, command, precision, in.train, in.test, smVersion, in.primary,
                            &facts.classes, "", &in.costs.flopsPerStep, &in.costs.memory))
    return rc;
  passes::PrecisionPipelineOptions fp32Options;
  fp32Options.precision = passes::Precision::FP32;
  std::optional<Compilation> compareCommand;
  const bool wantsReport = !t.loop.metrics.empty() || !t.loop.report.empty();
  if (!t.compare.empty()) {
    in.compare.emplace();
    in.compare->label = t.compare;
    compareCommand.emplace();
    if (int rc = buildModules(ctx, *compareCommand, fp32Options, in.train, in.test, smVersion,
                              *in.compare, nullptr, "", nullptr, &in.costs.fp32Memory))
      return rc;
  } else if (wantsReport) {
    // The memory metric's FP32 plan of the same step.
    Compilation fp32Command;
    OwningOpRef<ModuleOp> graph =
        buildGraph(ctx, fp32Command, Build::Step, in.train, t.batch);
    codegen::ModuleImage image;
    if (!graph || compileImage(ctx, fp32Command, *graph, fp32Options, 0, "train.weights", image,
                               nullptr, &in.costs.fp32Memory))
      return kTrainError;
  }
  if (wantsReport) {
    // The picture of the model, as the precision plan assigns it.
    Compilation forwardCommand;
    OwningOpRef<ModuleOp> graph =
        buildGraph(ctx, forwardCommand, Build::Forward, in.train, t.batch);
    if (!graph || failed(compilePrecision(*graph, precision, ExistingPlan::Refuse)))
      return forwardCommand.fail(ctx, t.model);
    if (FailureOr<func::FuncOp> forward = entryFunction(*graph); succeeded(forward))
      in.costs.graphJson = graphJson(*forward);
  }
  in.renderReport = [](const std::string &csvPath, const std::string &csv,
                       const std::string &metricsJson, std::string &html, std::string &error) {
    return renderRunReport({{csvPath, csv}}, metricsJson, html, error);
  };
  in.origin = llvm::formatv("compiled in {0:f2} s", millisecondsSince(start) / 1000).str();
  in.diagnose = [&ctx, &in](const mixprec::Session &session,
                            const std::vector<HostTensor> &batch) {
    return diagnoseOverflow(ctx, in.train, session, batch);
  };
  TrainOutcome outcome = trainer::runLoop(in, ctx.events);
  ctx.out = outcome;
  return outcome.status;
}

} // namespace

TrainingOptions::Scaling defaultScaling(passes::Precision precision) {
  return precision == passes::Precision::FP16 ? TrainingOptions::Scaling::Dynamic
                                              : TrainingOptions::Scaling::None;
}

bool fileFingerprint(const std::string &path, std::string &out, std::string &error, bool xxh64) {
  std::string bytes;
  if (!common::readRegularFile(path, bytes, error))
    return false;
  const uint64_t hash = xxh64 ? runtime::xxh64(bytes.data(), bytes.size())
                              : runtime::fnv1a64(bytes.data(), bytes.size());
  out = std::string(xxh64 ? "xxh64 " : "") + llvm::utohexstr(hash, /*LowerCase=*/true) + ":" +
        std::to_string(bytes.size());
  return true;
}

TrainOutcome train(const TrainConfig &config, const TrainEvents &events) {
  TrainOutcome outcome;
  Ctx ctx{config, events, outcome};
  int status = run(ctx);
  if (status != 0 && outcome.status == 0)
    ctx.fail("train failed without a message", status);
  outcome.status = status;
  return outcome;
}

} // namespace mixprec::compiler
