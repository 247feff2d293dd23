//===- Trainer.h - train a model: the loop behind `mixprec train` -*- C++ -*-===//
//
// compiler::train builds one training step from a model
// (passes/TrainingStep.h), compiles it at a precision to a module in memory
// and runs it on the runtime (CPU or CUDA), one batch per run; the session
// keeps the master weights, optimizer and loss-scale state (module state).
// It reads the data, logs, evaluates, checkpoints, resumes and diagnoses a
// loss scale that cannot recover. The CLI (`mixprec train`) and the Python
// package (`mixprec.train`) are two front ends of this one loop.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMPILER_TRAIN_TRAINER_H
#define MIXPREC_COMPILER_TRAIN_TRAINER_H

#include "common/Npy.h"
#include "mixprec/runtime.h"
#include "passes/Pipelines.h"
#include "passes/TrainingStep.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mixprec::compiler {

/// One array of samples (dim 0: one sample per row): read from `path`, or
/// given in memory (`array`; `path` then only names it in messages).
struct TrainArray {
  std::string name; ///< the graph input it feeds (unused for labels)
  std::string path;
  std::optional<support::NpyArray> array;
};

/// What to train and how (the CLI's options; Trainer.cpp checks them).
struct TrainConfig {
  std::string model;
  /// Sizes of dynamic dims (`--shape`), by input or symbolic dim name.
  std::map<std::string, std::vector<int64_t>> shapes;
  std::vector<TrainArray> data, testData;
  std::optional<TrainArray> labels, testLabels;
  /// Loss, optimizer, loss scaling, clipping, accumulation, frozen globs.
  passes::TrainingOptions step;
  /// The precision options (not owned). FP8 without fp8-scaling given
  /// trains with delayed scaling (Transformer Engine's default recipe).
  passes::PrecisionPipelineOptions *precision = nullptr;
  mixprec_backend_t backend = MIXPREC_BACKEND_AUTO;
  int64_t batch = 32;
  /// Steps in all (0: not given), or epochs (0: 1 when steps is 0 too).
  int64_t steps = 0, epochs = 0;
  uint64_t seed = 0;
  bool shuffle = true;
  int64_t logEvery = 10, evalEvery = 0, checkpointEvery = 0;
  int64_t maxSkippedInARow = 50;
  std::string csv, checkpoint, resume, stateDir;
  /// "fp32": train an FP32 copy beside on the same batches; "" none.
  std::string compare;
};

/// One step, as the CSV logs it.
struct TrainStepRecord {
  int64_t step = 0, epoch = 0; ///< 1-based
  float loss = 0, lossScale = 0, gradNorm = 0;
  bool skipped = false;
  /// Set on evaluation steps (accuracy for cross-entropy only).
  std::optional<double> testLoss, testAccuracy;
  /// The --compare run's.
  std::optional<float> compareLoss;
  std::optional<bool> compareSkipped;
  std::optional<double> compareTestLoss, compareTestAccuracy;
};

/// Where the trainer reports as it goes.
struct TrainEvents {
  /// A progress, evaluation or summary line (the CLI prints it on stdout).
  std::function<void(const std::string &line)> print;
  /// After every step; false stops the run after it, as if it were the
  /// last (checkpoint, CSV and state written).
  std::function<bool(const TrainStepRecord &record)> onStep;
};

/// How a run ended.
struct TrainOutcome {
  /// 0, kTrainError, kTrainUsage (the configuration is wrong) or
  /// kTrainScaleStuck (the loss scale could not recover).
  int status = 0;
  std::string error;              ///< one line, naming the file, option or op
  std::vector<std::string> notes; ///< lines that explain the error
  int64_t steps = 0, skipped = 0; ///< this run's
  float lastLoss = 0;
  std::optional<double> testLoss, testAccuracy;
  std::optional<float> compareLastLoss;
};

constexpr int kTrainError = 1;
constexpr int kTrainUsage = 2;
constexpr int kTrainScaleStuck = 5;

/// Trains as `config` says (see the file comment and README "Training").
/// Never throws or exits: every failure is in the outcome.
TrainOutcome train(const TrainConfig &config, const TrainEvents &events);

/// The loss scaling a run gets when none is asked for: GradScaler's
/// dynamic scaling at FP16, which needs it, none at the precisions with
/// FP32's range (FP32, TF32, BF16, and FP8's BF16 rest).
passes::TrainingOptions::Scaling defaultScaling(passes::Precision precision);

/// FNV-1a 64 of a file's bytes and its size, "HASH:SIZE" (what a
/// checkpoint and the JIT module cache recognise a model by); false with
/// `error` when it cannot be read.
bool fileFingerprint(const std::string &path, std::string &out, std::string &error);

/// The file name an array named `name` is written to (NAME.npy, every byte
/// outside [A-Za-z0-9_.-] and a leading '.' as %XX).
std::string npyFileNameFor(const std::string &name);

} // namespace mixprec::compiler

#endif // MIXPREC_COMPILER_TRAIN_TRAINER_H
