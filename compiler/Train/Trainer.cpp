//===- Trainer.cpp - the training loop behind `mixprec train` -------------===//
//
// train(config, events): the data are read and checked, the step (and the
// evaluation function) built from the model and compiled at the precision
// to modules in memory, run on the runtime one batch per run, the session
// keeping the training state. The data order is a Fisher-Yates shuffle per
// epoch drawn from splitmix64(seed, epoch), so a run is reproduced from its
// seed, and a checkpoint needs only the step count to continue it bit for
// bit.
//
// Evaluation runs a second module: the forward graph whose trained
// constants are state of the same names (buildEvalFunction), into which the
// training session's master weights are copied by name.
//
// When the loss scale cannot recover (maxSkippedInARow skipped steps in a
// row) the run stops with kTrainScaleStuck after a diagnosis that reruns
// the failing step on the interpreter and names the first op whose value
// was not finite.
//
//===----------------------------------------------------------------------===//
#include "compiler/Train/Trainer.h"

#include "codegen/Cuda/CudaProgram.h"
#include "codegen/Cuda/NvrtcCompiler.h"
#include "codegen/ModuleWriter.h"
#include "common/Escape.h"
#include "common/FileIO.h"
#include "common/Npy.h"
#include "compiler/Compile/Compile.h"
#include "compiler/Interpreter/Interpreter.h"
#include "compiler/Report/Report.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"
#include "mixprec/runtime.hpp"
#include "passes/TrainingStep.h"
#include "runtime/format/ModuleHash.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>

using namespace mlir;
using mixprec::passes::TrainingOptions;
using mixprec::support::NpyArray;

