//===- Trainer.h - train a model: the loop behind `mixprec train` -*- C++ -*-===//
//
// compiler::train builds one training step from a model
// (passes/Training/TrainingStep.h), compiles it at a precision to a module in memory
// and runs it on the runtime (CPU or CUDA), one batch per run; the session
// keeps the master weights, optimizer and loss-scale state (module state).
// The loop itself (data, logs, evaluation, checkpoints, resume) is
// train/TrainLoop.h, which `mixprec-train-run` drives from saved
// modules; this half builds, compiles, saves, and diagnoses a loss scale
// that cannot recover (by rerunning the step on the interpreter). The CLI
// (`mixprec train`) and the Python package (`mixprec.train`) are two front
// ends of this one function.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMPILER_TRAIN_TRAINER_H
#define MIXPREC_COMPILER_TRAIN_TRAINER_H

#include "common/Npy.h"
#include "mixprec/runtime.h"
#include "train/TrainLoop.h"
#include "passes/Pipelines.h"
#include "passes/Training/TrainingStep.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mixprec::compiler {

// The loop's types (train/TrainLoop.h): train() builds the
// modules and hands them to trainer::runLoop.
using trainer::kTrainError;
using trainer::kTrainScaleStuck;
using trainer::kTrainUsage;
using trainer::npyFileNameFor;
using trainer::TrainArray;
using trainer::TrainEvents;
using trainer::TrainOutcome;
using trainer::TrainStepRecord;

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
  /// Samples per micro-batch (the step is compiled for it).
  int64_t batch = 32;
  /// The loop's options: backend, steps or epochs, seed, shuffling, logs,
  /// evaluation, CSV, checkpoints, resume, state folder.
  trainer::LoopOptions loop;
  /// "fp32": train an FP32 copy beside on the same batches; "" none.
  std::string compare;
  /// Not "": compile the step (and, with test data, the evaluation
  /// function) and write them to this folder (step.mpk, eval.mpk,
  /// trainer.txt) for `mixprec-train-run`, instead of training.
  std::string saveModules;
  /// The CUDA architecture the modules get code for ("sm_90"; "": the
  /// device's when training on one, none when saving).
  std::string arch;
  /// The data-parallel job this process is a rank of (null: one process;
  /// not owned). A job of several ranks needs step.dataParallel.
  trainer::Collective *collective = nullptr;
  double collectiveTimeout = 300;
};

/// Trains as `config` says (see the file comment and README "Training").
/// Never throws or exits: every failure is in the outcome.
TrainOutcome train(const TrainConfig &config, const TrainEvents &events);

/// The loss scaling a run gets when none is asked for: GradScaler's
/// dynamic scaling at FP16, which needs it, none at the precisions with
/// FP32's range (FP32, TF32, BF16, and FP8's BF16 rest).
passes::TrainingOptions::Scaling defaultScaling(passes::Precision precision);

/// A file's bytes' hash and its size: "HASH:SIZE" with FNV-1a 64 (what a
/// training checkpoint records a model by), or "xxh64 HASH:SIZE" with
/// `xxh64` (the JIT module cache's key: XXH64 reads a large model ~8x as
/// fast); false with `error` when it cannot be read.
bool fileFingerprint(const std::string &path, std::string &out, std::string &error,
                     bool xxh64 = false);

} // namespace mixprec::compiler

#endif // MIXPREC_COMPILER_TRAIN_TRAINER_H
