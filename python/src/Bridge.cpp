//===- Bridge.cpp - the compile API for the Python extension ---------------===//
//
// Built like the rest of mixprec (no exceptions, no RTTI): compiles through
// the compile session (compiler/Compile/Session.h), as `mixprec compile`,
// `report` and `validate` do, with arrays from Python where the CLI reads
// files, and the report library.
//
//===----------------------------------------------------------------------===//
#include "python/src/Bridge.h"

#include "compiler/Train/Trainer.h"

#include "Version.h"

#include "codegen/Cuda/NvrtcCompiler.h"
#include "codegen/ModuleWriter.h"
#include "common/FileIO.h"
#include "common/numerics/Rounding.h"
#include "common/Escape.h"
#include "compiler/Compile/Compile.h"
#include "compiler/Compile/Session.h"
#include "compiler/Report/Report.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <mutex>

using namespace mlir;
using mixprec::compiler::HostTensor;

namespace mixprec::python {
namespace {

/// A failure of kind `kind` with `message` as the CLI prints it (control
/// characters escaped, so it stays one line).
Failure failure(Failure::Kind kind, const std::string &message,
                const std::vector<std::string> &notes = {}) {
  Failure f;
  f.kind = kind;
  f.message = common::escapeControls(message);
  for (const std::string &note : notes)
    f.notes.push_back(common::escapeControls(note));
  return f;
}

/// The first error on the context as a compile failure, "SUBJECT: " first
/// when `subject` is not empty (as DiagnosticCapture::fail prints it).
Failure compileFailure(const compiler::FirstError &first, const std::string &subject = "") {
  std::string line = first.message().empty() ? "failed without a diagnostic" : first.message();
  return failure(Failure::Kind::Compile, subject.empty() ? line : subject + ": " + line,
                 first.notes());
}

/// Parses the precision options; a bad value is an invalid argument in the
/// words the CLI uses for the flag.
Failure parseOptions(const std::string &text, passes::PrecisionPipelineOptions &options) {
  // The option error handler is process-wide (the CLI parses once): parses
  // from Python threads take turns.
  static std::mutex parsing;
  std::lock_guard<std::mutex> turn(parsing);
  std::string message;
  {
    passes::ScopedOptionErrorHandler handler(
        [&](const llvm::cl::Option &option, llvm::StringRef argName, const std::string &why) {
          if (message.empty())
            message = "--" + (argName.empty() ? option.ArgStr : argName).str() +
                      (llvm::StringRef(why).starts_with("takes ") ? " " : ": ") + why;
        });
    std::string parserErrors;
    llvm::raw_string_ostream errors(parserErrors);
    if (succeeded(options.parseFromString(text, errors)))
      return {};
    if (message.empty())
      message = parserErrors.empty() ? "bad options '" + text + "'" : parserErrors;
  }
  while (!message.empty() && message.back() == '\n')
    message.pop_back();
  return failure(Failure::Kind::InvalidArgument, message);
}

/// Converts the arrays given for `func`'s inputs (in the CLI's words, with
/// `flag` for the file flag) into host tensors; inputs not given stay
/// unset in `given`.
Failure convertArrays(func::FuncOp func, const compiler::GraphSignature &sig,
                      const NamedArrays &arrays, const std::string &subject,
                      const std::string &what, std::vector<HostTensor> &inputs,
                      std::vector<bool> &given) {
  inputs.assign(sig.inputs.size(), HostTensor());
  given.assign(sig.inputs.size(), false);
  for (const auto &[name, array] : arrays) {
    size_t index = sig.inputs.size();
    for (size_t i = 0; i < sig.inputs.size(); ++i)
      if (sig.inputs[i].name == name)
        index = i;
    if (index == sig.inputs.size()) {
      std::string known;
      for (const compiler::TensorSpec &s : sig.inputs)
        known += (known.empty() ? "" : ", ") + s.name;
      return failure(Failure::Kind::InvalidArgument, what + " '" + name + "': the model has no input '" +
                                                         name + "' (its inputs: " + known + ")");
    }
    std::string error;
    const compiler::TensorSpec &spec = sig.inputs[index];
    if (!compiler::hostTensorFromNpy(array, compiler::kindOfType(spec.elementType), spec.shape,
                                     subject, name, inputs[index], error))
      return failure(Failure::Kind::InvalidArgument, error);
    given[index] = true;
  }
  std::string error;
  if (!compiler::initialStates(func, sig, given, inputs, error))
    return failure(Failure::Kind::InvalidArgument, subject + ": " + error);
  if (!arrays.empty())
    for (size_t i = 0; i < sig.inputs.size(); ++i)
      if (!given[i])
        return failure(Failure::Kind::InvalidArgument,
                       what + ": input '" + sig.inputs[i].name +
                           "' not given (give every input, or none for random ones)");
  return {};
}

/// A context prepared for mixprec models, with its first error kept.
struct Context {
  Context() : first(context) { compiler::prepareContext(context); }
  MLIRContext context;
  compiler::FirstError first;
};

/// The compile session of a request (the CLI's sessionOptions, with
/// arrays for files): its shapes, the shapes of the calibration arrays
/// (they size dynamic dims), those arrays as calibration inputs (a bad one
/// goes to `inputsFailure` in the CLI's words), and `precision`. The files
/// the model reads go to `files` when given.
compiler::SessionOptions sessionOptions(const CompileRequest &request,
                                        const passes::PrecisionPipelineOptions &precision,
                                        std::vector<std::string> *files,
                                        Failure &inputsFailure) {
  compiler::SessionOptions options;
  options.model = request.path;
  options.load.inputShapes = request.shapes;
  if (files)
    options.load.onExternalFile = [files](const std::string &path) { files->push_back(path); };
  for (const auto &[name, array] : request.calibrate)
    options.load.dataShapes.emplace(name, array.shape);
  if (!request.calibrate.empty())
    options.calibrationInputs =
        [&request, &inputsFailure](func::FuncOp func) -> FailureOr<std::vector<HostTensor>> {
      std::vector<HostTensor> inputs;
      std::vector<bool> given;
      const std::string &model = request.displayName;
      if (Failure f = convertArrays(func, compiler::getSignature(func), request.calibrate, model,
                                    "calibrate", inputs, given)) {
        f.message = model + ": " + f.message;
        inputsFailure = f;
        return mlir::failure();
      }
      return inputs;
    };
  options.precision = &precision;
  options.existing =
      request.precisionGiven ? compiler::ExistingPlan::Refuse : compiler::ExistingPlan::Keep;
  return options;
}

/// The failure of the session's failed step, as the CLI prints it: a load
/// error names the file itself; a bad calibration array is `inputsFailure`.
Failure sessionFailure(const Context &ctx, const compiler::CompileSession &session,
                       const CompileRequest &request, const Failure &inputsFailure) {
  switch (session.failedStep()) {
  case compiler::SessionStep::Load:
    return compileFailure(ctx.first);
  case compiler::SessionStep::CalibrationInputs:
    return inputsFailure;
  default:
    return compileFailure(ctx.first, request.displayName);
  }
}

/// Loads, calibrates and runs the precision pipeline: `mixprec compile`'s
/// compileModel with the request for its command line.
Failure loadPlan(Context &ctx, const CompileRequest &request, OwningOpRef<ModuleOp> &module,
                 std::vector<std::string> *files = nullptr) {
  passes::PrecisionPipelineOptions options;
  if (Failure f = parseOptions(request.options, options))
    return f;
  if (files) {
    files->push_back(request.path);
    if (!options.policyFile.getValue().empty())
      files->push_back(options.policyFile);
  }
  Failure inputsFailure;
  compiler::CompileSession session(ctx.context, sessionOptions(request, options, files, inputsFailure));
  module = session.plan();
  if (!module)
    return sessionFailure(ctx, session, request, inputsFailure);
  return {};
}

using compiler::ReferenceAndPlan;

/// Loads the reference and compiles the plan, as `mixprec report` does.
Failure loadReferenceAndPlan(Context &ctx, const CompileRequest &request, ReferenceAndPlan &out) {
  passes::PrecisionPipelineOptions options;
  if (Failure f = parseOptions(request.options, options))
    return f;
  Failure inputsFailure;
  compiler::CompileSession session(ctx.context,
                            sessionOptions(request, options, nullptr, inputsFailure));
  if (failed(session.referenceAndPlan(out)))
    return sessionFailure(ctx, session, request, inputsFailure);
  return {};
}

/// The plan info report and validate print, from the request's options.
compiler::PlanInfo planInfo(const CompileRequest &request) {
  passes::PrecisionPipelineOptions options;
  (void)parseOptions(request.options, options); // parsed before, by loadPlan
  return {request.displayName, options.precision, options.policyFile};
}

/// A JSON document as `--json` writes it (two-space indent, newline).
std::string jsonText(llvm::json::Value document) {
  std::string json;
  llvm::raw_string_ostream os(json);
  os << llvm::formatv("{0:2}", document) << "\n";
  return json;
}

class Compiled final : public CompiledModel {
public:
  Context ctx;
  OwningOpRef<ModuleOp> module;
  std::string displayName;