namespace mixprec::compiler {
namespace {

/// What one train() call works with: its configuration, where it reports,
/// how it ends, and the files it reads (no output may replace one).
struct Ctx {
  const TrainConfig &c;
  const TrainEvents &events;
  TrainOutcome &out;
  std::vector<std::pair<std::string, std::string>> inputs; ///< path, what it is

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
  void noteInput(const std::string &path, const std::string &what) {
    inputs.emplace_back(path, what);
  }
  /// Fails (false) when `output` is one of the files this run reads.
  bool checkNotAnInput(const std::string &output, std::string &error) const {
    for (const auto &[path, what] : inputs)
      if (common::sameFile(output, path)) {
        error = output + ": cannot write: it is an input of this run (" + what +
                "); outputs never replace inputs";
        return false;
      }
    return true;
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

/// The version of the checkpoint's user blob this trainer writes.
constexpr int kTrainStateVersion = 1;

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// The sample order of `epoch` (0-based): a Fisher-Yates shuffle from
/// splitmix64 seeded by (seed, epoch), the same on every platform (unlike
/// std::shuffle), or the file order.
std::vector<int64_t> epochOrder(int64_t rows, uint64_t seed, int64_t epoch, bool shuffle) {
  std::vector<int64_t> order(rows);
  for (int64_t i = 0; i < rows; ++i)
    order[i] = i;
  if (!shuffle)
    return order;
  uint64_t state = seed ^ (0x5851f42d4c957f2dull * static_cast<uint64_t>(epoch + 1));
  for (int64_t i = rows - 1; i > 0; --i) {
    // Lemire's multiply-shift: uniform enough for i < 2^40, exact on every platform.
    uint64_t r = splitmix64(state);
    int64_t j = static_cast<int64_t>((static_cast<unsigned __int128>(r) * (i + 1)) >> 64);
    std::swap(order[i], order[j]);
  }
  return order;
}

/// One array of samples: a graph input's, or the labels.
struct Column {
  std::string name; ///< the step's input it feeds
  std::string path;
  NpyArray array;
  std::vector<int64_t> rowShape; ///< the shape of one sample
  HostTensor all;                ///< every row, as the input's kind
  mixprec_dtype_t dtype = MIXPREC_DTYPE_F32;

  int64_t rows() const { return array.shape.empty() ? 0 : array.shape.front(); }
  int64_t rowElements() const {
    int64_t n = 1;
    for (int64_t d : rowShape)
      n *= d;
    return n;
  }
  std::vector<int64_t> batchShape(int64_t batch) const {
    std::vector<int64_t> shape{batch};
    shape.insert(shape.end(), rowShape.begin(), rowShape.end());
    return shape;
  }
};

/// Reads the arrays of --data (or --test-data) and the labels; every one
/// must have a sample dim, and all the same number of samples.
bool readColumns(Ctx &ctx, const std::vector<TrainArray> &data,
                 const std::optional<TrainArray> &labels, llvm::StringRef labelsName,
                 llvm::StringRef what, std::vector<Column> &out, std::string &error) {
  for (const TrainArray &a : data)
    out.push_back({a.name, a.path, a.array ? *a.array : NpyArray(), {}, {}, MIXPREC_DTYPE_F32});
  if (labels)
    out.push_back({labelsName.str(), labels->path, labels->array ? *labels->array : NpyArray(),
                   {}, {}, MIXPREC_DTYPE_I64});
  std::vector<bool> inMemory;
  for (const TrainArray &a : data)
    inMemory.push_back(a.array.has_value());
  if (labels)
    inMemory.push_back(labels->array.has_value());
  for (auto [i, c] : llvm::enumerate(out)) {
    if (inMemory[i])
      continue;
    ctx.noteInput(c.path, what.str() + " " + c.path);
    if (!support::readNpy(c.path, c.array, error))
      return false;
  }
  for (Column &c : out) {
    if (c.array.shape.empty() || c.array.shape.front() < 1)
      return error = c.path + ": " + what.str() + " needs a sample dim (dim 0) with at least one "
                     "sample, got shape " + graph::formatShape(c.array.shape),
             false;
    c.rowShape.assign(c.array.shape.begin() + 1, c.array.shape.end());
  }
  for (const Column &c : out)
    if (c.rows() != out.front().rows())
      return error = what.str() + ": " + out.front().path + " has " +
                     std::to_string(out.front().rows()) + " samples but " + c.path + " has " +
                     std::to_string(c.rows()),
             false;
  return true;
}

/// Converts each column to the kind its module input takes (float, int,
/// bool), checking class labels against the number of classes.
/// `batch`: the samples per run the module must take (0: any, the
/// evaluation's).
bool convertColumns(const std::string &model, std::vector<Column> &columns,
                    const mixprec::Module &module, int64_t batch, std::string &error,
                    const Column *trainLabels = nullptr) {
  for (Column &c : columns) {
    if (trainLabels && &c == &columns.back()) {
      // Test labels: the evaluation module has no labels input; they
      // take the training labels' kind and sample shape.
      if (c.rowShape != trainLabels->rowShape)
        return error = c.path + ": its samples have shape " + graph::formatShape(c.rowShape) +
                       ", but those of " + trainLabels->path + " have " +
                       graph::formatShape(trainLabels->rowShape),
               false;
      c.dtype = trainLabels->dtype;
      if (!hostTensorFromNpy(c.array, trainLabels->all.kind, c.array.shape, c.path,
                                       c.name, c.all, error))
        return false;
      continue;
    }
    size_t index = 0;
    mixprec_tensor_info_t info;
    if (mixprec::Status s = module.findInput(c.name.c_str(), index); !s.ok())
      return error = c.path + ": " + s.message(), false;
    if (mixprec::Status s = module.inputInfo(index, info); !s.ok())
      return error = s.message(), false;
    c.dtype = info.dtype;
    if (batch > 0 && info.rank > 0 && info.dims[0] != batch)
      return error = model + ": graph input '" + c.name + "' has a fixed batch of " +
                     std::to_string(info.dims[0]) + " (" +
                     graph::formatShape(std::vector<int64_t>(info.dims, info.dims + info.rank)) +
                     "): train with --batch " + std::to_string(info.dims[0]) +
                     ", or export the model with a symbolic batch dim",
             false;
    std::vector<int64_t> expected(info.dims + std::min<size_t>(info.rank, 1), info.dims + info.rank);
    if (info.rank == 0 || expected != c.rowShape)
      return error = c.path + ": its samples have shape " + graph::formatShape(c.rowShape) +
                     ", but input '" + c.name + "' of the step takes " +
                     graph::formatShape(std::vector<int64_t>(info.dims, info.dims + info.rank)) +
                     " (a batch of samples of shape " + graph::formatShape(expected) + ")",
             false;
    HostTensor::Kind kind = kindOfDType(info.dtype);
    if (!hostTensorFromNpy(c.array, kind, c.array.shape, c.path, c.name, c.all, error))
      return false;
    c.array.data.clear();
    c.array.data.shrink_to_fit();
  }
  return true;
}

/// Fails when a class label is outside [0, classes).
bool checkLabels(const Column &labels, int64_t classes, std::string &error) {
  for (size_t i = 0; i < labels.all.ints.size(); ++i) {
    int64_t v = labels.all.ints[i];
    if (v < 0 || v >= classes)
      return error = labels.path + ": label " + std::to_string(v) + " of sample " +
                     std::to_string(i / std::max<int64_t>(1, labels.rowElements())) +
                     " is outside the model's " + std::to_string(classes) +
                     " classes [0, " + std::to_string(classes - 1) + "]",
             false;
  }
  return true;
}

/// Rows `order[first..first+count)` of a column as one batch (rows past the
/// end of `order` are zeros: the padding of a last evaluation batch).
HostTensor gatherRows(const Column &c, const std::vector<int64_t> &order, int64_t first,
                      int64_t count) {
  HostTensor t;
  t.kind = c.all.kind;
  t.shape = c.batchShape(count);
  int64_t n = c.rowElements();
  auto gather = [&](const auto &from, auto &to) {
    to.assign(static_cast<size_t>(count * n), {});
    for (int64_t r = 0; r < count; ++r)
      if (first + r < static_cast<int64_t>(order.size()))
        std::copy_n(from.begin() + order[first + r] * n, n, to.begin() + r * n);
  };
  switch (t.kind) {
  case HostTensor::Kind::Float:
    gather(c.all.floats, t.floats);
    break;
  case HostTensor::Kind::Int:
    gather(c.all.ints, t.ints);
    break;
  case HostTensor::Kind::Bool:
    gather(c.all.bools, t.bools);
    break;
  }
  return t;
}

/// Binds a batch to the session's input `name` in the input's dtype.
mixprec::Status bindBatch(mixprec::Session &session, const std::string &name,
                          mixprec_dtype_t dtype, const HostTensor &t) {
  auto bind = [&](mixprec_dtype_t as, const void *data, size_t bytes) {
    return mixprec::Status(mixprec_session_bind_input_by_name(
        session.handle(), name.c_str(), as, t.shape.size(), t.shape.data(), data, bytes));
  };
  switch (t.kind) {
  case HostTensor::Kind::Float:
    return bind(MIXPREC_DTYPE_F32, t.floats.data(), t.floats.size() * sizeof(float));
  case HostTensor::Kind::Int:
    if (dtype == MIXPREC_DTYPE_I32) {
      std::vector<int32_t> narrow(t.ints.begin(), t.ints.end());
      return bind(dtype, narrow.data(), narrow.size() * sizeof(int32_t));
    }
    return bind(MIXPREC_DTYPE_I64, t.ints.data(), t.ints.size() * sizeof(int64_t));
  case HostTensor::Kind::Bool:
    return bind(MIXPREC_DTYPE_BOOL, t.bools.data(), t.bools.size());
  }
  return bind(dtype, nullptr, 0);
}

/// What a module is built from: the step or the evaluation function.
enum class Build { Step, Eval };

/// A compiled module on the runtime, with a session.
struct Loaded {
  mixprec::Module module;
  mixprec::Session session;
};

/// The CUDA architecture a module gets code for on `backend`: the
/// device's (CUDA, or auto with a device), else none ("").
std::string deviceArch(mixprec_backend_t backend, int &smVersion) {
  if (backend == MIXPREC_BACKEND_CPU)
    return "";
  int sm = 0;
  mixprec_status_t status = mixprec_cuda_device_sm_version(&sm);
  const bool device = status == nullptr;
  mixprec_status_free(status);
  std::string arch = "sm_" + std::to_string(sm), error;
  if (!device || !codegen::parseCudaArch(arch, smVersion, error))
    return "";
  return arch;
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
  OwningOpRef<ModuleOp> module = loadModel(command.context, t.model, load);
  if (!module) {
    command.fail(ctx);
    return nullptr;
  }
  FailureOr<func::FuncOp> entry = entryFunction(*module);
  if (failed(entry)) {
    command.fail(ctx, t.model);
    return nullptr;
  }
  func::FuncOp forward = *entry;
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
  TrainingOptions o = t.step;
  o.name = build == Build::Step ? "mixprec_train_step" : "mixprec_eval";
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

/// Compiles the graph at `precision` and loads it on the runtime. 0, or the
/// exit status after printing the error.
int compileAndLoad(Ctx &ctx, Compilation &command, ModuleOp module,
                   const passes::PrecisionPipelineOptions &precision, Loaded &out) {
  const std::string &model = ctx.c.model;
  if (failed(compilePrecision(module, precision, ExistingPlan::Refuse)))
    return command.fail(ctx, model);
  int smVersion = 0;
  std::string arch = deviceArch(ctx.c.backend, smVersion);
  codegen::CudaCompileOptions cuda;
  cuda.smVersion = smVersion;
  cuda.warn = [&ctx](const std::string &message) { ctx.print("warning: " + message); };
  codegen::CudaCompileStats cudaStats;
  codegen::ModuleWriteOptions writeOptions;
  writeOptions.producer = "mixprec train";
  codegen::ModuleStats stats;
  FailureOr<codegen::ModuleImage> image =
      buildModule(module, "train.weights", writeOptions, stats,
                            arch.empty() ? nullptr : &cuda, arch.empty() ? nullptr : &cudaStats);
  if (failed(image))
    return command.fail(ctx, model);
  mixprec_load_options_t load = MIXPREC_LOAD_OPTIONS_INIT;
  load.side_file_data = image->sideFile.data();
  load.side_file_size = image->sideFile.size();
  if (mixprec::Status s = mixprec::Module::loadFromMemory(image->module.data(),
                                                          image->module.size(), out.module, &load);
      !s.ok())
    return ctx.fail(model + ": the compiled step: " + s.message());
  mixprec_session_options_t options = MIXPREC_SESSION_OPTIONS_INIT;
  options.backend = ctx.c.backend;
  if (mixprec::Status s = mixprec::Session::create(out.module, out.session, options); !s.ok())
    return ctx.fail(model + ": " + s.message());
  return 0;
}

/// The index of output `name` of a module.
size_t outputIndex(const mixprec::Module &module, const char *name) {
  size_t index = 0;
  mixprec::Status s = module.findOutput(name, index);
  return s.ok() ? index : SIZE_MAX;
}

/// A rank-0 float output.
float scalarOutput(const mixprec::Session &session, size_t index) {
  float v = NAN;
  mixprec::Status s = session.copyOutput(index, MIXPREC_DTYPE_F32, &v, sizeof v);
  return s.ok() ? v : NAN;
}

/// One training run: the step's module and session, its data, its log.
struct Run {
  std::string label; ///< "" for the main run, else the --compare precision
  Loaded step;
  size_t lossIndex = 0, skippedIndex = 0, normIndex = 0, scaleIndex = 0;
  std::vector<std::string> stateNames;
  std::vector<size_t> stateBytes;

  // Evaluation.
  std::optional<Loaded> eval;
  int64_t evalBatch = 0;
  size_t evalOutput = 0;
  /// The last dim of the output the loss reads (cross-entropy's classes).
  int64_t classes = 0;

  int build(Ctx &ctx, Compilation &command, const passes::PrecisionPipelineOptions &precision,
            const std::vector<Column> &train, const std::vector<Column> &test) {
    const TrainConfig &t = ctx.c;
    OwningOpRef<ModuleOp> graph = buildGraph(ctx, command, Build::Step, train, t.batch, &classes);
    if (!graph)
      return 1;
    if (int rc = compileAndLoad(ctx, command, *graph, precision, step))
      return rc;
    lossIndex = outputIndex(step.module, "loss");
    skippedIndex = outputIndex(step.module, "skipped");
    normIndex = outputIndex(step.module, "grad_norm");
    scaleIndex = outputIndex(step.module, "loss_scale");
    for (size_t i = 0; i < step.module.stateCount(); ++i) {
      mixprec_tensor_info_t info;
      step.module.stateInfo(i, info);
      stateNames.push_back(info.name);
      stateBytes.push_back(info.byte_size);
    }
    if (test.empty())
      return 0;
    evalBatch = std::min<int64_t>(test.front().rows(), 1024);
    OwningOpRef<ModuleOp> evalGraph = buildGraph(ctx, command, Build::Eval, test, evalBatch);
    if (!evalGraph)
      return 1;
    eval.emplace();
    if (int rc = compileAndLoad(ctx, command, *evalGraph, precision, *eval))
      return rc;
    evalOutput = t.step.output.empty() ? 0 : outputIndex(eval->module, t.step.output.c_str());
    // A model with a fixed batch evaluates in batches of that size.
    mixprec_tensor_info_t info;
    if (size_t index = 0; eval->module.findInput(test.front().name.c_str(), index).ok() &&
                          eval->module.inputInfo(index, info).ok() && info.rank > 0)
      evalBatch = info.dims[0];
    return 0;
  }

  /// Runs one step on `batch` (one tensor per column); false with `error`.
  bool runStep(const std::vector<Column> &columns, const std::vector<HostTensor> &batch,
               std::string &error) {
    for (size_t i = 0; i < columns.size(); ++i)
      if (mixprec::Status s = bindBatch(step.session, columns[i].name, columns[i].dtype, batch[i]);
          !s.ok())
        return error = s.message(), false;
    if (mixprec::Status s = step.session.run(); !s.ok())
      return error = s.message(), false;
    return true;
  }

  float loss() const { return scalarOutput(step.session, lossIndex); }
  bool skipped() const { return scalarOutput(step.session, skippedIndex) != 0.0f; }
  float gradNorm() const { return scalarOutput(step.session, normIndex); }
  float lossScale() const { return scalarOutput(step.session, scaleIndex); }

  /// A state's bytes (F32: every state the step keeps is FP32).
  std::vector<float> readState(size_t i) const {
    std::vector<float> v(stateBytes[i] / sizeof(float));
    step.session.readState(stateNames[i].c_str(), v.data(), stateBytes[i]);
    return v;
  }

  /// What an evaluation found: the mean loss and, for cross-entropy,
  /// `correct` of `counted` predictions.
  struct Evaluation {
    double loss = NAN;
    int64_t correct = 0, counted = 0;
    double accuracy() const { return counted ? double(correct) / counted : NAN; }
  };

  /// Evaluates the model as trained on the test set. False with `error`.
  bool evaluate(const TrainConfig &t, const std::vector<Column> &test, Evaluation &result,
                std::string &error) {
    // The eval module's states are the trained params: copy them by name.
    for (size_t i = 0; i < eval->module.stateCount(); ++i) {
      mixprec_tensor_info_t info;
      eval->module.stateInfo(i, info);
      std::vector<uint8_t> bytes(info.byte_size);
      if (mixprec::Status s = step.session.readState(info.name, bytes.data(), bytes.size());
          !s.ok())
        return error = s.message(), false;
      if (mixprec::Status s = eval->session.writeState(info.name, bytes.data(), bytes.size());
          !s.ok())
        return error = s.message(), false;
    }
    const Column *labels = t.step.loss == TrainingOptions::Loss::Model ? nullptr : &test.back();
    size_t dataColumns = labels ? test.size() - 1 : test.size();
    int64_t rows = test.front().rows();
    std::vector<int64_t> order(rows);
    for (int64_t i = 0; i < rows; ++i)
      order[i] = i;
    double lossSum = 0;
    int64_t counted = 0, correct = 0, batches = 0;
    mixprec_tensor_info_t out;
    eval->module.outputInfo(evalOutput, out);
    for (int64_t first = 0; first < rows; first += evalBatch) {
      int64_t valid = std::min(evalBatch, rows - first);
      ++batches;
      for (size_t i = 0; i < dataColumns; ++i) {
        HostTensor batch = gatherRows(test[i], order, first, evalBatch);
        if (mixprec::Status s = bindBatch(eval->session, test[i].name, test[i].dtype, batch);
            !s.ok())
          return error = s.message(), false;
      }
      if (mixprec::Status s = eval->session.run(); !s.ok())
        return error = s.message(), false;
      std::vector<float> values(out.element_count);
      if (mixprec::Status s = eval->session.copyOutput(evalOutput, MIXPREC_DTYPE_F32,
                                                       values.data(), values.size() * 4);
          !s.ok())
        return error = s.message(), false;
      int64_t perRow = static_cast<int64_t>(out.element_count) / evalBatch;
      for (int64_t r = 0; r < valid; ++r) {
        const float *row = values.data() + r * perRow;
        switch (t.step.loss) {
        case TrainingOptions::Loss::CrossEntropy: {
          // perRow = positions x classes: one prediction per position.
          int64_t positions = perRow / classes;
          for (int64_t p = 0; p < positions; ++p) {
            const float *logits = row + p * classes;
            int64_t label = labels->all.ints[(first + r) * positions + p];
            double mx = -INFINITY;
            int64_t arg = 0;
            for (int64_t k = 0; k < classes; ++k)
              if (logits[k] > mx)
                mx = logits[k], arg = k;
            double sum = 0;
            for (int64_t k = 0; k < classes; ++k)
              sum += std::exp(double(logits[k]) - mx);
            lossSum += std::log(sum) + mx - logits[label];
            correct += arg == label;
            ++counted;
          }
          break;
        }
        case TrainingOptions::Loss::Mse:
          for (int64_t k = 0; k < perRow; ++k) {
            double d = double(row[k]) - labels->all.floats[(first + r) * perRow + k];
            lossSum += d * d;
            ++counted;
          }
          break;
        case TrainingOptions::Loss::Model:
          // One loss per batch (the padded last one counts as a whole).
          if (r == 0)
            lossSum += row[0];
          break;
        }
      }
    }
    result = Evaluation();
    if (t.step.loss == TrainingOptions::Loss::Model) {
      result.loss = lossSum / batches;
    } else {
      result.loss = counted ? lossSum / counted : NAN;
      if (t.step.loss == TrainingOptions::Loss::CrossEntropy)
        result.correct = correct, result.counted = counted;
    }
    return true;
  }
};

/// The checkpoint's user blob: what the trainer needs to continue a run
/// (the runtime keeps the states), as "key value" lines.
struct TrainState {
  int version = kTrainStateVersion;
  int64_t stepsDone = 0;
  uint64_t seed = 0;
  bool shuffle = true;
  int64_t batch = 0, rows = 0;
  std::string model, precision;

  std::string serialize() const {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << "mixprec-train " << version << "\nsteps_done " << stepsDone << "\nseed " << seed
       << "\nshuffle " << (shuffle ? 1 : 0) << "\nbatch " << batch << "\nrows " << rows
       << "\nmodel " << model << "\nprecision " << precision << "\n";
    return s;
  }

  /// Parses a blob; "" or why it cannot be read.
  std::string parse(llvm::StringRef text) {
    llvm::SmallVector<llvm::StringRef> lines;
    text.split(lines, '\n', -1, false);
    if (lines.empty() || !lines.front().starts_with("mixprec-train "))
      return "it was not written by mixprec train";
    if (lines.front().drop_front(14).getAsInteger(10, version))
      return "its trainer record is damaged";
    if (version > kTrainStateVersion)
      return "it was written by a newer mixprec (trainer record version " +
             std::to_string(version) + "; this one reads " +
             std::to_string(kTrainStateVersion) + ")";
    for (llvm::StringRef line : llvm::ArrayRef(lines).drop_front()) {
      auto [key, value] = line.split(' ');
      bool bad = false;
      if (key == "steps_done")
        bad = value.getAsInteger(10, stepsDone);
      else if (key == "seed")
        bad = value.getAsInteger(10, seed);
      else if (key == "shuffle")
        shuffle = value == "1";
      else if (key == "batch")
        bad = value.getAsInteger(10, batch);
      else if (key == "rows")
        bad = value.getAsInteger(10, rows);
      else if (key == "model")
        model = value.str();
      else if (key == "precision")
        precision = value.str();
      if (bad)
        return "its trainer record is damaged (" + key.str() + ")";
    }
    return "";
  }
};

/// The --precision the step was compiled at, as the option spells it.
std::string precisionOptionsText(passes::PrecisionPipelineOptions &options) {
  std::string s;
  llvm::raw_string_ostream os(s);
  options.print(os);
  return s;
}

/// Prints a number the way the log does: 4 significant digits.
std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}
/// Exactly (a float round-trips through 9 significant digits).
std::string exact(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

/// Reruns the step on the interpreter (the annotated graph, the session's
/// states, the failing batch) and names the first op whose value is not
/// finite; "" when it cannot tell.
std::string diagnoseOverflow(Ctx &ctx, const Run &run, const std::vector<Column> &columns,
                             const std::vector<HostTensor> &batch) {
  // Errors of this rerun are not the run's: they leave the outcome as it is.
  TrainOutcome scratch;
  Ctx quiet{ctx.c, TrainEvents(), scratch, {}};
  Compilation command;
  OwningOpRef<ModuleOp> graph = buildGraph(quiet, command, Build::Step, columns, ctx.c.batch);
  if (!graph ||
      failed(compilePrecision(*graph, *ctx.c.precision, ExistingPlan::Refuse)))
    return "";
  FailureOr<func::FuncOp> func = entryFunction(*graph);
  if (failed(func))
    return "";
  std::vector<HostTensor> inputs = batch;
  for (unsigned i = inputs.size(); i < func->getNumArguments(); ++i) {
    auto name = func->getArgAttrOfType<StringAttr>(i, graph::GraphDialect::kStateAttr);
    if (!name)
      return "";
    auto it = llvm::find(run.stateNames, name.str());
    if (it == run.stateNames.end())
      return "";
    auto type = cast<RankedTensorType>(func->getArgumentTypes()[i]);
    inputs.push_back(HostTensor::makeFloat(
        std::vector<int64_t>(type.getShape()), run.readState(it - run.stateNames.begin())));
  }
  Operation *first = nullptr;
  std::string firstValue;
  Interpreter interpreter(*func);
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
    if (auto arg = dyn_cast<BlockArgument>(operand); arg && arg.getOwner() == &func->front())
      if (auto name =
              func->getArgAttrOfType<StringAttr>(arg.getArgNumber(), graph::GraphDialect::kNameAttr);
          name && (label.empty() || isa<UnknownLoc, NameLoc>(first->getLoc()) ||
                   label == nodeLabel(func->getOperation()))) {
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

/// Writes the CSV log atomically (header and one row per step).
bool writeCsv(Ctx &ctx, const std::string &path, const std::string &header,
              const std::vector<std::string> &rows) {
  std::string text = header + "\n";
  for (const std::string &row : rows)
    text += row + "\n";
  std::string error;
  if (!ctx.checkNotAnInput(path, error) ||
      !common::writeFileAtomically(path, text.data(), text.size(), error)) {
    ctx.fail(error);
    return false;
  }
  return true;
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
  if (t.evalEvery && t.testData.empty())
    return "train: --eval-every needs --test-data";
  if (t.steps && t.epochs)
    return "train: give --steps or --epochs, not both";
  if (t.batch < 1 || t.steps < 0 || t.epochs < 0 || t.logEvery < 1 || t.evalEvery < 0 ||
      t.checkpointEvery < 0 || t.maxSkippedInARow < 1)
    return "train: --batch, --log-every and --max-skipped-in-a-row must be >= 1; --steps, "
           "--epochs, --eval-every and --checkpoint-every >= 0";
  if (t.checkpointEvery && t.checkpoint.empty())
    return "train: --checkpoint-every needs --checkpoint FILE";
  if (!t.compare.empty() && t.compare != "fp32")
    return "train: --compare takes fp32, got '" + t.compare + "'";
  if (!t.compare.empty() && (!t.checkpoint.empty() || !t.resume.empty()))
    return "train: --compare does not combine with --checkpoint or --resume (the FP32 run "
           "beside is not checkpointed)";
  if (!t.precision)
    return "train: no precision options given";
  if (std::string why = passes::checkTrainingOptions(o); !why.empty())
    return "train: " + why;
  return "";
}

/// The whole run (train's body).
int run(Ctx &ctx) {
  const TrainConfig &t = ctx.c;
  const TrainingOptions &o = t.step;
  const bool modelLoss = o.loss == TrainingOptions::Loss::Model;
  if (std::string why = checkConfig(t); !why.empty())
    return ctx.usage(why);
  ctx.noteInput(t.model, "the model " + t.model);
  // FP8 training scales as Transformer Engine's default recipe does:
  // delayed scaling from an amax history kept in the step's state.
  passes::PrecisionPipelineOptions &precision = *t.precision;
  if (precision.precision.getValue() == passes::Precision::FP8 && !precision.fp8Scaling.hasValue())
    precision.fp8Scaling = "delayed";

  // The data.
  std::string error;
  llvm::StringRef labelsName = o.loss == TrainingOptions::Loss::Mse ? "targets" : "labels";
  std::vector<Column> train, test;
  if (!readColumns(ctx, t.data, t.labels, labelsName, "--data", train, error))
    return ctx.fail(error);
  if (!t.testData.empty() &&
      !readColumns(ctx, t.testData, t.testLabels, labelsName, "--test-data", test, error))
    return ctx.fail(error);
  const int64_t rows = train.front().rows();
  // Samples per step: accumulate micro-batches of batch samples.
  const int64_t stepRows = t.batch * o.accumulate;
  if (stepRows > rows)
    return ctx.fail("train: a step takes " + std::to_string(stepRows) + " samples (--batch " +
                    std::to_string(t.batch) +
                    (o.accumulate > 1 ? " x --accumulate " + std::to_string(o.accumulate)
                                      : std::string()) +
                    "), more than the " + std::to_string(rows) + " samples of " +
                    train.front().path);
  // The outputs: none may replace an input. The checkpoint may be the file
  // resumed from: it is read whole before it is written again.
  for (const std::string *path : {&t.csv, &t.checkpoint})
    if (!path->empty() && !ctx.checkNotAnInput(*path, error))
      return ctx.fail(error);

  // The step (and the evaluation) at the precision, and at FP32 beside it.
  auto start = std::chrono::steady_clock::now();
  Compilation command;
  Run primary;
  if (int rc = primary.build(ctx, command, precision, train, test))
    return rc;
  std::optional<Run> compare;
  passes::PrecisionPipelineOptions fp32Options;
  std::optional<Compilation> compareCommand;
  if (!t.compare.empty()) {
    fp32Options.precision = passes::Precision::FP32;
    compare.emplace();
    compare->label = t.compare;
    compareCommand.emplace();
    if (int rc = compare->build(ctx, *compareCommand, fp32Options, train, test))
      return rc;
  }
  if (!convertColumns(t.model, train, primary.step.module, stepRows, error) ||
      (!test.empty() && !convertColumns(t.model, test, primary.eval->module, 0, error,
                                        modelLoss ? nullptr : &train.back())))
    return ctx.fail(error);
  if (o.loss == TrainingOptions::Loss::CrossEntropy &&
      (!checkLabels(train.back(), primary.classes, error) ||
       (!test.empty() && !checkLabels(test.back(), primary.classes, error))))
    return ctx.fail(error);
  const double compileSeconds = millisecondsSince(start) / 1000;

  const int64_t stepsPerEpoch = rows / stepRows;
  const int64_t total = t.steps ? t.steps : (t.epochs ? t.epochs : 1) * stepsPerEpoch;
  TrainState state;
  state.seed = t.seed;
  state.shuffle = t.shuffle;
  state.batch = stepRows;
  state.rows = rows;
  state.precision = precisionOptionsText(precision);
  if (!fileFingerprint(t.model, state.model, error))
    return ctx.fail(error);

  if (!t.resume.empty()) {
    std::vector<char> blob(4096);
    size_t blobBytes = 0;
    if (mixprec::Status s = primary.step.session.loadCheckpoint(t.resume.c_str(), blob.data(),
                                                                blob.size(), blobBytes);
        !s.ok())
      return ctx.fail(t.resume + ": cannot resume from it: " + s.message());
    TrainState saved;
    if (std::string why = saved.parse(llvm::StringRef(blob.data(), blobBytes)); !why.empty())
      return ctx.fail(t.resume + ": cannot resume from it: " + why);
    auto mismatch = [&](const std::string &what, const std::string &then,
                        const std::string &now) {
      return ctx.fail(t.resume + ": cannot resume from it: it was written with " + what + " " +
                      then + ", this run has " + now +
                      " (resume with the same model, data, --batch, --seed, --precision and "
                      "shuffling)");
    };
    if (saved.model != state.model)
      return mismatch("another model file (fingerprint", saved.model + ")", state.model);
    if (saved.rows != state.rows)
      return mismatch("training data of", std::to_string(saved.rows) + " samples",
                      std::to_string(state.rows));
    if (saved.batch != state.batch)
      return mismatch(o.accumulate > 1 ? "samples per step (--batch x --accumulate)" : "--batch",
                      std::to_string(saved.batch), std::to_string(state.batch));
    if (saved.seed != state.seed)
      return mismatch("--seed", std::to_string(saved.seed), std::to_string(state.seed));
    if (saved.shuffle != state.shuffle)
      return mismatch("shuffling", saved.shuffle ? "on" : "off", state.shuffle ? "on" : "off");
    if (saved.precision != state.precision)
      return mismatch("precision options", "'" + saved.precision + "'",
                      "'" + state.precision + "'");
    state.stepsDone = saved.stepsDone;
    if (state.stepsDone >= total)
      return ctx.fail(t.resume + ": the run it continues has done " +
                      std::to_string(state.stepsDone) + " steps already; ask for more (--steps " +
                      std::to_string(total) + " is the total, not the steps still to do)");
  }

  auto saveCheckpoint = [&]() -> bool {
    std::string blob = state.serialize();
    mixprec::Status s =
        primary.step.session.saveCheckpoint(t.checkpoint.c_str(), blob.data(), blob.size());
    if (!s.ok())
      ctx.fail(t.checkpoint + ": " + s.message());
    return s.ok();
  };

  std::string csvHeader = "step,epoch,loss,loss_scale,skipped,grad_norm,test_loss,test_accuracy";
  if (compare)
    csvHeader += ",fp32_loss,fp32_skipped,fp32_test_loss,fp32_test_accuracy";
  std::vector<std::string> csvRows;

  ctx.print(llvm::formatv("mixprec train: {0}: {1} samples, batch {2}{3}, {4} steps ({5} per "
                          "epoch), precision {6}, backend {7}, loss scale {8}; compiled in "
                          "{9:f2} s",
                          t.model, rows, t.batch,
                          o.accumulate > 1
                              ? " x " + std::to_string(o.accumulate) + " micro-batches"
                              : std::string(),
                          total, stepsPerEpoch,
                          passes::precisionName(precision.precision.getValue()),
                          mixprec_backend_name(primary.step.session.backend()),
                          o.scaling == TrainingOptions::Scaling::Dynamic  ? "dynamic"
                          : o.scaling == TrainingOptions::Scaling::Static ? "static"
                                                                          : "none",
                          compileSeconds)
                .str());
  if (state.stepsDone)
    ctx.print("resumed from " + t.resume + " after step " + std::to_string(state.stepsDone));

  struct Window {
    double loss = 0, norm = 0, compareLoss = 0;
    int64_t steps = 0, applied = 0;
  } window;
  int64_t skippedTotal = 0, compareSkipped = 0, skippedInARow = 0, stepsRun = 0;
  double gapSum = 0;
  int64_t gapCount = 0;
  std::vector<int64_t> order;
  int64_t orderEpoch = -1;
  auto windowStart = std::chrono::steady_clock::now();
  auto runStart = windowStart;
  std::vector<HostTensor> batch(train.size());
  TrainOutcome &out = ctx.out;

  // Evaluates each run into `record` and prints the line; the CSV cells
  // (test_loss,test_accuracy per run).
  auto evaluate = [&](int64_t step, TrainStepRecord &record, std::string &cells,
                      std::string &compareCells) -> bool {
    std::string line = "eval step " + std::to_string(step) + ":";
    for (Run *run : {&primary, compare ? &*compare : nullptr}) {
      if (!run)
        continue;
      Run::Evaluation e;
      if (!run->evaluate(t, test, e, error))
        return ctx.fail(t.model + ": evaluation: " + error), false;
      line += (run == &primary ? std::string() : "  |  " + run->label + ":") + " test loss " +
              num(e.loss);
      std::string c = "," + exact(e.loss) + ",";
      std::optional<double> accuracy;
      if (e.counted) {
        line += llvm::formatv("  accuracy {0:f2}% ({1}/{2})", 100 * e.accuracy(), e.correct,
                              e.counted)
                    .str();
        c += exact(e.accuracy());
        accuracy = e.accuracy();
      }
      if (run == &primary) {
        cells = c;
        record.testLoss = out.testLoss = e.loss;
        record.testAccuracy = out.testAccuracy = accuracy;
      } else {
        compareCells = c;
        record.compareTestLoss = e.loss;
        record.compareTestAccuracy = accuracy;
      }
    }
    ctx.print(line);
    return true;
  };

  for (int64_t step = state.stepsDone; step < total; ++step) {
    const int64_t epoch = step / stepsPerEpoch, position = step % stepsPerEpoch;
    if (epoch != orderEpoch) {
      order = epochOrder(rows, state.seed, epoch, t.shuffle);
      orderEpoch = epoch;
    }
    for (size_t i = 0; i < train.size(); ++i)
      batch[i] = gatherRows(train[i], order, position * stepRows, stepRows);
    if (!primary.runStep(train, batch, error))
      return ctx.fail(t.model + ": step " + std::to_string(step + 1) + ": " + error);
    TrainStepRecord record;
    record.step = step + 1;
    record.epoch = epoch + 1;
    record.loss = primary.loss();
    record.lossScale = primary.lossScale();
    record.gradNorm = primary.gradNorm();
    record.skipped = primary.skipped();
    ++stepsRun;
    state.stepsDone = step + 1;
    skippedTotal += record.skipped;
    skippedInARow = record.skipped ? skippedInARow + 1 : 0;
    out.steps = stepsRun;
    out.skipped = skippedTotal;
    out.lastLoss = record.loss;
    window.steps++;
    if (!record.skipped) {
      window.applied++;
      window.loss += record.loss;
      window.norm += record.gradNorm;
    }
    std::string row = std::to_string(step + 1) + "," + std::to_string(epoch + 1) + "," +
                      exact(record.loss) + "," + exact(record.lossScale) + "," +
                      (record.skipped ? "1" : "0") + "," + exact(record.gradNorm);
    std::string compareCells;
    if (compare) {
      if (!compare->runStep(train, batch, error))
        return ctx.fail(t.model + ": step " + std::to_string(step + 1) + " (" + compare->label +
                        "): " + error);
      float compareLoss = compare->loss();
      bool compareSkip = compare->skipped();
      record.compareLoss = out.compareLastLoss = compareLoss;
      record.compareSkipped = compareSkip;
      compareSkipped += compareSkip;
      window.compareLoss += compareLoss;
      if (!record.skipped && !compareSkip && std::isfinite(record.loss) &&
          std::isfinite(compareLoss)) {
        gapSum += double(record.loss) - compareLoss;
        ++gapCount;
      }
      compareCells = "," + exact(compareLoss) + "," + (compareSkip ? "1" : "0");
    }

    bool last = step + 1 == total;
    if ((step + 1) % t.logEvery == 0 || last) {
      double seconds = millisecondsSince(windowStart) / 1000;
      double meanLoss = window.applied ? window.loss / window.applied : NAN;
      std::string line =
          llvm::formatv("step {0}/{1}  epoch {2}  loss {3}  scale {4}  skipped {5}  "
                        "grad_norm {6}  {7} samples/s",
                        step + 1, total, epoch + 1, num(meanLoss), num(record.lossScale),
                        skippedTotal, num(window.applied ? window.norm / window.applied : NAN),
                        int64_t(std::llround(window.steps * stepRows / std::max(seconds, 1e-9))))
              .str();
      if (compare)
        line += "  |  " + compare->label + " loss " + num(window.compareLoss / window.steps) +
                " gap " + num(meanLoss - window.compareLoss / window.steps);
      ctx.print(line);
      window = Window();
      windowStart = std::chrono::steady_clock::now();
    }

    std::string evalCells = ",,", compareEvalCells = compare ? ",," : "";
    if (!test.empty() && (last || (t.evalEvery && (step + 1) % t.evalEvery == 0)) &&
        !evaluate(step + 1, record, evalCells, compareEvalCells))
      return kTrainError;
    csvRows.push_back(row + evalCells + compareCells + compareEvalCells);

    if (skippedInARow >= t.maxSkippedInARow) {
      std::string diagnosis = diagnoseOverflow(ctx, primary, train, batch);
      if (!t.csv.empty() && !writeCsv(ctx, t.csv, csvHeader, csvRows))
        return kTrainError;
      ctx.fail(t.model + ": the last " + std::to_string(skippedInARow) +
                   " steps all overflowed (step " + std::to_string(step + 1) + ", loss scale " +
                   num(record.lossScale) +
                   (o.minScale > 0 && record.lossScale <= o.minScale ? ", its minimum" : "") +
                   "): the loss scale cannot recover; stopped without writing a checkpoint" +
                   (t.checkpoint.empty() ? "" : " (" + t.checkpoint + " keeps the last good one)"),
               kTrainScaleStuck);
      out.notes.clear();
      if (!diagnosis.empty())
        out.notes.push_back("rerun on the interpreter, " + diagnosis);
      out.notes.push_back("keep that op in FP32 (--keep-fp32), lower the learning rate, or clip "
                          "gradients (--clip-norm)");
      return kTrainScaleStuck;
    }
    if (ctx.events.onStep && !ctx.events.onStep(record))
      last = true;
    if (t.checkpointEvery && (step + 1) % t.checkpointEvery == 0 && !last) {
      if (!saveCheckpoint())
        return kTrainError;
      if (!t.csv.empty() && !writeCsv(ctx, t.csv, csvHeader, csvRows))
        return kTrainError;
    }
    if (last)
      break;
  }

  if (!t.checkpoint.empty() && !saveCheckpoint())
    return kTrainError;
  if (!t.csv.empty() && !writeCsv(ctx, t.csv, csvHeader, csvRows))
    return kTrainError;
  if (!t.stateDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(t.stateDir))
      return ctx.fail(t.stateDir + ": cannot create the folder: " + ec.message());
    for (size_t i = 0; i < primary.stateNames.size(); ++i) {
      mixprec_tensor_info_t info;
      primary.step.module.stateInfo(i, info);
      llvm::SmallString<256> path(t.stateDir);
      llvm::sys::path::append(path, npyFileNameFor(primary.stateNames[i]));
      std::vector<float> values = primary.readState(i);
      NpyArray array = support::npyFromFloat32(
          std::vector<int64_t>(info.dims, info.dims + info.rank), values.data());
      if (!ctx.checkNotAnInput(std::string(path), error) ||
          !support::writeNpy(std::string(path), array, error))
        return ctx.fail(error);
    }
  }
  double seconds = millisecondsSince(runStart) / 1000;
  std::string summary = llvm::formatv(
      "trained {0} steps in {1:f2} s ({2} samples/s): {3} applied ({4:f1}%), {5} skipped; last "
      "loss {6}",
      stepsRun, seconds, int64_t(std::llround(stepsRun * stepRows / std::max(seconds, 1e-9))),
      stepsRun - skippedTotal, stepsRun ? 100.0 * (stepsRun - skippedTotal) / stepsRun : 0.0,
      skippedTotal, num(out.lastLoss));
  if (compare)
    summary += llvm::formatv("; {0}: last loss {1}, {2} skipped, mean loss gap {3}",
                             compare->label, num(out.compareLastLoss.value_or(NAN)),
                             compareSkipped, num(gapCount ? gapSum / gapCount : NAN))
                   .str();
  ctx.print(summary);
  return 0;
}

} // namespace

std::string npyFileNameFor(const std::string &name) {
  std::string s;
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    bool plain = isalnum(c) || c == '_' || c == '-' || (c == '.' && i > 0);
    if (plain)
      s += static_cast<char>(c);
    else
      s += llvm::formatv("%{0:X-2}", unsigned(c)).str();
  }
  // An empty name still needs a file of its own ("%" alone decodes to no
  // byte, so no other name maps here).
  if (s.empty())
    s = "%";
  return s + ".npy";
}

TrainingOptions::Scaling defaultScaling(passes::Precision precision) {
  return precision == passes::Precision::FP16 ? TrainingOptions::Scaling::Dynamic
                                              : TrainingOptions::Scaling::None;
}

bool fileFingerprint(const std::string &path, std::string &out, std::string &error) {
  std::string bytes;
  if (!common::readRegularFile(path, bytes, error))
    return false;
  out = llvm::utohexstr(runtime::fnv1a64(bytes.data(), bytes.size()), /*LowerCase=*/true) + ":" +
        std::to_string(bytes.size());
  return true;
}

TrainOutcome train(const TrainConfig &config, const TrainEvents &events) {
  TrainOutcome outcome;
  Ctx ctx{config, events, outcome, {}};
  int status = run(ctx);
  if (status != 0 && outcome.status == 0)
    ctx.fail("train failed without a message", status);
  outcome.status = status;
  return outcome;
}

} // namespace mixprec::compiler
