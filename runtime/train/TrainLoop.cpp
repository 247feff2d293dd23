//===- TrainLoop.cpp - the training loop over compiled step modules -------===//
#include "runtime/train/TrainLoop.h"

#include "common/Escape.h"
#include "common/FileIO.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace mixprec::trainer {
namespace {

/// The version of the checkpoint's user blob this loop writes.
constexpr int kTrainStateVersion = 1;
/// The version of trainer.txt this loop writes and reads.
constexpr int kFactsVersion = 1;

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

/// What one runLoop call works with: where it reports, how it ends, and the
/// files it reads (no output may replace one).
struct Ctx {
  const TrainEvents &events;
  TrainOutcome &out;
  InputFiles &inputs;

  int fail(const std::string &message, int status = kTrainError) {
    out.status = status;
    out.error = common::escapeControls(message);
    return status;
  }
  void print(const std::string &line) {
    if (events.print)
      events.print(line);
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

/// One training run: the step's module and session, its evaluation.
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

  /// Creates the sessions on `backend`. 0, or the status after failing ctx.
  int start(Ctx &ctx, const StepFacts &facts, StepModules &modules, mixprec_backend_t backend,
            const std::vector<Column> &test) {
    label = modules.label;
    mixprec_session_options_t options = MIXPREC_SESSION_OPTIONS_INIT;
    options.backend = backend;
    step.module = modules.step;
    if (mixprec::Status s = mixprec::Session::create(step.module, step.session, options); !s.ok())
      return ctx.fail(facts.model + ": " + s.message());
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

  /// Evaluates the model as trained on the test set. False with `error`.
  bool evaluate(const StepFacts &facts, const std::vector<Column> &test, Evaluation &result,
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
  int64_t batch = 0, rows = 0;
  std::string model, precision;

  std::string serialize() const {
    return "mixprec-train " + std::to_string(version) + "\nsteps_done " +
           std::to_string(stepsDone) + "\nseed " + std::to_string(seed) + "\nshuffle " +
           (shuffle ? "1" : "0") + "\nbatch " + std::to_string(batch) + "\nrows " +
           std::to_string(rows) + "\nmodel " + model + "\nprecision " + precision + "\n";
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

/// The whole run (runLoop's body).
int run(Ctx &ctx, LoopInputs &in) {
  const StepFacts &facts = in.facts;
  const LoopOptions &t = in.options;
  std::vector<Column> &train = in.train, &test = in.test;
  const bool modelLoss = facts.loss == LossKind::Model;
  std::string error;
  const std::string &model = facts.model;
  if (std::string why = checkLoopOptions(t, !test.empty()); !why.empty())
    return ctx.fail(why, kTrainUsage);
  if (train.empty())
    return ctx.fail("train: no training data: give --data NAME=FILE.npy for each graph input",
                    kTrainUsage);
  const int64_t rows = train.front().rows();
  const int64_t stepRows = facts.batch * facts.accumulate;
  if (stepRows < 1)
    return ctx.fail(model + ": the step takes no samples (batch " +
                    std::to_string(facts.batch) + ")");
  if (stepRows > rows)
    return ctx.fail("train: a step takes " + std::to_string(stepRows) + " samples (--batch " +
                    std::to_string(facts.batch) +
                    (facts.accumulate > 1 ? " x --accumulate " + std::to_string(facts.accumulate)
                                          : std::string()) +
                    "), more than the " + std::to_string(rows) + " samples of " +
                    train.front().path);
  // The outputs: none may replace an input. The checkpoint may be the file
  // resumed from: it is read whole before it is written again.
  for (const std::string *path : {&t.csv, &t.checkpoint})
    if (!path->empty() && !ctx.checkNotAnInput(*path, error))
      return ctx.fail(error);

  Run primary;
  if (int rc = primary.start(ctx, facts, in.primary, t.backend, test))
    return rc;
  std::optional<Run> compare;
  if (in.compare) {
    compare.emplace();
    if (int rc = compare->start(ctx, facts, *in.compare, t.backend, test))
      return rc;
  }
  if (!convertColumns(model, train, primary.step.module, stepRows, error) ||
      (!test.empty() && !convertColumns(model, test, primary.eval->module, 0, error,
                                        modelLoss ? nullptr : &train.back())))
    return ctx.fail(error);
  if (facts.loss == LossKind::CrossEntropy &&
      (!checkLabels(train.back(), facts.classes, error) ||
       (!test.empty() && !checkLabels(test.back(), facts.classes, error))))
    return ctx.fail(error);

  const int64_t stepsPerEpoch = rows / stepRows;
  const int64_t total = t.steps ? t.steps : (t.epochs ? t.epochs : 1) * stepsPerEpoch;
  TrainState state;
  state.seed = t.seed;
  state.shuffle = t.shuffle;
  state.batch = stepRows;
  state.rows = rows;
  state.precision = facts.precisionOptions;
  state.model = facts.modelFingerprint;

  if (!t.resume.empty()) {
    std::vector<char> blob(4096);
    size_t blobBytes = 0;
    if (mixprec::Status s = primary.step.session.loadCheckpoint(t.resume.c_str(), blob.data(),
                                                                blob.size(), blobBytes);
        !s.ok())
      return ctx.fail(t.resume + ": cannot resume from it: " + s.message());
    TrainState saved;
    if (std::string why = saved.parse(std::string(blob.data(), blobBytes)); !why.empty())
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
      return mismatch(facts.accumulate > 1 ? "samples per step (--batch x --accumulate)"
                                           : "--batch",
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

  ctx.print(in.program + ": " + model + ": " + std::to_string(rows) + " samples, batch " +
            std::to_string(facts.batch) +
            (facts.accumulate > 1
                 ? " x " + std::to_string(facts.accumulate) + " micro-batches"
                 : std::string()) +
            ", " + std::to_string(total) + " steps (" + std::to_string(stepsPerEpoch) +
            " per epoch), precision " + facts.precisionName + ", backend " +
            mixprec_backend_name(primary.step.session.backend()) + ", loss scale " +
            facts.scaling + (in.origin.empty() ? "" : "; " + in.origin));
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
      if (!run->evaluate(facts, test, e, error))
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
      return ctx.fail(model + ": step " + std::to_string(step + 1) + ": " + error);
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
        return ctx.fail(model + ": step " + std::to_string(step + 1) + " (" + compare->label +
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
          "step " + std::to_string(step + 1) + "/" + std::to_string(total) + "  epoch " +
          std::to_string(epoch + 1) + "  loss " + num(meanLoss) + "  scale " +
          num(record.lossScale) + "  skipped " + std::to_string(skippedTotal) + "  grad_norm " +
          num(window.applied ? window.norm / window.applied : NAN) + "  " +
          std::to_string(static_cast<long long>(
              std::llround(window.steps * stepRows / std::max(seconds, 1e-9)))) +
          " samples/s";
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
      std::string diagnosis =
          in.diagnose ? in.diagnose(primary.step.session, batch) : "";
      if (!t.csv.empty() && !writeCsv(ctx, t.csv, csvHeader, csvRows))
        return kTrainError;
      ctx.fail(model + ": the last " + std::to_string(skippedInARow) +
                   " steps all overflowed (step " + std::to_string(step + 1) + ", loss scale " +
                   num(record.lossScale) +
                   (facts.minScale > 0 && record.lossScale <= facts.minScale ? ", its minimum"
                                                                             : "") +
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
    if (std::string why = createDirectories(t.stateDir); !why.empty())
      return ctx.fail(why);
    for (size_t i = 0; i < primary.stateNames.size(); ++i) {
      mixprec_tensor_info_t info;
      primary.step.module.stateInfo(i, info);
      std::string path = joinPath(t.stateDir, npyFileNameFor(primary.stateNames[i]));
      std::vector<float> values = primary.readState(i);
      support::NpyArray array = support::npyFromFloat32(
          std::vector<int64_t>(info.dims, info.dims + info.rank), values.data());
      if (!ctx.checkNotAnInput(path, error) || !support::writeNpy(path, array, error))
        return ctx.fail(error);
    }
  }
  double seconds = millisecondsSince(runStart) / 1000;
  std::string summary =
      "trained " + std::to_string(stepsRun) + " steps in " + format("%.2f", seconds) + " s (" +
      std::to_string(
          static_cast<long long>(std::llround(stepsRun * stepRows / std::max(seconds, 1e-9)))) +
      " samples/s): " + std::to_string(stepsRun - skippedTotal) + " applied (" +
      format("%.1f", stepsRun ? 100.0 * (stepsRun - skippedTotal) / stepsRun : 0.0) + "%), " +
      std::to_string(skippedTotal) + " skipped; last loss " + num(out.lastLoss);
  if (compare)
    summary += "; " + compare->label + ": last loss " + num(out.compareLastLoss.value_or(NAN)) +
               ", " + std::to_string(compareSkipped) + " skipped, mean loss gap " +
               num(gapCount ? gapSum / gapCount : NAN);
  ctx.print(summary);
  return 0;
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
  return "";
}

TrainOutcome runLoop(LoopInputs &inputs, const TrainEvents &events) {
  TrainOutcome outcome;
  Ctx ctx{events, outcome, inputs.inputs};
  int status = run(ctx, inputs);
  if (status != 0 && outcome.status == 0)
    ctx.fail("train failed without a message", status);
  outcome.status = status;
  return outcome;
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
  return "mixprec-train-modules " + std::to_string(kFactsVersion) + "\nloss " +
         lossName(f.loss) + "\nclasses " + std::to_string(f.classes) + "\naccumulate " +
         std::to_string(f.accumulate) + "\nbatch " + std::to_string(f.batch) + "\neval_batch " +
         std::to_string(f.evalBatch) + "\neval_output " + f.evalOutput + "\nmodel " + f.model +
         "\nmodel_fingerprint " + f.modelFingerprint + "\nprecision_options " +
         f.precisionOptions + "\nprecision " + f.precisionName + "\nscaling " + f.scaling + "\nmin_scale " + exact(f.minScale) + "\n";
}

std::string parseFacts(const std::string &text, StepFacts &f) {
  auto lines = keyValueLines(text);
  int version = 0;
  if (lines.empty() || lines.front().first != "mixprec-train-modules" ||
      !parseInteger(lines.front().second, version))
    return "it is not a trainer.txt that mixprec train --save-modules writes";
  if (version > kFactsVersion)
    return "it was written by a newer mixprec (version " + std::to_string(version) +
           "; this one reads " + std::to_string(kFactsVersion) + ")";
  f = StepFacts();
  bool haveLoss = false, haveBatch = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto &[key, value] = lines[i];
    bool bad = false;
    if (key == "loss") {
      haveLoss = true;
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
      bad = !(haveBatch = parseInteger(value, f.batch)) || f.batch < 1;
    else if (key == "eval_batch")
      bad = !parseInteger(value, f.evalBatch) || f.evalBatch < 0;
    else if (key == "eval_output")
      f.evalOutput = value;
    else if (key == "model")
      f.model = value;
    else if (key == "model_fingerprint")
      f.modelFingerprint = value;
    else if (key == "precision_options")
      f.precisionOptions = value;
    else if (key == "precision")
      f.precisionName = value;
    else if (key == "scaling")
      f.scaling = value;
    else if (key == "min_scale") {
      char *end = nullptr;
      f.minScale = std::strtod(value.c_str(), &end);
      bad = value.empty() || *end || !(f.minScale >= 0);
    }
    if (bad)
      return "its '" + key + "' line is damaged ('" + value + "')";
  }
  if (!haveLoss || !haveBatch)
    return std::string("it lacks the '") + (haveLoss ? "batch" : "loss") + "' line";
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