  std::string ir(bool elideWeights) override {
    std::string text;
    llvm::raw_string_ostream os(text);
    compiler::printModule(*module, os, elideWeights);
    return text;
  }

  Failure image(const std::string &sideFileName, int smVersion, std::vector<uint8_t> &bytes,
                std::vector<uint8_t> &sideFile) override {
    // buildModule lowers the graph it is given: a clone keeps the plan.
    OwningOpRef<ModuleOp> lowered = module->clone();
    codegen::ModuleWriteOptions options;
    options.producer = producer();
    codegen::ModuleStats stats;
    codegen::CudaCompileOptions cuda;
    cuda.smVersion = smVersion;
    cuda.warn = [](const std::string &) {}; // the kernel cache turns itself off quietly
    FailureOr<codegen::ModuleImage> built = compiler::buildModule(
        *lowered, sideFileName, options, stats, smVersion > 0 ? &cuda : nullptr);
    if (failed(built))
      return compileFailure(ctx.first, displayName);
    bytes = std::move(built->module);
    sideFile = std::move(built->sideFile);
    return {};
  }

  std::vector<std::string> files; ///< what it was made from

  const std::vector<std::string> &sources() const override { return files; }

  Failure save(const std::string &path, int smVersion) override {
    if (Failure f = checkNotASource(files, path, displayName))
      return f;
    codegen::ModuleImage built;
    if (Failure f = image(codegen::sideFileNameFor(path), smVersion, built.module,
                          built.sideFile))
      return f;
    if (failed(compiler::writeModule(ctx.context, path, built)))
      return failure(Failure::Kind::Io,
                     ctx.first.message().empty() ? path + ": cannot write" : ctx.first.message());
    return {};
  }
};

} // namespace

Failure checkNotASource(const std::vector<std::string> &sources, const std::string &path,
                        const std::string &module) {
  for (const std::string &output : {path, codegen::sideFilePathFor(path)})
    for (const std::string &source : sources)
      if (common::sameFile(output, source))
        return failure(Failure::Kind::Io,
                       output + ": cannot write: it is a file the module " + module +
                           " was made from (" + source + "); outputs never replace inputs");
  return {};
}

std::vector<std::string> loadedModuleSources(const std::string &path) {
  return {path, codegen::sideFilePathFor(path)};
}

Failure compileModel(const CompileRequest &request, std::unique_ptr<CompiledModel> &out) {
  auto compiled = std::make_unique<Compiled>();
  compiled->displayName = request.displayName;
  if (Failure f = loadPlan(compiled->ctx, request, compiled->module, &compiled->files))
    return f;
  out = std::move(compiled);
  return {};
}

Failure report(const CompileRequest &request, bool graph, std::string &json, std::string &text) {
  Context ctx;
  ReferenceAndPlan loaded;
  if (Failure f = loadReferenceAndPlan(ctx, request, loaded))
    return f;
  func::FuncOp referenceFunc = loaded.referenceFunc, planFunc = loaded.planFunc;
  compiler::PlanDocument doc =
      compiler::reportPlan(planFunc, referenceFunc, planInfo(request), graph);
  json = jsonText(std::move(doc.json));
  text = std::move(doc.text);
  return {};
}

Failure validate(const CompileRequest &request, const NamedArrays &inputs, uint64_t seed,
                 double tolerance, std::string &json, std::string &text, int &status) {
  Context ctx;
  ReferenceAndPlan loaded;
  if (Failure f = loadReferenceAndPlan(ctx, request, loaded))
    return f;
  func::FuncOp referenceFunc = loaded.referenceFunc, planFunc = loaded.planFunc;
  compiler::GraphSignature sig = compiler::getSignature(referenceFunc);
  std::vector<HostTensor> tensors;
  std::vector<bool> given;
  if (Failure f = convertArrays(referenceFunc, sig, inputs, request.displayName, "inputs",
                                tensors, given))
    return f;
  compiler::randomInputs(referenceFunc, sig, given, seed, tensors);
  compiler::ValidateOptions options;
  options.tolerance = tolerance;
  options.calibrated = !request.calibrate.empty();
  compiler::PlanDocument doc;
  std::string error;
  if (!compiler::validatePlan(referenceFunc, planFunc, tensors, planInfo(request), options, doc,
                              error))
    return failure(Failure::Kind::Compile, error);
  json = jsonText(std::move(doc.json));
  text = std::move(doc.text);
  status = doc.status;
  return {};
}

Failure encodeInput(const mixprec_tensor_info_t &info, const support::NpyArray &array,
                    const std::string &subject, std::vector<uint8_t> &bytes) {
  HostTensor tensor;
  std::string error;
  std::vector<int64_t> dims(info.dims, info.dims + info.rank);
  if (!compiler::hostTensorFromNpy(array, compiler::kindOfDType(info.dtype), dims, subject,
                                   info.name, tensor, error) ||
      !compiler::encodeModuleInput(info, subject, tensor, bytes, error))
    return failure(Failure::Kind::InvalidArgument, error);
  return {};
}

int deviceSmVersion() { return compiler::deviceSmVersion(); }

void decodeFloats(mixprec_dtype_t dtype, const void *data, float *out, size_t n) {
  numerics::decodeArray(static_cast<numerics::Format>(dtype), data, out, n);
}

std::string producer() { return std::string("mixprec ") + MIXPREC_VERSION; }

Failure train(const TrainRequest &r, const std::function<void(const std::string &)> &print,
              const std::function<bool(const TrainStepInfo &)> &onStep, TrainSummary &summary) {
  using passes::TrainingOptions;
  passes::PrecisionPipelineOptions options;
  if (Failure f = parseOptions(r.options, options))
    return f;
  if (!r.precisionGiven)
    options.precision = passes::Precision::BF16; // mixprec train's default, as the CLI's
  compiler::TrainConfig c;
  c.model = r.path;
  c.shapes = r.shapes;
  auto arrays = [&](const NamedArrays &named, std::vector<compiler::TrainArray> &out) {
    for (const auto &[name, array] : named)
      out.push_back({name, "array '" + name + "'", array});
  };
  arrays(r.data, c.data);
  arrays(r.testData, c.testData);
  if (r.hasLabels)
    c.labels = compiler::TrainArray{"", "the labels", r.labels};
  if (r.hasTestLabels)
    c.testLabels = compiler::TrainArray{"", "the test labels", r.testLabels};
  TrainingOptions &o = c.step;
  auto bad = [](const std::string &what, const std::string &value, const std::string &names) {
    return failure(Failure::Kind::InvalidArgument,
                   what + " takes " + names + ", got '" + value + "'");
  };
  if (!passes::parseLoss(r.loss, o.loss))
    return bad("loss", r.loss, "ce, mse or model");
  if (!passes::parseOptimizer(r.optimizer, o.optimizer))
    return bad("optimizer", r.optimizer, "sgd or adamw");
  if (r.lossScale.empty())
    o.scaling = compiler::defaultScaling(options.precision.getValue());
  else if (!passes::parseScaling(r.lossScale, o.scaling))
    return bad("loss_scale", r.lossScale, "none, static or dynamic");
  o.output = r.output;
  o.lr = r.lr;
  o.momentum = r.momentum;
  o.weightDecay = r.weightDecay;
  o.beta1 = r.beta1;
  o.beta2 = r.beta2;
  o.eps = r.eps;
  o.initScale = r.initScale;
  o.growthFactor = r.growthFactor;
  o.backoffFactor = r.backoffFactor;
  o.growthInterval = r.growthInterval;
  o.hysteresis = r.hysteresis;
  o.minScale = r.minScale;
  o.clipNorm = r.clipNorm;
  o.accumulate = r.accumulate;
  o.frozen = r.frozen;
  o.name = "main";
  o.dataParallel = r.dataParallel;
  o.allreduceDType = r.allreduceDType;
  o.bucketMB = r.bucketMB;
  // Data parallelism: this process as a rank of the job its launcher
  // started. MPI starts once per process: the collective stays for the
  // process's life, for every later train() of the same job.
  const trainer::LaunchInfo launch = trainer::launchInfo();
  if (r.world < 0 || (r.world > 0 && r.world != launch.worldSize))
    return failure(Failure::Kind::InvalidArgument,
                   "train: world=" + std::to_string(r.world) + ", but this process is " +
                       (launch.worldSize > 1
                            ? "rank " + std::to_string(launch.rank) + " of a job of " +
                                  std::to_string(launch.worldSize) + " (" + launch.launcher + ")"
                            : std::string("no launcher's rank (a job of 1): start it with "
                                          "mpirun -np N python ...")));
  static std::unique_ptr<trainer::Collective> job;
  if (launch.worldSize > 1) {
    if (!job) {
      std::string error;
      job = trainer::joinLaunchedJob(r.collectiveTimeout, error);
      if (!job)
        return failure(Failure::Kind::Io, "train: " + error);
    }
    c.collective = job.get();
    c.collectiveTimeout = r.collectiveTimeout;
    o.dataParallel = true;
  }
  if (r.shardOptimizer) {
    o.shardOptimizer = o.dataParallel = true;
    o.world = launch.worldSize;
  }
  c.precision = &options;
  c.batch = r.batch;
  c.loop = r.loop;
  c.compare = r.compare;
  if (r.backend == "cpu")
    c.loop.backend = MIXPREC_BACKEND_CPU;
  else if (r.backend == "cuda")
    c.loop.backend = MIXPREC_BACKEND_CUDA;
  else if (r.backend == "auto")
    c.loop.backend = MIXPREC_BACKEND_AUTO;
  else
    return bad("backend", r.backend, "cpu, cuda or auto");

  compiler::TrainEvents events;
  events.print = print;
  if (onStep)
    events.onStep = [&](const compiler::TrainStepRecord &record) {
      TrainStepInfo info;
      info.seed = record.seed;
      info.step = record.step;
      info.epoch = record.epoch;
      info.loss = record.loss;
      info.lossScale = record.lossScale;
      info.gradNorm = record.gradNorm;
      info.skipped = record.skipped;
      info.testLoss = record.testLoss.value_or(NAN);
      info.testAccuracy = record.testAccuracy.value_or(NAN);
      info.compareLoss = record.compareLoss.value_or(NAN);
      return onStep(info);
    };
  compiler::TrainOutcome outcome = compiler::train(c, events);
  if (outcome.status != 0 && c.collective) {
    // The other ranks would wait for this one: say why, then end the job.
    std::fprintf(stderr, "mixprec: error: %s\n", outcome.error.c_str());
    std::fflush(nullptr);
    trainer::endJobAfterFailure(c.collective, outcome);
  }
  summary = TrainSummary();
  summary.status = outcome.status;
  summary.message = outcome.error;
  summary.notes = outcome.notes;
  summary.steps = outcome.steps;
  summary.skipped = outcome.skipped;
  summary.lastLoss = outcome.lastLoss;
  summary.testLoss = outcome.testLoss.value_or(NAN);
  summary.testAccuracy = outcome.testAccuracy.value_or(NAN);
  summary.compareLastLoss = outcome.compareLastLoss.value_or(NAN);
  summary.verdict = outcome.verdict;
  summary.metricsJson = outcome.metricsJson;
  if (outcome.status == compiler::kTrainUsage)
    return failure(Failure::Kind::InvalidArgument, outcome.error, outcome.notes);
  if (outcome.status == compiler::kTrainError)
    return failure(Failure::Kind::Compile, outcome.error, outcome.notes);
  return {};
}

} // namespace mixprec::python
