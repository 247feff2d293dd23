//===- TrainLoop.cpp - the training loop over compiled step modules -------===//
#include "train/TrainLoop.h"

#include "common/Escape.h"
#include "common/FileIO.h"
#include "runtime/kernels/Gemm.h"
#include "runtime/format/ModuleHash.h"
#include "train/Stats.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>

namespace mixprec::trainer {
namespace {

/// The version of the checkpoint's user blob this loop writes.
constexpr int kTrainStateVersion = 1;
/// The version of trainer.txt this loop writes and reads (2: a checksum
/// line; 1 is read without one).
constexpr int kFactsVersion = 2;

double millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

/// printf into a std::string.
template <typename... Args> std::string format(const char *spec, Args... args) {
  char text[512];
  std::snprintf(text, sizeof text, spec, args...);
  return text;
}

/// Prints a number the way the log does: 4 significant digits.
std::string num(double v) { return format("%.4g", v); }
/// Exactly (a float round-trips through 9 significant digits).
std::string exact(double v) { return format("%.9g", v); }

/// Bytes as "1.23 MB" (defined with the metrics).
std::string bytesText(double bytes);

/// What one runLoop call works with: where it reports, how it ends, and the
/// files it reads (no output may replace one).
struct Ctx {
  const TrainEvents &events;
  TrainOutcome &out;
  InputFiles &inputs;
  /// This process's rank in a data-parallel job (0 alone): rank 0 prints
  /// and writes, the others train beside it silently.
  int rank = 0, world = 1;
  Collective *collective = nullptr;
  double collectiveTimeout = 300;
  /// A CUDA session's collective: NCCL over `collective` (opened once, on
  /// the first CUDA session), null when it could not start (the all-reduce
  /// then goes through the host over MPI).
  std::unique_ptr<Collective> nccl;
  bool triedNccl = false;
  /// The collective the step's session calls (traffic for the summary).
  Collective *active = nullptr;

  int fail(const std::string &message, int status = kTrainError) {
    out.status = status;
    out.error = common::escapeControls(world > 1 ? "rank " + std::to_string(rank) + " of " +
                                                       std::to_string(world) + ": " + message
                                                 : message);
    return status;
  }
  void print(const std::string &line) {
    if (events.print && rank == 0)
      events.print(line);
  }
  /// Whether this process writes the run's files (rank 0).
  bool writes() const { return rank == 0; }
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

using support::formatShape;

/// Converts each column to the kind its module input takes (float, int,
/// bool). `batch`: the samples per run the module must take (0: any, the
/// evaluation's). With `trainLabels`, the last column is the test labels,
/// which take the training labels' kind (the evaluation module has no
/// labels input).
bool convertColumns(const std::string &model, std::vector<Column> &columns,
                    const mixprec::Module &module, int64_t batch, std::string &error,
                    const Column *trainLabels = nullptr) {
  for (Column &c : columns) {
    if (trainLabels && &c == &columns.back()) {
      if (c.rowShape != trainLabels->rowShape)
        return error = c.path + ": its samples have shape " + formatShape(c.rowShape) +
                       ", but those of " + trainLabels->path + " have " +
                       formatShape(trainLabels->rowShape),
               false;
      c.dtype = trainLabels->dtype;
      if (!support::hostTensorFromNpy(c.array, trainLabels->all.kind, c.array.shape, c.path,
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
    std::vector<int64_t> dims(info.dims, info.dims + info.rank);
    if (batch > 0 && info.rank > 0 && info.dims[0] != batch)
      return error = model + ": graph input '" + c.name + "' has a fixed batch of " +
                     std::to_string(info.dims[0]) + " (" + formatShape(dims) +
                     "): train with --batch " + std::to_string(info.dims[0]) +
                     ", or export the model with a symbolic batch dim",
             false;
    std::vector<int64_t> expected(dims.begin() + std::min<size_t>(info.rank, 1), dims.end());
    if (info.rank == 0 || expected != c.rowShape)
      return error = c.path + ": its samples have shape " + formatShape(c.rowShape) +
                     ", but input '" + c.name + "' of the step takes " + formatShape(dims) +
                     " (a batch of samples of shape " + formatShape(expected) + ")",
             false;
    if (!support::hostTensorFromNpy(c.array, support::kindOfDType(info.dtype), c.array.shape,
                                    c.path, c.name, c.all, error))
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

/// Binds `batch` (one tensor per column) to the session's inputs and runs
/// it; false with `error`.
bool runBatch(mixprec::Session &session, const std::vector<Column> &columns,
              const std::vector<HostTensor> &batch, std::string &error) {
  for (size_t i = 0; i < columns.size(); ++i)
    if (mixprec::Status s = bindBatch(session, columns[i].name, columns[i].dtype, batch[i]);
        !s.ok())
      return error = s.message(), false;
  if (mixprec::Status s = session.run(); !s.ok())
    return error = s.message(), false;
  return true;
}

/// A module on the runtime, with a session.
struct Loaded {
  mixprec::Module module;
  mixprec::Session session;
};

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

/// Gives `session` the job's collective (a job of several ranks only). 0,
/// or the status after failing ctx.
int joinCollective(Ctx &ctx, const StepFacts &facts, mixprec::Session &session) {
  if (!ctx.collective || ctx.world <= 1)
    return 0;
  Collective *use = ctx.collective;
  if (!ctx.triedNccl) {
    // Device buffers on the session's stream: NCCL, its id sent over MPI,
    // when every rank runs on CUDA and loads NCCL (the ranks agree first:
    // NCCL's setup is a collective of its own, which every rank or none
    // must enter).
    ctx.triedNccl = true;
    std::string why = session.backend() == MIXPREC_BACKEND_CUDA
                          ? probeNccl()
                          : std::string("rank ") + std::to_string(ctx.rank) + " runs on the " +
                                mixprec_backend_name(session.backend()) + " backend";
    int32_t cannot = why.empty() ? 0 : 1;
    if (std::string e = ctx.collective->allReduce(&cannot, 1, MIXPREC_DTYPE_I32, Reduce::Max);
        !e.empty())
      return ctx.fail(facts.model + ": agreeing on the collective: " + e);
    if (!cannot) {
      ctx.nccl =
          openNcclCollective(ctx.collective, "", ctx.rank, ctx.world, ctx.collectiveTimeout, why);
      if (!ctx.nccl)
        return ctx.fail(facts.model + ": " + why);
    } else if (session.backend() == MIXPREC_BACKEND_CUDA) {
      ctx.print("note: not every rank can use NCCL" + (why.empty() ? "" : " (" + why + ")") +
                ": the gradients are all-reduced through the host over MPI");
    }
  }
  if (ctx.nccl && session.backend() == MIXPREC_BACKEND_CUDA)
    use = ctx.nccl.get();
  if (!ctx.active)
    ctx.active = use;
  mixprec_collective_t hook = use->hook();
  if (mixprec::Status s = session.setCollective(&hook); !s.ok())
    return ctx.fail(facts.model + ": " + s.message());
  return 0;
}

/// One training run: the step's module and session, its evaluation.
struct Run {
  std::string label; ///< "" for the main run, else the --compare precision
  Loaded step;
  size_t lossIndex = 0, skippedIndex = 0, normIndex = 0, scaleIndex = 0;
  std::vector<std::string> stateNames;
  std::vector<size_t> stateBytes;
  /// Optimizer-state sharding (StepFacts::shardWorld): which states are
  /// this rank's slice of a whole (its parameter's shape, `wholeShapes`).
  std::vector<bool> sharded;
  std::vector<std::vector<int64_t>> wholeShapes;
  std::vector<mixprec_dtype_t> stateTypes;

  // Evaluation.
  std::optional<Loaded> eval;
  int64_t evalBatch = 0;
  size_t evalOutput = 0;

  /// Creates the sessions on `backend`. 0, or the status after failing ctx.
  int start(Ctx &ctx, const StepFacts &facts, StepModules &modules, mixprec_backend_t backend,
            const std::vector<Column> &test) {
    label = modules.label;
    mixprec_session_options_t options = MIXPREC_SESSION_OPTIONS_INIT;
    options.backend = backend;
    step.module = modules.step;
    if (mixprec::Status s = mixprec::Session::create(step.module, step.session, options); !s.ok())
      return ctx.fail(facts.model + ": " + s.message());
    if (int rc = joinCollective(ctx, facts, step.session))
      return rc;
    lossIndex = outputIndex(step.module, "loss");
    skippedIndex = outputIndex(step.module, "skipped");
    normIndex = outputIndex(step.module, "grad_norm");
    scaleIndex = outputIndex(step.module, "loss_scale");
    if (lossIndex == SIZE_MAX || skippedIndex == SIZE_MAX || normIndex == SIZE_MAX ||
        scaleIndex == SIZE_MAX)
      return ctx.fail(facts.model + ": the step module lacks one of the outputs loss, skipped, "
                      "grad_norm, loss_scale: it is not a training step");
    for (size_t i = 0; i < step.module.stateCount(); ++i) {
      mixprec_tensor_info_t info;
      step.module.stateInfo(i, info);
      stateNames.push_back(info.name);
      stateBytes.push_back(info.byte_size);
      stateTypes.push_back(info.dtype);
      wholeShapes.emplace_back(info.dims, info.dims + info.rank);
    }
    // A sharded state "P.exp_avg" is a slice of a tensor of P's shape.
    sharded.assign(stateNames.size(), false);
    for (size_t i = 0; facts.shardWorld > 0 && i < stateNames.size(); ++i) {
      if (!isOptimizerState(stateNames[i]))
        continue;
      const std::string param = stateNames[i].substr(0, stateNames[i].rfind('.'));
      auto it = std::find(stateNames.begin(), stateNames.end(), param);
      if (it == stateNames.end())
        return ctx.fail(facts.model + ": the step's state '" + stateNames[i] +
                        "' is sharded, but it has no state '" + param + "' it is a slice of");
      sharded[i] = true;
      wholeShapes[i] = wholeShapes[size_t(it - stateNames.begin())];
    }
    if (test.empty())
      return 0;
    if (!modules.eval)
      return ctx.fail(facts.model + ": test data was given, but there is no evaluation module");
    eval.emplace();
    eval->module = *modules.eval;
    if (mixprec::Status s = mixprec::Session::create(eval->module, eval->session, options);
        !s.ok())
      return ctx.fail(facts.model + ": " + s.message());
    evalOutput = 0;
    if (!facts.evalOutput.empty()) {
      evalOutput = outputIndex(eval->module, facts.evalOutput.c_str());
      if (evalOutput == SIZE_MAX)
        return ctx.fail(facts.model + ": the evaluation module has no output '" +
                        facts.evalOutput + "'");
    }
    evalBatch = evalBatchFor(test.front().rows());
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
    return runBatch(step.session, columns, batch, error);
  }

  float loss() const { return scalarOutput(step.session, lossIndex); }
  bool skipped() const { return scalarOutput(step.session, skippedIndex) != 0.0f; }
  float gradNorm() const { return scalarOutput(step.session, normIndex); }
  float lossScale() const { return scalarOutput(step.session, scaleIndex); }

  /// Whether any state is a slice.
  bool anySharded() const {
    return std::find(sharded.begin(), sharded.end(), true) != sharded.end();
  }
  /// The elements and bytes of state i's whole tensor (its own, when not
  /// sharded).
  size_t wholeElements(size_t i) const {
    size_t n = 1;
    for (int64_t d : wholeShapes[i])
      n *= static_cast<size_t>(d);
    return n;
  }
  size_t wholeBytes(size_t i) const { return wholeElements(i) * mixprec_dtype_size(stateTypes[i]); }

  /// Every state whole, in order: a sharded one gathered from every rank
  /// (collective: the ranks' slices in rank order, the padding dropped), so
  /// that a checkpoint or a state file holds what an unsharded run holds.
  /// Every rank calls it. False with `error`.
  bool wholeStates(Collective *collective, std::vector<std::vector<uint8_t>> &out,
                   std::string &error) const {
    out.assign(stateNames.size(), {});
    for (size_t i = 0; i < stateNames.size(); ++i) {
      std::vector<uint8_t> mine(stateBytes[i]);
      if (mixprec::Status s =
              step.session.readState(stateNames[i].c_str(), mine.data(), mine.size());
          !s.ok())
        return error = s.message(), false;
      if (!sharded[i]) {
        out[i] = std::move(mine);
        continue;
      }
      const size_t world = collective ? size_t(collective->worldSize()) : 1;
      std::vector<uint8_t> all(mine.size() * world);
      if (world == 1)
        all = mine;
      else if (std::string why = collective->allGather(mine.data(), all.data(), mine.size());
               !why.empty())
        return error = "gathering the optimizer state '" + stateNames[i] + "': " + why, false;
      all.resize(wholeBytes(i));
      out[i] = std::move(all);
    }
    return true;
  }

  /// A state's values (F32: every state the step keeps is FP32).
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

  /// Evaluates the model as trained on the test set. In a job of several
  /// ranks (`collective`) rank r scores the evaluation batches r, r + N,
  /// ..., and the ranks' sums are gathered and added in rank order, so every
  /// rank gets the same result for 1/N of the work. False with `error`.
  bool evaluate(const StepFacts &facts, const std::vector<Column> &test, Collective *collective,
                Evaluation &result, std::string &error) {
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
    const LossKind loss = facts.loss;
    const Column *labels = loss == LossKind::Model ? nullptr : &test.back();
    size_t dataColumns = labels ? test.size() - 1 : test.size();
    int64_t rows = test.front().rows();
    std::vector<int64_t> order(rows);
    for (int64_t i = 0; i < rows; ++i)
      order[i] = i;
    double lossSum = 0;
    int64_t counted = 0, correct = 0, batches = 0;
    mixprec_tensor_info_t out;
    eval->module.outputInfo(evalOutput, out);
    const int64_t classes = facts.classes;
    const int64_t rank = collective ? collective->rank() : 0;
    const int64_t world = collective ? collective->worldSize() : 1;
    for (int64_t first = 0, index = 0; first < rows; first += evalBatch, ++index) {
      if (index % world != rank)
        continue;
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
        switch (loss) {
        case LossKind::CrossEntropy: {
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
        case LossKind::Mse:
          for (int64_t k = 0; k < perRow; ++k) {
            double d = double(row[k]) - labels->all.floats[(first + r) * perRow + k];
            lossSum += d * d;
            ++counted;
          }
          break;
        case LossKind::Model:
          // One loss per batch (the padded last one counts as a whole).
          if (r == 0)
            lossSum += row[0];
          break;
        }
      }
    }
    if (world > 1) {
      // Every rank's sums, added in rank order: the same bits everywhere.
      struct Sums {
        double loss;
        int64_t counted, correct, batches;
      } mine{lossSum, counted, correct, batches};
      std::vector<Sums> all(static_cast<size_t>(world));
      if (std::string why = collective->allGather(&mine, all.data(), sizeof mine); !why.empty())
        return error = "gathering the ranks' evaluation sums: " + why, false;
      lossSum = 0;
      counted = correct = batches = 0;
      for (const Sums &s : all) {
        lossSum += s.loss;
        counted += s.counted;
        correct += s.correct;
        batches += s.batches;
      }
    }
    result = Evaluation();
    if (loss == LossKind::Model) {
      result.loss = lossSum / batches;
    } else {
      result.loss = counted ? lossSum / counted : NAN;
      if (loss == LossKind::CrossEntropy)
        result.correct = correct, result.counted = counted;
    }
    return true;
  }
};

/// Splits "key value" lines (a value runs to the end of its line).
std::vector<std::pair<std::string, std::string>> keyValueLines(const std::string &text) {
  std::vector<std::pair<std::string, std::string>> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    size_t space = line.find(' ');
    if (space == std::string::npos)
      lines.emplace_back(line, "");
    else
      lines.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  return lines;
}

/// Parses a decimal integer (the whole string); false if it is not one.
template <typename T> bool parseInteger(const std::string &text, T &out) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  if constexpr (std::is_signed_v<T>) {
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (errno || *end)
      return false;
    out = static_cast<T>(v);
  } else {
    if (text[0] == '-')
      return false;
    unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (errno || *end)
      return false;
    out = static_cast<T>(v);
  }
  return true;
}

/// The checkpoint's user blob: what the loop needs to continue a run (the
/// runtime keeps the states), as "key value" lines.
struct TrainState {
  int version = kTrainStateVersion;
  int64_t stepsDone = 0;
  uint64_t seed = 0;
  bool shuffle = true;
  /// The global batch (every rank's samples per step) and the ranks.
  int64_t batch = 0, rows = 0, world = 1;
  std::string model, precision;

  std::string serialize() const {
    return "mixprec-train " + std::to_string(version) + "\nsteps_done " +
           std::to_string(stepsDone) + "\nseed " + std::to_string(seed) + "\nshuffle " +
           (shuffle ? "1" : "0") + "\nbatch " + std::to_string(batch) + "\nrows " +
           std::to_string(rows) + "\nworld " + std::to_string(world) + "\nmodel " + model +
           "\nprecision " + precision + "\n";
  }

  /// Parses a blob; "" or why it cannot be read.
  std::string parse(const std::string &text) {
    auto lines = keyValueLines(text);
    if (lines.empty() || lines.front().first != "mixprec-train")
      return "it was not written by mixprec train";
    if (!parseInteger(lines.front().second, version))
      return "its trainer record is damaged";
    if (version > kTrainStateVersion)
      return "it was written by a newer mixprec (trainer record version " +
             std::to_string(version) + "; this one reads " +
             std::to_string(kTrainStateVersion) + ")";
    for (size_t i = 1; i < lines.size(); ++i) {
      const auto &[key, value] = lines[i];
      bool bad = false;
      if (key == "steps_done")
        bad = !parseInteger(value, stepsDone);
      else if (key == "seed")
        bad = !parseInteger(value, seed);
      else if (key == "shuffle")
        shuffle = value == "1";
      else if (key == "batch")
        bad = !parseInteger(value, batch);
      else if (key == "rows")
        bad = !parseInteger(value, rows);
      else if (key == "world")
        bad = !parseInteger(value, world) || world < 1;
      else if (key == "model")
        model = value;
      else if (key == "precision")
        precision = value;
      if (bad)
        return "its trainer record is damaged (" + key + ")";
    }
    return "";
  }
};

/// Writes the CSV log atomically (header and one row per step).
bool writeCsv(Ctx &ctx, const std::string &path, const std::string &header,
              const std::vector<std::string> &rows) {
  if (!ctx.writes())
    return true;
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

/// mkdir -p; "" or the error.
std::string createDirectories(const std::string &path) {
  std::string partial;
  size_t at = 0;
  while (at <= path.size()) {
    size_t slash = path.find('/', at);
    if (slash == std::string::npos)
      slash = path.size();
    partial = path.substr(0, slash);
    at = slash + 1;
    if (partial.empty())
      continue;
    if (::mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST)
      return path + ": cannot create the folder: " + std::strerror(errno);
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return path + ": cannot create the folder: a file of that name is in the way";
  return "";
}

std::string joinPath(const std::string &folder, const std::string &name) {
  if (folder.empty() || folder.back() == '/')
    return folder + name;
  return folder + "/" + name;
}

/// A number for JSON: "null" when not finite.
std::string jsonNumber(double v) { return std::isfinite(v) ? exact(v) : "null"; }

/// A string for JSON, quoted and escaped.
std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += static_cast<char>(c);
    else if (c < 0x20)
      out += format("\\u%04x", unsigned(c));
    else
      out += static_cast<char>(c);
  }
  return out + "\"";
}

/// One parameter's gradients at one comparison: the run's (unscaled)
/// against FP32's on the same batch and master weights.
struct GradientError {
  std::string name;
  double relL2 = NAN, cosine = NAN, zeroFraction = NAN, fp32ZeroFraction = NAN, drift = NAN;
  size_t elements = 0;
};
struct GradientComparison {
  uint64_t seed = 0;
  int64_t step = 0;
  std::vector<GradientError> params;
};

/// ||a - b|| / ||b||, cosine, zero fractions of a and b.
GradientError compareVectors(const std::vector<float> &a, const std::vector<float> &b) {
  GradientError e;
  double diff = 0, aa = 0, bb = 0, ab = 0;
  int64_t zeroA = 0, zeroB = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    double x = a[i], y = b[i];
    diff += (x - y) * (x - y);
    aa += x * x, bb += y * y, ab += x * y;
    zeroA += x == 0, zeroB += y == 0;
  }
  e.relL2 = bb > 0 ? std::sqrt(diff / bb) : (diff > 0 ? INFINITY : 0);
  e.cosine = aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : (aa == bb ? 1 : 0);
  if (!a.empty())
    e.zeroFraction = double(zeroA) / a.size(), e.fp32ZeroFraction = double(zeroB) / a.size();
  e.elements = a.size();
  return e;
}

/// Whether parameter `k` of these element counts may be named the worst
/// layer: one of more than one element, or any when every parameter is a
/// scalar (a learned scalar's FP32 gradient is often near zero, so its
/// relative error says little).
bool namesWorst(const std::vector<size_t> &elements, size_t k) {
  return elements[k] > 1 ||
         std::all_of(elements.begin(), elements.end(), [](size_t n) { return n <= 1; });
}

/// The peak FLOP/s the GEMMs of `precision` can reach on a GPU of sm_`sm`
/// (dense tensor-core rates of the SXM parts' data sheets; FP32 without
/// tensor cores), with where it comes from; 0 when the table has none.
double gpuPeakFlops(int sm, const std::string &precision, std::string &source) {
  struct Row {
    int sm;
    const char *card;
    double fp32, tf32, half, fp8; // TFLOP/s
  };
  static const Row rows[] = {
      {80, "A100 SXM", 19.5, 156, 312, 0},
      {89, "L40S", 91.6, 183, 362, 733},
      {90, "H100/H200 SXM", 66.9, 494.7, 989.4, 1978.9},
      {100, "B200", 80, 1100, 2250, 4500},
  };
  for (const Row &r : rows) {
    if (r.sm != sm)
      continue;
    double peak = precision == "fp32"                        ? r.fp32
                  : precision == "tf32"                      ? r.tf32
                  : precision == "bf16" || precision == "fp16" ? r.half
                  : precision == "fp8"                       ? r.fp8
                                                             : 0;
    source = format("sm_%d table (%s, dense %s: %.4g TFLOP/s)", sm, r.card, precision.c_str(),
                    peak);
    return peak * 1e12;
  }
  source = format("no peak for sm_%d in the table (sm_80, sm_89, sm_90, sm_100)", sm);
  return 0;
}

/// The FP32 FLOP/s of a short SGEMM on this CPU (the CPU backend's GEMM:
/// OpenBLAS where the build has it), the best of a few 256^3 runs.
double cpuPeakFlops() {
  const int64_t n = 256;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  double best = 0;
  auto start = std::chrono::steady_clock::now();
  for (int rep = 0; rep < 20 && (rep < 3 || millisecondsSince(start) < 200); ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    runtime::cpu::detail::sgemm(false, n, n, n, a.data(), n, b.data(), n, c.data(), n, 0.0f);
    double seconds = millisecondsSince(t0) / 1000;
    if (seconds > 0)
      best = std::max(best, 2.0 * n * n * n / seconds);
  }
  return best;
}

int finish(Ctx &ctx, LoopInputs &in, const std::vector<GradientComparison> &comparisons,
           const std::string &csvHeader, const std::vector<std::string> &csvRows,
           const std::string &backendName);

/// --reinit: every trained parameter of `run` (and the same values in
/// `beside`'s) resampled from a uniform distribution with the mean and
/// standard deviation of its initial values, from splitmix64 seeded by the
/// run's seed and the parameter's index; a parameter whose initial values
/// are all equal (a zero bias, a norm's ones) keeps them.
bool reinitialize(Run &run, Run *beside, uint64_t seed, std::string &error) {
  for (size_t i = 0; i < run.stateNames.size(); ++i) {
    const std::string &name = run.stateNames[i];
    if (!isParameterState(name))
      continue;
    std::vector<float> values = run.readState(i);
    if (values.size() < 2)
      continue;
    double sum = 0, squares = 0;
    for (float v : values)
      sum += v;
    const double mean = sum / values.size();
    for (float v : values)
      squares += (v - mean) * (v - mean);
    const double sd = std::sqrt(squares / values.size());
    if (!(sd > 0) || !std::isfinite(sd))
      continue;
    uint64_t state = seed ^ (0x9e3779b97f4a7c15ull * (i + 1)) ^ 0x2545f4914f6cdd1dull;
    const double half = sd * std::sqrt(3.0);
    for (float &v : values) {
      double u = double(splitmix64(state) >> 11) * 0x1.0p-53; // [0, 1)
      v = static_cast<float>(mean + (2 * u - 1) * half);
    }
    for (Run *r : {&run, beside}) {
      if (!r)
        continue;
      if (mixprec::Status s = r->step.session.writeState(name.c_str(), values.data(),
                                                         values.size() * sizeof(float));
          !s.ok())
        return error = s.message(), false;
    }
  }
  return true;
}

/// Fails the run unless the options, data and outputs fit together, and
/// converts the data to the step's inputs. 0, or the status after failing ctx.
int checkRunInputs(Ctx &ctx, LoopInputs &in) {
  const StepFacts &facts = in.facts;
  const LoopOptions &t = in.options;
  std::vector<Column> &train = in.train, &test = in.test;
  const bool modelLoss = facts.loss == LossKind::Model;
  std::string error;
  const std::string &model = facts.model;
  if (std::string why = checkLoopOptions(t, !test.empty()); !why.empty())
    return ctx.fail(why, kTrainUsage);
  if (t.compareEvery && !in.compare)
    return ctx.fail("train: --compare-every needs --compare fp32", kTrainUsage);
  if (!t.report.empty() && !in.renderReport)
    return ctx.fail("train: --report: " + in.program +
                        " has no report renderer; write --csv and --metrics and run `mixprec "
                        "report-run CSV --metrics FILE.json -o run.html`",
                    kTrainUsage);
  if (train.empty())
    return ctx.fail("train: no training data: give --data NAME=FILE.npy for each graph input",
                    kTrainUsage);
  const int64_t rows = train.front().rows();
  if (std::string why =
          checkStepRows(facts.batch * ctx.world, facts.accumulate, rows, train.front().path);
      !why.empty())
    return ctx.fail(ctx.world > 1 ? why + " (" + std::to_string(ctx.world) + " ranks x --batch " +
                                        std::to_string(facts.batch) + ")"
                                  : why);
  if (ctx.world > 1 && !facts.dataParallel)
    return ctx.fail(model + ": this is rank " + std::to_string(ctx.rank) + " of a job of " +
                        std::to_string(ctx.world) +
                        " ranks, but the step was compiled for one process: it does not "
                        "average its gradients across ranks (compile it with --data-parallel, "
                        "or mixprec train under mpirun does)",
                    kTrainUsage);
  if (facts.shardWorld > 0 && facts.shardWorld != ctx.world)
    return ctx.fail(model + ": the step keeps its optimizer state sharded over " +
                        std::to_string(facts.shardWorld) + " ranks (--shard-optimizer), but " +
                        (ctx.world > 1 ? "this job has " + std::to_string(ctx.world)
                                       : std::string("this is one process")) +
                        " (run it with as many ranks, or compile it for this job; a checkpoint "
                        "resumes either way)",
                    kTrainUsage);
  const int64_t stepRows = facts.batch * facts.accumulate;
  // The outputs: none may replace an input. The checkpoint may be the file
  // resumed from: it is read whole before it is written again.
  for (const std::string *path : {&t.csv, &t.checkpoint, &t.metrics, &t.report})
    if (!path->empty() && !ctx.checkNotAnInput(*path, error))
      return ctx.fail(error);

  if (!convertColumns(model, train, in.primary.step, stepRows, error) ||
      (!test.empty() &&
       (!in.primary.eval ||
        !convertColumns(model, test, *in.primary.eval, 0, error,
                        modelLoss ? nullptr : &train.back()))))
    return ctx.fail(error.empty() ? model +
                                        ": test data was given, but there is no evaluation module"
                                  : error);
  if (facts.loss == LossKind::CrossEntropy &&
      (!checkLabels(train.back(), facts.classes, error) ||
       (!test.empty() && !checkLabels(test.back(), facts.classes, error))))
    return ctx.fail(error);
  return 0;
}

/// What the seeds of one run share: the run's shape, the CSV so far, the
/// gradient comparisons and the backend's name.
struct RunShared {
  Ctx &ctx;
  LoopInputs &in;
  /// stepRows: this rank's samples per step; globalRows: every rank's.
  int64_t rows = 0, stepRows = 0, globalRows = 0, stepsPerEpoch = 0, total = 0;
  bool ensemble = false, compareGrads = false;
  std::string csvHeader;
  std::vector<std::string> csvRows;
  std::vector<GradientComparison> comparisons;
  std::string backendName;
  // The gradient outputs of the run's step and their indices in the FP32
  // step's (--compare-every): (parameter, index in the run's module).
  std::vector<std::pair<std::string, size_t>> gradOutputs;
  std::vector<size_t> probeGradOutputs;
};

/// The CSV's header: the seed column for an ensemble, the compare run's and
/// the gradient comparison's columns when they are measured.
std::string csvHeaderFor(bool ensemble, bool compare, bool compareGrads) {
  std::string csvHeader = "step,epoch,loss,loss_scale,skipped,grad_norm,test_loss,test_accuracy";
  if (ensemble)
    csvHeader = "seed," + csvHeader;
  if (compare)
    csvHeader += ",fp32_loss,fp32_skipped,fp32_test_loss,fp32_test_accuracy";
  if (compareGrads)
    csvHeader += ",grad_rel_l2_max,grad_cosine_min";
  return csvHeader;
}

/// Finds the step's gradient outputs and their indices in the FP32 step
/// (--compare-every). 0, or the status after failing ctx.
int findGradOutputs(RunShared &r) {
  const std::string &model = r.in.facts.model;
  for (size_t i = 0; i < r.in.primary.step.outputCount(); ++i) {
    mixprec_tensor_info_t info;
    r.in.primary.step.outputInfo(i, info);
    std::string name = info.name ? info.name : "";
    if (name.rfind(kGradOutputPrefix, 0) != 0)
      continue;
    size_t j = outputIndex(r.in.compare->step, name.c_str());
    if (j == SIZE_MAX)
      return r.ctx.fail(model + ": the FP32 step lacks the gradient output '" + name + "'");
    r.gradOutputs.emplace_back(name.substr(std::strlen(kGradOutputPrefix)), i);
    r.probeGradOutputs.push_back(j);
  }
  if (r.gradOutputs.empty())
    return r.ctx.fail(model + ": the step has no gradient outputs: --compare-every needs a "
                      "step compiled with them (mixprec train compiles it so)");
  return 0;
}

/// The log line's means since it was last printed.
struct StepWindow {
  double loss = 0, norm = 0, compareLoss = 0;
  int64_t steps = 0, applied = 0;
};

/// The training of one seed: its runs, its progress and its counters.
struct SeedRun {
  RunShared &r;
  Ctx &ctx;
  LoopInputs &in;
  const StepFacts &facts;
  const LoopOptions &t;
  const std::string &model;
  int64_t seedIndex;
  uint64_t seed;
  std::string error;
  bool stoppedByCallback = false;

  Run primary;
  std::optional<Run> compare;
  // The gradient comparison's FP32 step: a session of the compare run's
  // module that takes the run's states before each compared step.
  std::optional<mixprec::Session> probe;
  TrainState state;
  /// Printed after the resume line: a checkpoint of another world size.
  std::string resumeNote;
  /// The collective's traffic when the seed's steps began.
  Collective::Traffic trafficAtStart;

  StepWindow window;
  int64_t skippedTotal = 0, compareSkipped = 0, skippedInARow = 0, stepsRun = 0;
  double gapSum = 0;
  int64_t gapCount = 0;
  // The final train loss: the applied steps of the run's last tenth.
  int64_t tailFrom = 0;
  double tailLoss = 0, tailCompareLoss = 0, normSum = 0;
  int64_t tailCount = 0, tailCompareCount = 0, normCount = 0;
  SeedResult result;
  std::vector<int64_t> order;
  int64_t orderEpoch = -1;
  std::chrono::steady_clock::time_point windowStart, runStart;
  std::vector<HostTensor> batch;

  SeedRun(RunShared &shared, int64_t index)
      : r(shared), ctx(shared.ctx), in(shared.in), facts(shared.in.facts), t(shared.in.options),
        model(shared.in.facts.model), seedIndex(index),
        seed(shared.in.options.seed + static_cast<uint64_t>(index)) {}

  int start();
  int resume();
  bool saveCheckpoint();
  bool saveGatheredCheckpoint();
  int loadIntoShards();
  void printStart();
  int runSteps();
  int runOneStep(int64_t step, bool &last);
  bool evaluate(int64_t step, TrainStepRecord &record, std::string &cells,
                std::string &compareCells);
  bool probeGradients(std::vector<std::vector<float>> &fp32);
  int compareGradients(int64_t step, const std::vector<std::vector<float>> &fp32Grads,
                       std::string &gradCells);
  void printWindow(int64_t step, int64_t epoch, const TrainStepRecord &record);
  int stopScaleStuck(int64_t step, const TrainStepRecord &record);
  int saveStates();
  int checkRanksAgree();
  void printSummary();
};

/// Creates the seed's sessions, resamples (--reinit) and resumes
/// (--resume). 0, or the status after failing ctx.
int SeedRun::start() {
  if (int rc = primary.start(ctx, facts, in.primary, t.backend, in.test))
    return rc;
  if (in.compare) {
    compare.emplace();
    if (int rc = compare->start(ctx, facts, *in.compare, t.backend, in.test))
      return rc;
  }
  if (r.compareGrads) {
    mixprec_session_options_t options = MIXPREC_SESSION_OPTIONS_INIT;
    options.backend = t.backend;
    probe.emplace();
    if (mixprec::Status s = mixprec::Session::create(compare->step.module, *probe, options);
        !s.ok())
      return ctx.fail(model + ": " + s.message());
    if (int rc = joinCollective(ctx, facts, *probe))
      return rc;
  }
  r.backendName = mixprec_backend_name(primary.step.session.backend());
  if (t.reinit && !reinitialize(primary, compare ? &*compare : nullptr, seed, error))
    return ctx.fail(model + ": --reinit: " + error);

  state.seed = seed;
  state.shuffle = t.shuffle;
  state.batch = r.globalRows;
  state.rows = r.rows;
  state.world = ctx.world;
  state.precision = facts.precisionOptions;
  state.model = facts.modelFingerprint;
  if (!t.resume.empty())
    return resume();
  return 0;
}

/// Loads --resume's checkpoint after checking that it was written by this
/// run. 0, or the status after failing ctx.
int SeedRun::resume() {
  // The trainer's record first (what the run was: model, batch, seed,
  // precision), so that a checkpoint of another run is named by what
  // differs, not by the states its step happens to lack.
  std::vector<char> blob(4096);
  size_t blobBytes = 0;
  if (mixprec::Status s = mixprec::Session::readCheckpointUserBlob(
          t.resume.c_str(), blob.data(), blob.size(), blobBytes);
      !s.ok())
    return ctx.fail(t.resume + ": cannot resume from it: " + s.message());
  TrainState saved;
  if (std::string why = saved.parse(std::string(blob.data(), blobBytes)); !why.empty())
    return ctx.fail(t.resume + ": cannot resume from it: " + why);
  auto mismatch = [&](const std::string &what, const std::string &then, const std::string &now) {
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
    return mismatch(ctx.world > 1 || saved.world > 1
                        ? "samples per step (--batch x --accumulate x ranks)"
                    : facts.accumulate > 1 ? "samples per step (--batch x --accumulate)"
                                           : "--batch",
                    std::to_string(saved.batch), std::to_string(state.batch));
  if (saved.seed != state.seed)
    return mismatch("--seed", std::to_string(saved.seed), std::to_string(state.seed));
  if (saved.shuffle != state.shuffle)
    return mismatch("shuffling", saved.shuffle ? "on" : "off", state.shuffle ? "on" : "off");
  if (saved.precision != state.precision) {
    // "precision=bf16 ..." -> bf16: name the precisions when they differ.
    auto precisionOf = [](const std::string &options) {
      size_t at = options.find("precision=");
      if (at == std::string::npos)
        return std::string();
      at += std::strlen("precision=");
      return options.substr(at, options.find_first_of(" }", at) - at);
    };
    std::string then = precisionOf(saved.precision), now = precisionOf(state.precision);
    if (!then.empty() && then != now)
      return ctx.fail(t.resume + ": cannot resume from it: it was written at " + then +
                      ", this run is " + (now.empty() ? "another precision" : now) +
                      " (resume with --precision " + then + ", or start a new run)");
    return mismatch("precision options", "'" + saved.precision + "'",
                    "'" + state.precision + "'");
  }
  if (primary.anySharded()) {
    if (int rc = loadIntoShards())
      return rc;
  } else if (mixprec::Status s = primary.step.session.loadCheckpoint(t.resume.c_str(), blob.data(),
                                                                     blob.size(), blobBytes);
             !s.ok()) {
    return ctx.fail(t.resume + ": cannot resume from it: " + s.message());
  }
  state.stepsDone = saved.stepsDone;
  if (saved.world != state.world)
    resumeNote =
        ("note: " + t.resume + " was written by a job of " + std::to_string(saved.world) + " rank" +
         (saved.world > 1 ? "s" : "") + "; this one has " + std::to_string(state.world) +
         ": the global batch stays " + std::to_string(state.batch) + " samples (" +
         std::to_string(r.stepRows) + " per rank), so the data order goes on where it stopped");
  if (state.stepsDone >= r.total)
    return ctx.fail(t.resume + ": the run it continues has done " +
                    std::to_string(state.stepsDone) + " steps already; ask for more (--steps " +
                    std::to_string(r.total) + " is the total, not the steps still to do)");
  return 0;
}

/// Writes --checkpoint; false after failing ctx.
bool SeedRun::saveCheckpoint() {
  if (primary.anySharded())
    return saveGatheredCheckpoint();
  if (!ctx.writes())
    return true;
  std::string blob = state.serialize();
  mixprec::Status s =
      primary.step.session.saveCheckpoint(t.checkpoint.c_str(), blob.data(), blob.size());
  if (!s.ok())
    ctx.fail(t.checkpoint + ": " + s.message());
  return s.ok();
}

/// Sharded optimizer state: every rank gives its slices, rank 0 writes the
/// checkpoint an unsharded run writes (the same states, whole), which
/// resumes with or without sharding and on any number of ranks. False
/// after failing ctx.
bool SeedRun::saveGatheredCheckpoint() {
  std::vector<std::vector<uint8_t>> whole;
  if (!primary.wholeStates(ctx.collective, whole, error))
    return ctx.fail(t.checkpoint + ": " + error), false;
  if (!ctx.writes())
    return true;
  std::vector<mixprec_checkpoint_state_t> states(whole.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    mixprec_tensor_info_t &info = states[i].info;
    info.name = primary.stateNames[i].c_str();
    info.dtype = primary.stateTypes[i];
    info.rank = primary.wholeShapes[i].size();
    info.dims = primary.wholeShapes[i].data();
    info.element_count = primary.wholeElements(i);
    info.byte_size = whole[i].size();
    states[i].data = whole[i].data();
  }
  std::string blob = state.serialize();
  mixprec::Status s = mixprec::Session::writeCheckpoint(t.checkpoint.c_str(), states.data(),
                                                        states.size(), blob.data(), blob.size());
  if (!s.ok())
    ctx.fail(t.checkpoint + ": " + s.message());
  return s.ok();
}

/// Sharded optimizer state: loads --resume's whole states (a checkpoint of
/// a sharded run or not), each sharded one as this rank's slice (the last
/// zero-padded). 0, or the status after failing ctx.
int SeedRun::loadIntoShards() {
  std::vector<std::vector<uint8_t>> found(primary.stateNames.size());
  std::string why;
  size_t count = 0;
  mixprec::Status s = mixprec::Session::readCheckpointStates(
      t.resume.c_str(), [&](const mixprec_checkpoint_state_t &c) {
        ++count;
        auto it = std::find(primary.stateNames.begin(), primary.stateNames.end(), c.info.name);
        if (it == primary.stateNames.end()) {
          why = "it has a state '" + std::string(c.info.name) + "' this step lacks";
          return false;
        }
        const size_t i = size_t(it - primary.stateNames.begin());
        if (c.info.dtype != primary.stateTypes[i] ||
            std::vector<int64_t>(c.info.dims, c.info.dims + c.info.rank) !=
                primary.wholeShapes[i]) {
          why = "its state '" + std::string(c.info.name) + "' is not the step's dtype and shape";
          return false;
        }
        const auto *bytes = static_cast<const uint8_t *>(c.data);
        if (!primary.sharded[i]) {
          found[i].assign(bytes, bytes + c.info.byte_size);
          return true;
        }
        // This rank's slice of the flattened whole, zero-padded.
        const size_t part = primary.stateBytes[i], from = part * size_t(ctx.rank);
        found[i].assign(part, 0);
        if (from < c.info.byte_size)
          std::memcpy(found[i].data(), bytes + from, std::min(part, c.info.byte_size - from));
        return true;
      });
  if (!s.ok())
    return ctx.fail(t.resume + ": cannot resume from it: " + (why.empty() ? s.message() : why));
  if (count != found.size() ||
      !std::equal(found.begin(), found.end(), primary.stateBytes.begin(),
                  [](const std::vector<uint8_t> &f, size_t bytes) { return f.size() == bytes; }))
    return ctx.fail(t.resume + ": cannot resume from it: it has " + std::to_string(count) +
                    " states, not the step's " + std::to_string(found.size()) +
                    " (a checkpoint of another model or optimizer)");
  for (size_t i = 0; i < found.size(); ++i)
    if (mixprec::Status w = primary.step.session.writeState(primary.stateNames[i].c_str(),
                                                            found[i].data(), found[i].size());
        !w.ok())
      return ctx.fail(t.resume + ": " + w.message());
  return 0;
}

/// Prints the run's first line (first seed only), the seed's and where it
/// resumed.
void SeedRun::printStart() {
  if (seedIndex == 0)
    ctx.print(in.program + ": " + model + ": " + std::to_string(r.rows) + " samples, batch " +
              std::to_string(facts.batch) +
              (facts.accumulate > 1
                   ? " x " + std::to_string(facts.accumulate) + " micro-batches"
                   : std::string()) +
              ", " + std::to_string(r.total) + " steps (" + std::to_string(r.stepsPerEpoch) +
              " per epoch), precision " + facts.precisionName + ", backend " + r.backendName +
              ", loss scale " + facts.scaling +
              (r.ensemble ? ", " + std::to_string(t.seeds) + " seeds (" + std::to_string(t.seed) +
                                ".." + std::to_string(t.seed + t.seeds - 1) + ")"
                          : std::string()) +
              (in.origin.empty() ? "" : "; " + in.origin));
  if (seedIndex == 0 && primary.anySharded()) {
    // What sharding saves: the optimizer state this rank keeps.
    double mine = 0, whole = 0;
    for (size_t i = 0; i < primary.stateNames.size(); ++i)
      if (isOptimizerState(primary.stateNames[i])) {
        mine += double(primary.stateBytes[i]);
        whole += double(primary.wholeBytes(i));
      }
    ctx.print("optimizer state sharded over " + std::to_string(ctx.world) +
              " ranks: " + std::to_string(int64_t(mine)) + " bytes per rank (" + bytesText(mine) +
              ") of " + std::to_string(int64_t(whole)) + " (" + bytesText(whole) + ")");
  }
  if (r.ensemble)
    ctx.print("seed " + std::to_string(seed) + " (" + std::to_string(seedIndex + 1) + "/" +
              std::to_string(t.seeds) + ")");
  if (state.stepsDone)
    ctx.print("resumed from " + t.resume + " after step " + std::to_string(state.stepsDone));
  if (!resumeNote.empty())
    ctx.print(resumeNote);
}

/// Evaluates each run into `record` and prints the line; the CSV cells
/// (test_loss,test_accuracy per run). False after failing ctx.
bool SeedRun::evaluate(int64_t step, TrainStepRecord &record, std::string &cells,
                       std::string &compareCells) {
  TrainOutcome &out = ctx.out;
  std::string line = "eval step " + std::to_string(step) + ":";
  for (Run *run : {&primary, compare ? &*compare : nullptr}) {
    if (!run)
      continue;
    Run::Evaluation e;
    if (!run->evaluate(facts, in.test, ctx.collective, e, error))
      return ctx.fail(model + ": evaluation: " + error), false;
    line += (run == &primary ? std::string() : "  |  " + run->label + ":") + " test loss " +
            num(e.loss);
    std::string c = "," + exact(e.loss) + ",";
    std::optional<double> accuracy;
    if (e.counted) {
      line += format("  accuracy %.2f%% (%lld/%lld)", 100 * e.accuracy(),
                     static_cast<long long>(e.correct), static_cast<long long>(e.counted));
      c += exact(e.accuracy());
      accuracy = e.accuracy();
    }
    if (run == &primary) {
      cells = c;
      record.testLoss = out.testLoss = e.loss;
      record.testAccuracy = out.testAccuracy = accuracy;
      result.testLoss = e.loss;
      result.testAccuracy = accuracy.value_or(NAN);
    } else {
      compareCells = c;
      record.compareTestLoss = e.loss;
      record.compareTestAccuracy = accuracy;
      result.compareTestLoss = e.loss;
      result.compareTestAccuracy = accuracy.value_or(NAN);
    }
  }
  ctx.print(line);
  return true;
}

/// The gradient comparison, before the run's step on `batch`: FP32's
/// gradients at the run's states, from the probe session. Fills `fp32`.
bool SeedRun::probeGradients(std::vector<std::vector<float>> &fp32) {
  for (size_t i = 0; i < compare->step.module.stateCount(); ++i) {
    mixprec_tensor_info_t info;
    compare->step.module.stateInfo(i, info);
    std::vector<uint8_t> bytes(info.byte_size);
    // States of the run's module with the same name and size (masters,
    // optimizer state, the step count); the loss-scale state is the
    // run's own.
    if (!primary.step.session.readState(info.name, bytes.data(), bytes.size()).ok())
      continue;
    if (mixprec::Status s = probe->writeState(info.name, bytes.data(), bytes.size()); !s.ok())
      return error = s.message(), false;
  }
  if (!runBatch(*probe, in.train, batch, error))
    return false;
  fp32.resize(r.gradOutputs.size());
  for (size_t k = 0; k < r.gradOutputs.size(); ++k) {
    mixprec_tensor_info_t info;
    compare->step.module.outputInfo(r.probeGradOutputs[k], info);
    fp32[k].resize(info.element_count);
    if (mixprec::Status s = probe->copyOutput(r.probeGradOutputs[k], MIXPREC_DTYPE_F32,
                                              fp32[k].data(), fp32[k].size() * 4);
        !s.ok())
      return error = s.message(), false;
  }
  return true;
}

/// Compares the run's gradients of step `step` with `fp32Grads`, prints the
/// line and records the comparison; the CSV cells. 0, or the status after
/// failing ctx.
int SeedRun::compareGradients(int64_t step, const std::vector<std::vector<float>> &fp32Grads,
                              std::string &gradCells) {
  const auto &gradOutputs = r.gradOutputs;
  GradientComparison c;
  c.seed = seed;
  c.step = step + 1;
  // The CSV's max and min over every parameter; the line names the
  // worst as namesWorst allows.
  double maxRel = 0, worstRel = 0, worstCos = 1;
  std::string worst;
  std::vector<size_t> elements;
  for (size_t k = 0; k < gradOutputs.size(); ++k)
    elements.push_back(fp32Grads[k].size());
  for (size_t k = 0; k < gradOutputs.size(); ++k) {
    std::vector<float> lower(fp32Grads[k].size());
    if (mixprec::Status s =
            primary.step.session.copyOutput(gradOutputs[k].second, MIXPREC_DTYPE_F32,
                                            lower.data(), lower.size() * 4);
        !s.ok())
      return ctx.fail(model + ": step " + std::to_string(step + 1) + ": " + s.message());
    GradientError e = compareVectors(lower, fp32Grads[k]);
    e.name = gradOutputs[k].first;
    // The drift of the master weights between the two runs.
    std::vector<float> a(lower.size()), b(lower.size());
    if (primary.step.session.readState(e.name.c_str(), a.data(), a.size() * 4).ok() &&
        compare->step.session.readState(e.name.c_str(), b.data(), b.size() * 4).ok())
      e.drift = compareVectors(a, b).relL2;
    if (!(e.relL2 <= maxRel))
      maxRel = e.relL2;
    if (namesWorst(elements, k) && !(e.relL2 <= worstRel))
      worstRel = e.relL2, worst = e.name;
    if (!(e.cosine >= worstCos))
      worstCos = e.cosine;
    c.params.push_back(e);
  }
  gradCells = "," + exact(maxRel) + "," + exact(worstCos);
  double zeros = 0, fp32Zeros = 0;
  int64_t counted = 0;
  for (size_t k = 0; k < c.params.size(); ++k) {
    double n = double(elements[k]);
    zeros += c.params[k].zeroFraction * n, fp32Zeros += c.params[k].fp32ZeroFraction * n;
    counted += static_cast<int64_t>(n);
  }
  ctx.print("grads step " + std::to_string(step + 1) + " vs fp32: worst '" + worst +
            "' rel L2 " + num(worstRel) + ", min cosine " + num(worstCos) +
            ", zero gradients " + format("%.1f%%", 100 * zeros / std::max<int64_t>(counted, 1)) +
            " (fp32 " + format("%.1f%%", 100 * fp32Zeros / std::max<int64_t>(counted, 1)) +
            ")");
  r.comparisons.push_back(std::move(c));
  return 0;
}

/// Prints the log line of the steps since the last one and starts a new
/// window.
void SeedRun::printWindow(int64_t step, int64_t epoch, const TrainStepRecord &record) {
  double seconds = millisecondsSince(windowStart) / 1000;
  double meanLoss = window.applied ? window.loss / window.applied : NAN;
  std::string line = "step " + std::to_string(step + 1) + "/" + std::to_string(r.total) +
                     "  epoch " + std::to_string(epoch + 1) + "  loss " + num(meanLoss) +
                     "  scale " + num(record.lossScale) + "  skipped " +
                     std::to_string(skippedTotal) + "  grad_norm " +
                     num(window.applied ? window.norm / window.applied : NAN) + "  " +
                     std::to_string(static_cast<long long>(
                         std::llround(window.steps * r.globalRows / std::max(seconds, 1e-9)))) +
                     " samples/s";
  if (compare)
    line += "  |  " + compare->label + " loss " + num(window.compareLoss / window.steps) +
            " gap " + num(meanLoss - window.compareLoss / window.steps);
  ctx.print(line);
  window = StepWindow();
  windowStart = std::chrono::steady_clock::now();
}

/// Stops the run when the loss scale cannot recover: writes the CSV, fails
/// ctx with the diagnosis. The status.
int SeedRun::stopScaleStuck(int64_t step, const TrainStepRecord &record) {
  TrainOutcome &out = ctx.out;
  std::string diagnosis = in.diagnose ? in.diagnose(primary.step.session, batch) : "";
  if (!t.csv.empty() && !writeCsv(ctx, t.csv, r.csvHeader, r.csvRows))
    return kTrainError;
  ctx.fail(model + ": the last " + std::to_string(skippedInARow) +
               " steps all overflowed (step " + std::to_string(step + 1) +
               (r.ensemble ? ", seed " + std::to_string(seed) : std::string()) +
               ", loss scale " + num(record.lossScale) +
               (facts.minScale > 0 && record.lossScale <= facts.minScale ? ", its minimum" : "") +
               "): the loss scale cannot recover; stopped without writing a checkpoint" +
               (t.checkpoint.empty() ? "" : " (" + t.checkpoint + " keeps the last good one)"),
           kTrainScaleStuck);
  out.notes.clear();
  if (!diagnosis.empty())
    out.notes.push_back("rerun on the interpreter, " + diagnosis);
  else if (!in.diagnose)
    out.notes.push_back("mixprec train names the op that overflows (it reruns the step on "
                        "its interpreter)");
  out.notes.push_back("keep that op in FP32 (--keep-fp32), lower the learning rate, or clip "
                      "gradients (--clip-norm)");
  return kTrainScaleStuck;
}

/// Runs step `step` (0-based) of both runs, compares, logs, evaluates and
/// checkpoints as asked; `last` is set when the loop ends after it. 0, or
/// the status after failing ctx.
int SeedRun::runOneStep(int64_t step, bool &last) {
  TrainOutcome &out = ctx.out;
  std::vector<Column> &train = in.train;
  const int64_t epoch = step / r.stepsPerEpoch, position = step % r.stepsPerEpoch;
  if (epoch != orderEpoch) {
    order = epochOrder(r.rows, state.seed, epoch, t.shuffle);
    orderEpoch = epoch;
  }
  for (size_t i = 0; i < train.size(); ++i)
    batch[i] =
        gatherRows(train[i], order, position * r.globalRows + ctx.rank * r.stepRows, r.stepRows);
  const bool compareThis = r.compareGrads && (step + 1) % t.compareEvery == 0;
  std::vector<std::vector<float>> fp32Grads;
  if (compareThis && !probeGradients(fp32Grads))
    return ctx.fail(model + ": step " + std::to_string(step + 1) + " (the FP32 gradients): " +
                    error);
  auto stepStart = std::chrono::steady_clock::now();
  if (!primary.runStep(train, batch, error))
    return ctx.fail(model + ": step " + std::to_string(step + 1) + ": " + error);
  TrainStepRecord record;
  record.seed = seed;
  record.step = step + 1;
  record.epoch = epoch + 1;
  record.loss = primary.loss();
  record.lossScale = primary.lossScale();
  record.gradNorm = primary.gradNorm();
  record.skipped = primary.skipped();
  result.stepSeconds += millisecondsSince(stepStart) / 1000;
  ++stepsRun;
  state.stepsDone = step + 1;
  skippedTotal += record.skipped;
  skippedInARow = record.skipped ? skippedInARow + 1 : 0;
  out.steps += 1;
  out.skipped += record.skipped;
  out.lastLoss = record.loss;
  window.steps++;
  if (!record.skipped) {
    window.applied++;
    window.loss += record.loss;
    window.norm += record.gradNorm;
    if (std::isfinite(record.gradNorm))
      normSum += record.gradNorm, ++normCount;
    if (step >= tailFrom && std::isfinite(record.loss))
      tailLoss += record.loss, ++tailCount;
  }
  std::string row = std::to_string(step + 1) + "," + std::to_string(epoch + 1) + "," +
                    exact(record.loss) + "," + exact(record.lossScale) + "," +
                    (record.skipped ? "1" : "0") + "," + exact(record.gradNorm);
  if (r.ensemble)
    row = std::to_string(seed) + "," + row;
  std::string compareCells;
  if (compare) {
    auto compareStart = std::chrono::steady_clock::now();
    if (!compare->runStep(train, batch, error))
      return ctx.fail(model + ": step " + std::to_string(step + 1) + " (" + compare->label +
                      "): " + error);
    result.compareStepSeconds += millisecondsSince(compareStart) / 1000;
    float compareLoss = compare->loss();
    bool compareSkip = compare->skipped();
    record.compareLoss = out.compareLastLoss = compareLoss;
    record.compareSkipped = compareSkip;
    compareSkipped += compareSkip;
    window.compareLoss += compareLoss;
    if (!compareSkip && step >= tailFrom && std::isfinite(compareLoss))
      tailCompareLoss += compareLoss, ++tailCompareCount;
    if (!record.skipped && !compareSkip && std::isfinite(record.loss) &&
        std::isfinite(compareLoss)) {
      gapSum += double(record.loss) - compareLoss;
      ++gapCount;
    }
    compareCells = "," + exact(compareLoss) + "," + (compareSkip ? "1" : "0");
  }
  std::string gradCells = r.compareGrads ? ",," : "";
  if (compareThis)
    if (int rc = compareGradients(step, fp32Grads, gradCells))
      return rc;

  last = step + 1 == r.total;
  if ((step + 1) % t.logEvery == 0 || last)
    printWindow(step, epoch, record);

  std::string evalCells = ",,", compareEvalCells = compare ? ",," : "";
  if (!in.test.empty() && (last || (t.evalEvery && (step + 1) % t.evalEvery == 0)) &&
      !evaluate(step + 1, record, evalCells, compareEvalCells))
    return kTrainError;
  r.csvRows.push_back(row + evalCells + compareCells + compareEvalCells + gradCells);

  if (skippedInARow >= t.maxSkippedInARow)
    return stopScaleStuck(step, record);
  if (ctx.events.onStep && !ctx.events.onStep(record))
    last = stoppedByCallback = true;
  if (t.checkpointEvery && (step + 1) % t.checkpointEvery == 0 && !last) {
    if (!saveCheckpoint())
      return kTrainError;
    if (!t.csv.empty() && !writeCsv(ctx, t.csv, r.csvHeader, r.csvRows))
      return kTrainError;
  }
  return 0;
}

/// Runs the seed's steps from where it resumed. 0, or the status after
/// failing ctx.
int SeedRun::runSteps() {
  tailFrom = r.total - std::max<int64_t>(1, r.total / 10);
  result.seed = seed;
  windowStart = std::chrono::steady_clock::now();
  runStart = windowStart;
  batch.resize(in.train.size());
  if (ctx.active)
    trafficAtStart = ctx.active->traffic();
  for (int64_t step = state.stepsDone; step < r.total; ++step) {
    bool last = false;
    if (int rc = runOneStep(step, last))
      return rc;
    if (last)
      break;
  }
  return 0;
}

/// Writes --state-dir's files: one .npy per state of the run's step. 0, or
/// the status after failing ctx.
int SeedRun::saveStates() {
  // Whole (a sharded optimizer state gathered from every rank first).
  std::vector<std::vector<uint8_t>> whole;
  if (!primary.wholeStates(ctx.collective, whole, error))
    return ctx.fail(t.stateDir + ": " + error);
  if (!ctx.writes())
    return 0;
  if (std::string why = createDirectories(t.stateDir); !why.empty())
    return ctx.fail(why);
  for (size_t i = 0; i < primary.stateNames.size(); ++i) {
    std::string path = joinPath(t.stateDir, npyFileNameFor(primary.stateNames[i]));
    std::vector<float> values(whole[i].size() / sizeof(float));
    if (!whole[i].empty())
      std::memcpy(values.data(), whole[i].data(), whole[i].size());
    support::NpyArray array = support::npyFromFloat32(primary.wholeShapes[i], values.data());
    if (!ctx.checkNotAnInput(path, error) || !support::writeNpy(path, array, error))
      return ctx.fail(error);
  }
  return 0;
}

/// A job of several ranks: a hash of every rank's states (FNV-1a 64 over
/// each state's bytes, in order), gathered and compared with rank 0's, so
/// that ranks that drifted apart (one skipped a step another took) fail the
/// run instead of training different models. 0, or the status after
/// failing ctx.
int SeedRun::checkRanksAgree() {
  if (ctx.world <= 1)
    return 0;
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i < primary.stateNames.size(); ++i) {
    if (primary.sharded[i])
      continue; // each rank's own slice
    size_t at = bytes.size();
    bytes.resize(at + primary.stateBytes[i]);
    if (mixprec::Status s = primary.step.session.readState(
            primary.stateNames[i].c_str(), bytes.data() + at, primary.stateBytes[i]);
        !s.ok())
      return ctx.fail(model + ": " + s.message());
  }
  const uint64_t mine = runtime::fnv1a64(bytes.data(), bytes.size());
  std::vector<uint64_t> all(static_cast<size_t>(ctx.world));
  if (std::string why = ctx.collective->allGather(&mine, all.data(), sizeof mine); !why.empty())
    return ctx.fail(model + ": comparing the ranks' states: " + why);
  auto hex = [](uint64_t h) { return format("%016llx", static_cast<unsigned long long>(h)); };
  std::string differ;
  for (size_t k = 1; k < all.size(); ++k)
    if (all[k] != all[0])
      differ += ", rank " + std::to_string(k) + " " + hex(all[k]);
  if (!differ.empty())
    return ctx.fail(model + ": the ranks' states differ after step " +
                    std::to_string(state.stepsDone) + " (FNV-1a 64: rank 0 " + hex(all[0]) +
                    differ + "): the ranks did not take the same steps");
  ctx.print(
      std::string(primary.anySharded() ? "replicated states" : "states") + " identical on " +
      std::to_string(ctx.world) + " ranks (FNV-1a 64 " + hex(all[0]) + ")" +
      (primary.anySharded() ? "; the optimizer state is sharded, each rank's slice its own" : ""));
  return 0;
}

/// Prints the seed's summary line and adds its result to the outcome.
void SeedRun::printSummary() {
  TrainOutcome &out = ctx.out;
  double seconds = millisecondsSince(runStart) / 1000;
  std::string summary =
      "trained " + std::to_string(stepsRun) + " steps in " + format("%.2f", seconds) + " s (" +
      std::to_string(
          static_cast<long long>(std::llround(stepsRun * r.globalRows / std::max(seconds, 1e-9)))) +
      " samples/s): " + std::to_string(stepsRun - skippedTotal) + " applied (" +
      format("%.1f", stepsRun ? 100.0 * (stepsRun - skippedTotal) / stepsRun : 0.0) + "%), " +
      std::to_string(skippedTotal) + " skipped; last loss " + num(out.lastLoss);
  if (ctx.world > 1 && ctx.active) {
    // The communication share: the all-reduce (and, sharded, all-gather)
    // steps' time, waiting for the slowest rank included, of the steps' time.
    const Collective::Traffic now = ctx.active->traffic();
    const double seconds = now.seconds - trafficAtStart.seconds;
    summary +=
        std::string(primary.anySharded() ? "; all-reduce and all-gather (" : "; all-reduce (") +
        ctx.active->name() + ") " + std::to_string(now.calls - trafficAtStart.calls) + " calls, " +
        bytesText(now.bytes - trafficAtStart.bytes) + " per rank, " + format("%.2f", seconds) +
        " s (" + format("%.1f", result.stepSeconds > 0 ? 100 * seconds / result.stepSeconds : 0.0) +
        "% of the step time)";
  }
  if (compare)
    summary += "; " + compare->label + ": last loss " + num(out.compareLastLoss.value_or(NAN)) +
               ", " + std::to_string(compareSkipped) + " skipped, mean loss gap " +
               num(gapCount ? gapSum / gapCount : NAN);
  ctx.print(summary);
  result.steps = stepsRun;
  result.skipped = skippedTotal;
  result.compareSkipped = compareSkipped;
  result.trainLoss = tailCount ? tailLoss / tailCount : NAN;
  result.compareTrainLoss = tailCompareCount ? tailCompareLoss / tailCompareCount : NAN;
  result.gradNormMean = normCount ? normSum / normCount : NAN;
  out.seeds.push_back(result);
}

/// Trains seed `seedIndex` of the run from start to summary; `stopped` is
/// set when the step callback asked to stop. 0, or the status after
/// failing ctx.
int trainSeed(RunShared &shared, int64_t seedIndex, bool &stopped) {
  SeedRun s(shared, seedIndex);
  if (int rc = s.start())
    return rc;
  s.printStart();
  if (int rc = s.runSteps())
    return rc;
  if (int rc = s.checkRanksAgree())
    return rc;
  if (!s.t.checkpoint.empty() && !s.saveCheckpoint())
    return kTrainError;
  if (!s.t.stateDir.empty())
    if (int rc = s.saveStates())
      return rc;
  s.printSummary();
  stopped = s.stoppedByCallback;
  return 0;
}

/// The whole run (runLoop's body).
int run(Ctx &ctx, LoopInputs &in) {
  const LoopOptions &t = in.options;
  if (int rc = checkRunInputs(ctx, in))
    return rc;
  RunShared shared{ctx, in};
  shared.rows = in.train.front().rows();
  shared.stepRows = in.facts.batch * in.facts.accumulate;
  shared.globalRows = shared.stepRows * ctx.world;
  shared.stepsPerEpoch = shared.rows / shared.globalRows;
  int64_t &total = shared.total;
  total = t.steps;
  if (!total && __builtin_mul_overflow(t.epochs ? t.epochs : 1, shared.stepsPerEpoch, &total))
    return ctx.fail("train: --epochs " + std::to_string(t.epochs) + " x " +
                        std::to_string(shared.stepsPerEpoch) +
                        " steps per epoch is more steps than "
                        "a run can count (2^63)",
                    kTrainUsage);
  shared.ensemble = t.seeds > 1;
  shared.compareGrads = t.compareEvery > 0;
  shared.csvHeader = csvHeaderFor(shared.ensemble, in.compare.has_value(), shared.compareGrads);
  if (shared.compareGrads)
    if (int rc = findGradOutputs(shared))
      return rc;

  for (int64_t seedIndex = 0; seedIndex < t.seeds; ++seedIndex) {
    bool stopped = false;
    if (int rc = trainSeed(shared, seedIndex, stopped))
      return rc;
    if (stopped)
      break;
  }
  if (!t.csv.empty() && !writeCsv(ctx, t.csv, shared.csvHeader, shared.csvRows))
    return kTrainError;
  return finish(ctx, in, shared.comparisons, shared.csvHeader, shared.csvRows,
                shared.backendName);
}

/// Bytes as "1.23 MB".
std::string bytesText(double bytes) {
  if (bytes >= 1e9)
    return format("%.3g GB", bytes / 1e9);
  if (bytes >= 1e6)
    return format("%.3g MB", bytes / 1e6);
  if (bytes >= 1e3)
    return format("%.3g kB", bytes / 1e3);
  return format("%.0f B", bytes);
}

/// A metric of the seeds' results: its JSON key and label, the run's and
/// FP32's field, which way is better, and how the verdict scales it.
struct Metric {
  const char *key, *label;
  double SeedResult::*run, SeedResult::*fp32;
  bool higherIsBetter;
  double scale;
  const char *unit;
};
const Metric kMetrics[] = {
    {"test_accuracy", "test accuracy", &SeedResult::testAccuracy,
     &SeedResult::compareTestAccuracy, true, 100, " points"},
    {"test_loss", "test loss", &SeedResult::testLoss, &SeedResult::compareTestLoss, false, 1, ""},
    {"train_loss", "train loss (last tenth)", &SeedResult::trainLoss,
     &SeedResult::compareTrainLoss, false, 1, ""},
};

/// The field `field` of every seed's result.
std::vector<double> seedValues(const std::vector<SeedResult> &seeds, double SeedResult::*field) {
  std::vector<double> v;
  for (const SeedResult &s : seeds)
    v.push_back(s.*field);
  return v;
}

/// A metric's difference (run - fp32) as JSON.
std::string differenceJsonOf(const Difference &d) {
  return "{\"difference\": " + jsonNumber(d.difference) + ", \"ci95\": " +
         (d.valid ? "[" + jsonNumber(d.low) + ", " + jsonNumber(d.high) + "]"
                  : std::string("null")) +
         ", \"half_width\": " + jsonNumber(d.valid ? d.halfWidth : NAN) +
         ", \"df\": " + jsonNumber(d.df) + "}";
}

/// What finish reports: the texts it prints and the JSON parts of --metrics.
struct FinalMetrics {
  std::string lower, reference;
  bool compare = false;
  std::string ensembleJson, differencesJson = "null";
  std::string differenceJson = "null", differenceText = "not measured (no --compare fp32)";
  std::string gradientJson = "[", gradientSummaryJson = "null";
  int64_t stepRows = 0, steps = 0, skipped = 0, tokensPerSample = 0;
  double seconds = 0, samplesPerSecond = NAN, fp32SamplesPerSecond = NAN, ratio = NAN;
  std::string fp32Source = "none", throughputText;
  double applied = NAN;
  std::string appliedWarning;
  double peak = 0, achieved = NAN, mfu = NAN;
  bool flopsKnown = false;
  std::string peakSource, mfuText;
  double memoryRatio = NAN;
  std::string memoryText;
};

/// The ensemble's statistics per side (printed for more than one seed) and
/// each metric's difference to FP32, into `fm`'s JSON.
void summarizeEnsemble(Ctx &ctx, const std::vector<SeedResult> &seeds, FinalMetrics &fm) {
  std::string &ensembleJson = fm.ensembleJson;
  ensembleJson = "{";
  for (int side = 0; side < (fm.compare ? 2 : 1); ++side) {
    std::string name = side ? fm.reference : fm.lower, line = name + " over " +
                                                             std::to_string(seeds.size()) +
                                                             " seed" +
                                                             (seeds.size() == 1 ? "" : "s") + ":";
    ensembleJson += std::string(side ? ", " : "") + jsonString(name) + ": {";
    bool firstMetric = true;
    for (const Metric &m : kMetrics) {
      std::vector<double> v = seedValues(seeds, side ? m.fp32 : m.run);
      Summary s = summarize(v);
      if (!s.count)
        continue;
      line += format(" %s %.4g", m.label, s.mean * m.scale) + (m.scale == 100 ? "%" : "") +
              (s.count > 1 ? format(" (sd %.2g)", s.sd * m.scale) : "") + ",";
      ensembleJson += std::string(firstMetric ? "" : ", ") + jsonString(m.key) +
                      ": {\"mean\": " + jsonNumber(s.mean) + ", \"sd\": " + jsonNumber(s.sd) +
                      ", \"values\": [";
      for (size_t i = 0; i < v.size(); ++i)
        ensembleJson += (i ? ", " : "") + jsonNumber(v[i]);
      ensembleJson += "]}";
      firstMetric = false;
    }
    ensembleJson += "}";
    if (seeds.size() > 1 && line.back() == ',')
      ctx.print(line.substr(0, line.size() - 1));
  }
  // Each metric's difference (run - fp32): Welch's and the paired interval.
  if (fm.compare) {
    fm.differencesJson = "{";
    bool firstMetric = true;
    for (const Metric &m : kMetrics) {
      Summary a = summarize(seedValues(seeds, m.run)), b = summarize(seedValues(seeds, m.fp32));
      if (!a.count || !b.count)
        continue;
      fm.differencesJson +=
          std::string(firstMetric ? "" : ", ") + jsonString(m.key) +
          ": {\"welch\": " + differenceJsonOf(welch(a, b)) + ", \"paired\": " +
          differenceJsonOf(paired(seedValues(seeds, m.run), seedValues(seeds, m.fp32))) + "}";
      firstMetric = false;
    }
    fm.differencesJson += "}";
  }
  ensembleJson += "}";
}

/// (c) the final metric against FP32: the verdict on `decisive`, printed,
/// into the outcome and `fm`.
void decideVerdict(Ctx &ctx, const std::vector<SeedResult> &seeds, const Metric *decisive,
                   FinalMetrics &fm) {
  TrainOutcome &out = ctx.out;
  Summary a = summarize(seedValues(seeds, decisive->run)),
          b = summarize(seedValues(seeds, decisive->fp32));
  Difference d = welch(a, b);
  out.verdict = verdict(d, decisive->higherIsBetter, decisive->scale, decisive->unit);
  // The runs beside each other share data order and initial weights: the
  // paired interval too (often narrower; the verdict stays Welch's).
  Difference pd = paired(seedValues(seeds, decisive->run), seedValues(seeds, decisive->fp32));
  fm.differenceText = std::string(decisive->label) + " " + fm.lower + " - " + fm.reference +
                      " = " + format("%.3g", d.difference * decisive->scale) + decisive->unit +
                      (d.valid ? format(" (95%% interval [%.3g, %.3g], Welch, df %.3g, N %d)",
                                        d.low * decisive->scale, d.high * decisive->scale, d.df,
                                        a.count)
                               : std::string(" (one run each: no interval)")) +
                      (pd.valid ? format("; paired by seed [%.3g, %.3g]",
                                         pd.low * decisive->scale, pd.high * decisive->scale)
                                : std::string()) +
                      ": " + out.verdict;
  ctx.print("ensemble verdict (" + std::string(decisive->label) + ", " +
            std::to_string(seeds.size()) + " seed" + (seeds.size() == 1 ? "" : "s") +
            "): " + out.verdict);
  fm.differenceJson = "{\"metric\": " + jsonString(decisive->key) +
                      ", \"precision_mean\": " + jsonNumber(a.mean) +
                      ", \"precision_sd\": " + jsonNumber(a.sd) + ", \"fp32_mean\": " +
                      jsonNumber(b.mean) + ", \"fp32_sd\": " + jsonNumber(b.sd) +
                      ", \"difference\": " + jsonNumber(d.difference) + ", \"ci95\": " +
                      (d.valid ? "[" + jsonNumber(d.low) + ", " + jsonNumber(d.high) + "]"
                               : std::string("null")) +
                      ", \"half_width\": " + jsonNumber(d.valid ? d.halfWidth : NAN) +
                      ", \"df\": " + jsonNumber(d.df) + ", \"n\": " + std::to_string(a.count) +
                      ", \"paired\": " + differenceJsonOf(pd) +
                      ", \"higher_is_better\": " + (decisive->higherIsBetter ? "true" : "false") +
                      ", \"verdict\": " + jsonString(out.verdict) + "}";
}

/// The gradient comparison, per parameter over every comparison: printed,
/// and into `fm`'s JSON.
void summarizeGradients(Ctx &ctx, const std::vector<GradientComparison> &comparisons,
                        FinalMetrics &fm) {
  std::string &gradientJson = fm.gradientJson;
  struct Layer {
    std::string name;
    double relSum = 0, relMax = 0, cosMin = 1, zeroSum = 0, fp32ZeroSum = 0, driftLast = NAN;
    int count = 0;
    size_t elements = 0;
  };
  std::vector<Layer> layers;
  for (const GradientComparison &c : comparisons) {
    gradientJson += std::string(gradientJson.size() > 1 ? ", " : "") +
                    "{\"seed\": " + std::to_string(c.seed) +
                    ", \"step\": " + std::to_string(c.step) + ", \"params\": [";
    for (size_t k = 0; k < c.params.size(); ++k) {
      const GradientError &e = c.params[k];
      gradientJson += std::string(k ? ", " : "") + "{\"name\": " + jsonString(e.name) +
                      ", \"rel_l2\": " + jsonNumber(e.relL2) + ", \"cosine\": " +
                      jsonNumber(e.cosine) + ", \"zero_fraction\": " +
                      jsonNumber(e.zeroFraction) + ", \"fp32_zero_fraction\": " +
                      jsonNumber(e.fp32ZeroFraction) + ", \"drift\": " + jsonNumber(e.drift) +
                      "}";
      if (layers.size() <= k)
        layers.push_back({e.name});
      layers[k].elements = e.elements;
      Layer &l = layers[k];
      double rel = std::isfinite(e.relL2) ? e.relL2 : INFINITY;
      l.relSum += rel, l.relMax = std::max(l.relMax, rel);
      l.cosMin = std::isfinite(e.cosine) ? std::min(l.cosMin, e.cosine) : -1;
      l.zeroSum += e.zeroFraction, l.fp32ZeroSum += e.fp32ZeroFraction;
      l.driftLast = e.drift;
      ++l.count;
    }
    gradientJson += "]}";
  }
  // The worst layer by mean relative error, as namesWorst allows.
  std::vector<size_t> elements;
  for (const Layer &l : layers)
    elements.push_back(l.elements);
  size_t worst = 0;
  while (worst + 1 < layers.size() && !namesWorst(elements, worst))
    ++worst;
  for (size_t k = 0; k < layers.size(); ++k)
    if (namesWorst(elements, k) && !(layers[k].relSum <= layers[worst].relSum))
      worst = k;
  ctx.print("gradients vs " + fm.reference + " (" + std::to_string(comparisons.size()) +
            " comparisons, same batch and master weights):");
  std::string &summaryJson = fm.gradientSummaryJson;
  summaryJson = "{\"comparisons\": " + std::to_string(comparisons.size()) +
                ", \"worst\": " + jsonString(layers[worst].name) + ", \"layers\": [";
  for (size_t k = 0; k < layers.size(); ++k) {
    const Layer &l = layers[k];
    double meanRel = l.relSum / l.count, zeros = l.zeroSum / l.count,
           fp32Zeros = l.fp32ZeroSum / l.count;
    ctx.print(format("  %-24s rel L2 mean %.3g max %.3g, cosine min %.6g, zero %.1f%% (fp32 "
                     "%.1f%%), weight drift %.3g",
                     l.name.c_str(), meanRel, l.relMax, l.cosMin, 100 * zeros, 100 * fp32Zeros,
                     l.driftLast) +
              (k == worst ? "  <- worst" : ""));
    summaryJson += std::string(k ? ", " : "") + "{\"name\": " + jsonString(l.name) +
                   ", \"rel_l2_mean\": " + jsonNumber(meanRel) +
                   ", \"rel_l2_max\": " + jsonNumber(l.relMax) +
                   ", \"cosine_min\": " + jsonNumber(l.cosMin) +
                   ", \"zero_fraction\": " + jsonNumber(zeros) +
                   ", \"fp32_zero_fraction\": " + jsonNumber(fp32Zeros) +
                   ", \"drift\": " + jsonNumber(l.driftLast) + "}";
  }
  summaryJson += "]}";
}

/// (a) throughput and (d) applied steps over every seed, into `fm`.
void measureThroughput(const LoopInputs &in, const std::vector<SeedResult> &seeds,
                       FinalMetrics &fm) {
  const LoopOptions &t = in.options;
  const StepFacts &facts = in.facts;
  fm.stepRows = facts.batch * facts.accumulate * (in.collective ? in.collective->worldSize() : 1);
  int64_t &steps = fm.steps, &skipped = fm.skipped;
  double &seconds = fm.seconds, compareSeconds = 0;
  for (const SeedResult &s : seeds)
    steps += s.steps, skipped += s.skipped, seconds += s.stepSeconds,
        compareSeconds += s.compareStepSeconds;
  fm.samplesPerSecond = seconds > 0 ? steps * fm.stepRows / seconds : NAN;
  if (fm.compare && compareSeconds > 0)
    fm.fp32SamplesPerSecond = steps * fm.stepRows / compareSeconds, fm.fp32Source = "compare";
  else if (t.fp32SamplesPerSecond > 0)
    fm.fp32SamplesPerSecond = t.fp32SamplesPerSecond, fm.fp32Source = "given";
  // Tokens: cross-entropy over a sequence (a label per position).
  if (facts.loss == LossKind::CrossEntropy && !in.train.empty() &&
      in.train.back().rowElements() > 1)
    fm.tokensPerSample = in.train.back().rowElements();
  fm.ratio = fm.samplesPerSecond / fm.fp32SamplesPerSecond;
  fm.throughputText =
      format("%.4g samples/s", fm.samplesPerSecond) +
      (fm.tokensPerSample
           ? format(" (%.4g tokens/s)", fm.samplesPerSecond * fm.tokensPerSample)
           : "") +
      (std::isfinite(fm.ratio)
           ? format(", %.3gx %s's %.4g samples/s (%s)", fm.ratio, fm.reference.c_str(),
                    fm.fp32SamplesPerSecond,
                    fm.fp32Source == "compare" ? "the compare run's steps"
                                               : "--fp32-samples-per-s")
           : std::string(", no FP32 figure (--compare fp32 or "
                         "--fp32-samples-per-s)"));
  fm.applied = steps ? double(steps - skipped) / steps : NAN;
  if (fm.applied < 0.95)
    fm.appliedWarning = format(
        "only %.1f%% of steps applied (healthy FP16 training stays above 95%%)", 100 * fm.applied);
  if (fm.applied < 0.90)
    fm.appliedWarning += "; try a lower initial loss scale (--init-scale), BF16 (--precision "
                         "bf16), or FP32 for the op that overflows (--keep-fp32)";
}

/// (e) MFU: the step's FLOPs against the peak of `backendName`'s device,
/// into `fm`.
void measureMfu(const LoopInputs &in, const std::string &backendName, FinalMetrics &fm) {
  if (backendName == "cpu") {
    fm.peak = cpuPeakFlops();
    fm.peakSource = "CPU: a 256^3 SGEMM of the CPU backend's GEMM (OpenBLAS) measured now; the "
                    "CPU backend runs every GEMM in FP32";
  } else {
    int sm = 0;
    mixprec_status_t status = mixprec_cuda_device_sm_version(&sm);
    if (status == nullptr)
      fm.peak = gpuPeakFlops(sm, in.facts.precisionName, fm.peakSource);
    else
      fm.peakSource = "no device peak known";
    mixprec_status_free(status);
  }
  fm.flopsKnown = in.costs.known && in.costs.flopsPerStep > 0;
  fm.achieved =
      fm.flopsKnown && fm.seconds > 0 ? in.costs.flopsPerStep * fm.steps / fm.seconds : NAN;
  fm.mfu = fm.peak > 0 ? fm.achieved / fm.peak : NAN;
  fm.mfuText =
      fm.flopsKnown
          ? format("%.3g%% (%.4g GFLOP per step, %.4g GFLOP/s of a %.4g GFLOP/s peak: ",
                   100 * fm.mfu, in.costs.flopsPerStep / 1e9, fm.achieved / 1e9, fm.peak / 1e9) +
                fm.peakSource + ")"
          : "not measured (the step's FLOPs are known where mixprec train compiles it)";
}

/// (b) memory: the step's plan against the FP32 plan's, into `fm`.
void measureMemory(const LoopInputs &in, FinalMetrics &fm) {
  const StepMemory &m = in.costs.memory, &f = in.costs.fp32Memory;
  fm.memoryRatio = in.costs.known && f.total() > 0 ? double(m.total()) / f.total() : NAN;
  int64_t peakActivations = std::max<int64_t>(0, m.arena - m.weights - m.gradients);
  fm.memoryText =
      in.costs.known
          ? bytesText(m.total()) + " (weights " + bytesText(m.weights) + ", master weights " +
                bytesText(m.masterWeights) + ", optimizer state " + bytesText(m.optimizerState) +
                ", gradients " + bytesText(m.gradients) + ", peak activations " +
                bytesText(peakActivations) + ")" +
                (f.total() > 0 ? format(", %.3gx the FP32 plan's ", fm.memoryRatio) +
                                     bytesText(f.total())
                               : std::string())
          : "not measured (the memory plan is known where mixprec train compiles the step)";
}

/// A memory plan as --metrics JSON; with the FP32 plan's total and the
/// ratio to it when `withRatio`.
std::string memoryJsonOf(const StepMemory &x, const StepMemory &fp32, double memoryRatio,
                         bool withRatio) {
  return "{\"weights\": " + std::to_string(x.weights) + ", \"master_weights\": " +
         std::to_string(x.masterWeights) + ", \"optimizer_state\": " +
         std::to_string(x.optimizerState) + ", \"other_state\": " +
         std::to_string(x.otherState) + ", \"gradients\": " + std::to_string(x.gradients) +
         ", \"peak_activations\": " +
         std::to_string(std::max<int64_t>(0, x.arena - x.weights - x.gradients)) +
         ", \"arena\": " + std::to_string(x.arena) + ", \"total\": " +
         std::to_string(x.total()) +
         (withRatio ? ", \"fp32_total\": " + std::to_string(fp32.total()) +
                          ", \"ratio_to_fp32\": " + jsonNumber(memoryRatio)
                    : std::string()) +
         "}";
}

/// The seeds (`seedsJson`) and each seed's results (`perSeedJson`) as JSON.
void seedsJsonOf(const std::vector<SeedResult> &seeds, bool compare, std::string &seedsJson,
                 std::string &perSeedJson) {
  seedsJson = "[", perSeedJson = "[";
  for (size_t i = 0; i < seeds.size(); ++i) {
    const SeedResult &s = seeds[i];
    seedsJson += (i ? ", " : "") + std::to_string(s.seed);
    perSeedJson += std::string(i ? ", " : "") + "{\"seed\": " + std::to_string(s.seed) +
                   ", \"steps\": " + std::to_string(s.steps) + ", \"skipped\": " +
                   std::to_string(s.skipped) + ", \"train_loss\": " + jsonNumber(s.trainLoss) +
                   ", \"test_loss\": " + jsonNumber(s.testLoss) + ", \"test_accuracy\": " +
                   jsonNumber(s.testAccuracy) + ", \"grad_norm_mean\": " +
                   jsonNumber(s.gradNormMean) + ", \"step_seconds\": " +
                   jsonNumber(s.stepSeconds) +
                   (compare ? ", \"fp32_train_loss\": " + jsonNumber(s.compareTrainLoss) +
                                  ", \"fp32_test_loss\": " + jsonNumber(s.compareTestLoss) +
                                  ", \"fp32_test_accuracy\": " +
                                  jsonNumber(s.compareTestAccuracy) + ", \"fp32_skipped\": " +
                                  std::to_string(s.compareSkipped) +
                                  ", \"fp32_step_seconds\": " + jsonNumber(s.compareStepSeconds)
                            : std::string()) +
                   "}";
  }
  seedsJson += "]";
  perSeedJson += "]";
}

/// The --metrics file's text.
std::string metricsJsonOf(const LoopInputs &in, const std::vector<SeedResult> &seeds,
                          const std::string &backendName, const FinalMetrics &fm) {
  const StepMemory &m = in.costs.memory, &f = in.costs.fp32Memory;
  std::string seedsJson, perSeedJson;
  seedsJsonOf(seeds, fm.compare, seedsJson, perSeedJson);
  return "{\n  \"mixprec_run_metrics\": 1,\n  \"model\": " + jsonString(in.facts.model) +
         ",\n  \"precision\": " + jsonString(fm.lower) + ",\n  \"compare\": " +
         (fm.compare ? jsonString(fm.reference) : std::string("null")) +
         ",\n  \"backend\": " + jsonString(backendName) + ",\n  \"seeds\": " + seedsJson +
         ",\n  \"batch\": " + std::to_string(fm.stepRows) +
         ",\n  \"steps\": " + std::to_string(fm.steps) + ",\n  \"tokens_per_sample\": " +
         (fm.tokensPerSample ? std::to_string(fm.tokensPerSample) : std::string("null")) +
         ",\n  \"throughput\": {\"samples_per_s\": " + jsonNumber(fm.samplesPerSecond) +
         ", \"tokens_per_s\": " +
         jsonNumber(fm.tokensPerSample ? fm.samplesPerSecond * fm.tokensPerSample : NAN) +
         ", \"fp32_samples_per_s\": " + jsonNumber(fm.fp32SamplesPerSecond) +
         ", \"ratio_to_fp32\": " + jsonNumber(fm.ratio) + ", \"fp32_source\": " +
         jsonString(fm.fp32Source) + "},\n  \"memory\": " +
         (in.costs.known ? memoryJsonOf(m, f, fm.memoryRatio, true) : std::string("null")) +
         ",\n  \"fp32_memory\": " +
         (in.costs.known && f.total() > 0 ? memoryJsonOf(f, f, fm.memoryRatio, false)
                                          : std::string("null")) +
         ",\n  \"metric_difference\": " + fm.differenceJson +
         ",\n  \"applied_steps\": {\"applied\": " + std::to_string(fm.steps - fm.skipped) +
         ", \"total\": " + std::to_string(fm.steps) + ", \"rate\": " + jsonNumber(fm.applied) +
         ", \"warning\": " + jsonString(fm.appliedWarning) +
         "},\n  \"mfu\": {\"flops_per_step\": " +
         jsonNumber(fm.flopsKnown ? in.costs.flopsPerStep : NAN) +
         ", \"achieved_flops_per_s\": " + jsonNumber(fm.achieved) +
         ", \"peak_flops_per_s\": " + jsonNumber(fm.peak > 0 ? fm.peak : NAN) +
         ", \"peak_source\": " + jsonString(fm.peakSource) + ", \"mfu\": " + jsonNumber(fm.mfu) +
         "},\n  \"ensemble\": " + fm.ensembleJson + ",\n  \"differences\": " +
         fm.differencesJson + ",\n  \"runs\": " + perSeedJson +
         ",\n  \"gradient_comparison\": " + fm.gradientJson + ",\n  \"gradient_summary\": " +
         fm.gradientSummaryJson + ",\n  \"graph\": " +
         (in.costs.graphJson.empty() ? std::string("null") : in.costs.graphJson) + "\n}\n";
}

/// Writes --metrics and --report. 0, or the status after failing ctx.
int writeMetricsAndReport(Ctx &ctx, LoopInputs &in, const std::string &json,
                          const std::string &csvHeader, const std::vector<std::string> &csvRows) {
  const LoopOptions &t = in.options;
  std::string error;
  if (!ctx.writes())
    return 0;
  if (!t.metrics.empty()) {
    if (!ctx.checkNotAnInput(t.metrics, error) ||
        !common::writeFileAtomically(t.metrics, json.data(), json.size(), error))
      return ctx.fail(error);
    ctx.print("wrote " + t.metrics);
  }
  if (!t.report.empty()) {
    std::string csv = csvHeader + "\n";
    for (const std::string &row : csvRows)
      csv += row + "\n";
    std::string html;
    if (!in.renderReport(t.csv.empty() ? "run.csv" : t.csv, csv, json, html, error))
      return ctx.fail("--report: " + error);
    if (!ctx.checkNotAnInput(t.report, error) ||
        !common::writeFileAtomically(t.report, html.data(), html.size(), error))
      return ctx.fail(error);
    ctx.print("wrote " + t.report);
  }
  return 0;
}

/// After the runs: the ensemble's statistics and verdict, the gradient
/// comparison's summary, the five metrics (printed, --metrics JSON) and the
/// --report page.
int finish(Ctx &ctx, LoopInputs &in, const std::vector<GradientComparison> &comparisons,
           const std::string &csvHeader, const std::vector<std::string> &csvRows,
           const std::string &backendName) {
  const StepFacts &facts = in.facts;
  TrainOutcome &out = ctx.out;
  const std::vector<SeedResult> &seeds = out.seeds;
  FinalMetrics fm;
  fm.compare = in.compare.has_value();
  fm.lower = facts.precisionName.empty() ? "run" : facts.precisionName;
  fm.reference = fm.compare ? in.compare->label : "fp32";
  // The metric the verdict is on: the first one the runs have.
  const Metric *decisive = nullptr;
  for (const Metric &m : kMetrics)
    if (!decisive && summarize(seedValues(seeds, m.run)).count)
      decisive = &m;

  summarizeEnsemble(ctx, seeds, fm);
  if (fm.compare && decisive)
    decideVerdict(ctx, seeds, decisive, fm);
  if (!comparisons.empty())
    summarizeGradients(ctx, comparisons, fm);
  fm.gradientJson += "]";
  measureThroughput(in, seeds, fm);
  measureMfu(in, backendName, fm);
  measureMemory(in, fm);

  ctx.print("metrics: (a) throughput " + fm.throughputText);
  ctx.print("         (b) memory " + fm.memoryText);
  ctx.print("         (c) vs " + fm.reference + ": " + fm.differenceText);
  ctx.print("         (d) applied steps " + std::to_string(fm.steps - fm.skipped) + "/" +
            std::to_string(fm.steps) + format(" (%.1f%%)", 100 * fm.applied) +
            (fm.appliedWarning.empty() ? "" : ": warning: " + fm.appliedWarning));
  ctx.print("         (e) MFU " + fm.mfuText);

  std::string json = metricsJsonOf(in, seeds, backendName, fm);
  out.metricsJson = json;
  return writeMetricsAndReport(ctx, in, json, csvHeader, csvRows);
}

} // namespace

const char *lossName(LossKind loss) {
  switch (loss) {
  case LossKind::CrossEntropy:
    return "ce";
  case LossKind::Mse:
    return "mse";
  case LossKind::Model:
    return "model";
  }
  return "?";
}

std::string checkStepRows(int64_t batch, int64_t accumulate, int64_t rows,
                          const std::string &path) {
  int64_t stepRows = 0;
  if (batch < 1 || accumulate < 1)
    return "train: the step takes no samples (--batch " + std::to_string(batch) + ")";
  const bool overflows = __builtin_mul_overflow(batch, accumulate, &stepRows);
  if (overflows || stepRows > rows)
    return "train: a step takes " +
           (overflows ? std::string("more than 2^63") : std::to_string(stepRows)) +
           " samples (--batch " + std::to_string(batch) +
           (accumulate > 1 ? " x --accumulate " + std::to_string(accumulate) : std::string()) +
           "), more than the " + std::to_string(rows) + " samples of " + path;
  return "";
}

bool isOptimizerState(const std::string &name) {
  auto endsWith = [&](const char *suffix) {
    size_t n = std::strlen(suffix);
    return name.size() >= n && name.compare(name.size() - n, n, suffix) == 0;
  };
  return endsWith(".momentum_buffer") || endsWith(".exp_avg") || endsWith(".exp_avg_sq");
}

bool isParameterState(const std::string &name) {
  return !(name == "step" || name == "loss_scale" || name == "growth_tracker" ||
           name == "hysteresis" || name.rfind("fp8.", 0) == 0 || isOptimizerState(name));
}

bool parseInt64(const std::string &text, int64_t &out) { return parseInteger(text, out); }
bool parseUint64(const std::string &text, uint64_t &out) { return parseInteger(text, out); }

const char *labelsNameFor(LossKind loss) { return loss == LossKind::Mse ? "targets" : "labels"; }

int64_t evalBatchFor(int64_t rows) { return std::min<int64_t>(rows, 1024); }

int64_t Column::rowElements() const {
  int64_t n = 1;
  for (int64_t d : rowShape)
    n *= d;
  return n;
}

std::vector<int64_t> Column::batchShape(int64_t batch) const {
  std::vector<int64_t> shape{batch};
  shape.insert(shape.end(), rowShape.begin(), rowShape.end());
  return shape;
}

bool readColumns(const std::vector<TrainArray> &data, const std::optional<TrainArray> &labels,
                 const std::string &labelsName, const std::string &what,
                 std::vector<Column> &out, InputFiles &inputs, std::string &error) {
  std::vector<bool> inMemory;
  for (const TrainArray &a : data) {
    out.push_back({a.name, a.path, a.array ? *a.array : support::NpyArray(), {}, {},
                   MIXPREC_DTYPE_F32});
    inMemory.push_back(a.array.has_value());
  }
  if (labels) {
    out.push_back({labelsName, labels->path, labels->array ? *labels->array : support::NpyArray(),
                   {}, {}, MIXPREC_DTYPE_I64});
    inMemory.push_back(labels->array.has_value());
  }
  for (size_t i = 0; i < data.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (data[j].name == data[i].name)
        return error = what + " gives graph input '" + data[i].name + "' twice (" +
                       data[j].path + " and " + data[i].path + "): one array per input",
               false;
  for (size_t i = 0; i < out.size(); ++i) {
    Column &c = out[i];
    if (inMemory[i])
      continue;
    inputs.emplace_back(c.path, what + " " + c.path);
    if (!support::readNpy(c.path, c.array, error))
      return false;
  }
  for (Column &c : out) {
    if (c.array.shape.empty() || c.array.shape.front() < 1)
      return error = c.path + ": " + what + " needs a sample dim (dim 0) with at least one "
                     "sample, got shape " + formatShape(c.array.shape),
             false;
    c.rowShape.assign(c.array.shape.begin() + 1, c.array.shape.end());
  }
  for (const Column &c : out)
    if (c.rows() != out.front().rows())
      return error = what + ": " + out.front().path + " has " +
                     std::to_string(out.front().rows()) + " samples but " + c.path + " has " +
                     std::to_string(c.rows()),
             false;
  return true;
}

std::string checkLoopOptions(const LoopOptions &t, bool testData) {
  if (t.evalEvery && !testData)
    return "train: --eval-every needs --test-data";
  if (t.steps && t.epochs)
    return "train: give --steps or --epochs, not both";
  if (t.steps < 0 || t.epochs < 0 || t.logEvery < 1 || t.evalEvery < 0 ||
      t.checkpointEvery < 0 || t.maxSkippedInARow < 1)
    return "train: --batch, --log-every and --max-skipped-in-a-row must be >= 1; --steps, "
           "--epochs, --eval-every and --checkpoint-every >= 0";
  if (t.checkpointEvery && t.checkpoint.empty())
    return "train: --checkpoint-every needs --checkpoint FILE";
  if (t.seeds < 1 || t.seeds > kMaxSeeds)
    return "train: --seeds takes 1 to " + std::to_string(kMaxSeeds) + " runs, got " +
           std::to_string(t.seeds);
  if (t.seeds > 1 && (!t.checkpoint.empty() || !t.resume.empty() || !t.stateDir.empty()))
    return "train: --seeds does not combine with --checkpoint, --resume or --state-dir (one "
           "run each: train each seed with --seed S)";
  if (t.reinit && (!t.checkpoint.empty() || !t.resume.empty()))
    return "train: --reinit does not combine with --checkpoint or --resume";
  if (t.compareEvery < 0)
    return "train: --compare-every must be >= 0";
  if (!(t.fp32SamplesPerSecond >= 0) || std::isinf(t.fp32SamplesPerSecond))
    return "train: --fp32-samples-per-s must be a finite number >= 0";
  return "";
}

TrainOutcome runLoop(LoopInputs &inputs, const TrainEvents &events) {
  TrainOutcome outcome;
  Ctx ctx{events, outcome, inputs.inputs};
  if (inputs.collective) {
    ctx.collective = inputs.collective;
    ctx.collectiveTimeout = inputs.collectiveTimeout;
    ctx.rank = inputs.collective->rank();
    ctx.world = inputs.collective->worldSize();
  }
  int status = run(ctx, inputs);
  if (status != 0 && outcome.status == 0)
    ctx.fail("train failed without a message", status);
  outcome.status = status;
  return outcome;
}

std::unique_ptr<Collective> joinLaunchedJob(double timeoutSeconds, std::string &error) {
  error.clear();
  const LaunchInfo launch = launchInfo();
  if (launch.worldSize <= 1)
    return nullptr;
  std::unique_ptr<Collective> collective = openMpiCollective(timeoutSeconds, error);
  if (!collective)
    error = "rank " + std::to_string(launch.rank) + " of " + std::to_string(launch.worldSize) +
            " (" + launch.launcher + "): " + error;
  return collective;
}

JobStart startJob(int64_t ranks, const std::vector<std::string> &args, double timeoutSeconds) {
  JobStart job;
  const LaunchInfo launch = launchInfo();
  if (ranks > 0 && launch.worldSize == 1) {
    std::string error;
    const int rc = runAsRanks(ranks, args, error);
    if (rc < 0)
      job.error = "--ranks " + std::to_string(ranks) + ": " + error;
    else
      job.spawnedExit = rc;
    return job;
  }
  if (ranks > 0 && ranks != launch.worldSize) {
    job.usage = true;
    job.error = "--ranks " + std::to_string(ranks) + ", but this is a rank of a job of " +
                std::to_string(launch.worldSize) + " (" + launch.launcher +
                "): give one or the other";
    return job;
  }
  job.collective = joinLaunchedJob(timeoutSeconds, job.error);
  return job;
}

int runAsRanks(int64_t ranks, const std::vector<std::string> &args, std::string &error) {
  std::vector<std::string> command = {"mpirun", "--oversubscribe", "-np", std::to_string(ranks)};
  if (geteuid() == 0)
    command.push_back("--allow-run-as-root");
  // This very program (argv[0] may be a bare name found on PATH).
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  command.push_back(n > 0 ? std::string(self, static_cast<size_t>(n))
                          : (args.empty() ? std::string() : args[0]));
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--ranks" || args[i] == "-ranks") {
      ++i; // and its value
      continue;
    }
    if (args[i].rfind("--ranks=", 0) == 0 || args[i].rfind("-ranks=", 0) == 0)
      continue;
    command.push_back(args[i]);
  }
  std::vector<char *> argv;
  for (std::string &a : command)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0)
    return error = std::string("cannot start mpirun: fork: ") + std::strerror(errno), -1;
  if (pid == 0) {
    execvp("mpirun", argv.data());
    std::fprintf(stderr,
                 "error: --ranks %lld: cannot run mpirun (%s): install OpenMPI "
                 "(openmpi-bin) or start the job with your MPI's launcher\n",
                 static_cast<long long>(ranks), std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return error = std::string("waiting for mpirun: ") + std::strerror(errno), -1;
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

void endJobAfterFailure(Collective *collective, const TrainOutcome &outcome) {
  if (outcome.status != 0 && collective && collective->worldSize() > 1)
    collective->abort(outcome.status);
}

std::string npyFileNameFor(const std::string &name) {
  std::string s;
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    bool plain = isalnum(c) || c == '_' || c == '-' || (c == '.' && i > 0);
    if (plain)
      s += static_cast<char>(c);
    else
      s += format("%%%02X", unsigned(c));
  }
  // An empty name still needs a file of its own ("%" alone decodes to no
  // byte, so no other name maps here).
  if (s.empty())
    s = "%";
  return s + ".npy";
}

std::string serializeFacts(const StepFacts &f) {
  std::string text =
      "mixprec-train-modules " + std::to_string(kFactsVersion) + "\nloss " + lossName(f.loss) +
      "\nclasses " + std::to_string(f.classes) + "\naccumulate " + std::to_string(f.accumulate) +
      "\nbatch " + std::to_string(f.batch) + "\neval_batch " + std::to_string(f.evalBatch) +
      "\neval_output " + f.evalOutput + "\nmodel " + f.model + "\nmodel_fingerprint " +
      f.modelFingerprint + "\nprecision_options " + f.precisionOptions + "\nprecision " +
      f.precisionName + "\nscaling " + f.scaling + "\nmin_scale " + exact(f.minScale) + "\n" +
      (f.dataParallel ? "data_parallel 1\n" : "") +
      (f.shardWorld > 0 ? "shard_world " + std::to_string(f.shardWorld) + "\n" : std::string());
  // The last line: FNV-1a 64 of every byte before it.
  return text + "checksum " + format("%016llx", static_cast<unsigned long long>(
                                                    runtime::fnv1a64(text.data(), text.size()))) +
         "\n";
}

std::string parseFacts(const std::string &text, StepFacts &f) {
  auto lines = keyValueLines(text);
  int version = 0;
  if (lines.empty() || lines.front().first != "mixprec-train-modules" ||
      !parseInteger(lines.front().second, version) || version < 1)
    return "it is not a trainer.txt that mixprec train --save-modules writes";
  if (version > kFactsVersion)
    return "it was written by a newer mixprec (version " + std::to_string(version) +
           "; this one reads " + std::to_string(kFactsVersion) + ")";
  // Version 2 ends with the checksum of the bytes before it: a damaged or
  // cut file is refused before any line is believed.
  if (version >= 2) {
    size_t at = text.rfind("\nchecksum ");
    if (at == std::string::npos)
      return "it lacks its 'checksum' line (the file is cut or damaged)";
    std::string stored = text.substr(at + 10);
    while (!stored.empty() && stored.back() == '\n')
      stored.pop_back();
    std::string want = format("%016llx", static_cast<unsigned long long>(
                                             runtime::fnv1a64(text.data(), at + 1)));
    if (stored != want)
      return "its 'checksum' line does not match its contents ('" + stored + "', the file's "
             "bytes give '" + want + "'): the file is damaged";
    lines = keyValueLines(text.substr(0, at + 1));
  }
  f = StepFacts();
  static const char *const kKeys[] = {"loss",          "classes",           "accumulate",
                                      "batch",         "eval_batch",        "eval_output",
                                      "model",         "model_fingerprint", "precision_options",
                                      "precision",     "scaling",           "min_scale"};
  std::set<std::string> seen;
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto &[key, value] = lines[i];
    bool bad = false;
    if (!seen.insert(key).second)
      return "its '" + key + "' line is given twice";
    if (key == "loss") {
      if (value == "ce")
        f.loss = LossKind::CrossEntropy;
      else if (value == "mse")
        f.loss = LossKind::Mse;
      else if (value == "model")
        f.loss = LossKind::Model;
      else
        bad = true;
    } else if (key == "classes")
      bad = !parseInteger(value, f.classes) || f.classes < 0;
    else if (key == "accumulate")
      bad = !parseInteger(value, f.accumulate) || f.accumulate < 1;
    else if (key == "batch")
      bad = !parseInteger(value, f.batch) || f.batch < 1;
    else if (key == "eval_batch")
      bad = !parseInteger(value, f.evalBatch) || f.evalBatch < 0;
    else if (key == "eval_output")
      f.evalOutput = value;
    else if (key == "model")
      bad = (f.model = value).empty();
    else if (key == "model_fingerprint") {
      // HASH:SIZE (compiler::fileFingerprint): 16 hex digits, a size.
      f.modelFingerprint = value;
      size_t colon = value.find(':');
      int64_t size = 0;
      bad = colon == std::string::npos || colon == 0 || colon > 16 ||
            value.find_first_not_of("0123456789abcdef") < colon ||
            !parseInteger(value.substr(colon + 1), size) || size < 0;
    } else if (key == "precision_options")
      bad = (f.precisionOptions = value).find("precision=") == std::string::npos;
    else if (key == "precision") {
      f.precisionName = value;
      bad = value != "fp32" && value != "tf32" && value != "bf16" && value != "fp16" &&
            value != "fp8";
    } else if (key == "scaling") {
      f.scaling = value;
      bad = value != "dynamic" && value != "static" && value != "none";
    } else if (key == "min_scale") {
      char *end = nullptr;
      f.minScale = std::strtod(value.c_str(), &end);
      bad = value.empty() || *end || !(f.minScale >= 0) || std::isinf(f.minScale);
    } else if (key == "data_parallel") {
      f.dataParallel = value == "1";
      bad = value != "0" && value != "1";
    } else if (key == "shard_world") {
      bad = !parseInteger(value, f.shardWorld) || f.shardWorld < 1 ||
            f.shardWorld > (int64_t(1) << 20);
    } else {
      return "its line '" + key + "' is not one trainer.txt has";
    }
    if (bad)
      return "its '" + key + "' line is damaged ('" + value + "')";
  }
  for (const char *key : kKeys)
    if (!seen.count(key))
      return std::string("it lacks the '") + key + "' line (the file is cut or damaged)";
  if (f.loss == LossKind::CrossEntropy && f.classes < 1)
    return "it gives cross-entropy no classes";
  return "";
}

bool loadSavedModules(const std::string &folder, StepFacts &facts, StepModules &modules,
                      std::string &error) {
  std::string factsPath = joinPath(folder, kSavedFactsFile), text;
  if (!common::readRegularFile(factsPath, text, error)) {
    error += " (is " + folder + " a folder that mixprec train --save-modules wrote?)";
    return false;
  }
  if (std::string why = parseFacts(text, facts); !why.empty())
    return error = factsPath + ": " + why, false;
  std::string stepPath = joinPath(folder, kSavedStepFile);
  if (mixprec::Status s = mixprec::Module::load(stepPath.c_str(), modules.step); !s.ok())
    return error = stepPath + ": " + s.message(), false;
  modules.eval.reset();
  if (facts.evalBatch > 0) {
    std::string evalPath = joinPath(folder, kSavedEvalFile);
    modules.eval.emplace();
    if (mixprec::Status s = mixprec::Module::load(evalPath.c_str(), *modules.eval); !s.ok())
      return error = evalPath + ": " + s.message(), false;
  }
  return true;
}

} // namespace mixprec::trainer
