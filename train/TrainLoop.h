//===- TrainLoop.h - the training loop over compiled step modules -*- C++ -*-===//
//
// The half of training that needs no compiler: given a compiled training
// step (and, for evaluation, a compiled forward function whose trained
// constants are state of the same names), it reads the data, orders and
// batches it, runs one step per batch on the runtime (CPU or CUDA), logs,
// evaluates, checkpoints, resumes, writes the CSV and the trained states,
// and stops when the loss scale cannot recover.
//
// Two front ends drive it: compiler::train (`mixprec train`,
// `mixprec.train`), which builds and compiles the modules in memory first,
// and `mixprec-train-run`, which loads modules that `mixprec train
// --save-modules DIR` wrote (a folder: step.mpk, eval.mpk, trainer.txt), on
// a machine with the runtime alone (the runtime-only build: no LLVM). Both
// give the same steps bit for bit, and each resumes the other's checkpoints.
//
// No LLVM or MLIR here (the runtime-only build compiles this file).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_TRAIN_TRAINLOOP_H
#define MIXPREC_RUNTIME_TRAIN_TRAINLOOP_H

#include "common/HostTensor.h"
#include "common/Npy.h"
#include "mixprec/runtime.hpp"
#include "train/Collective.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mixprec::trainer {

using support::HostTensor;

/// One array of samples (dim 0: one sample per row): read from `path`, or
/// given in memory (`array`; `path` then only names it in messages).
struct TrainArray {
  std::string name; ///< the graph input it feeds (unused for labels)
  std::string path;
  std::optional<support::NpyArray> array;
};

/// One step, as the CSV logs it.
struct TrainStepRecord {
  uint64_t seed = 0;           ///< the run's data-order seed
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

/// Where the loop reports as it goes.
struct TrainEvents {
  /// A progress, evaluation or summary line (the CLI prints it on stdout).
  std::function<void(const std::string &line)> print;
  /// After every step; false stops the run after it, as if it were the
  /// last (checkpoint, CSV and state written).
  std::function<bool(const TrainStepRecord &record)> onStep;
};

/// What one run of an ensemble (--seeds N: one per data-order seed) ended
/// with; NaN where there is nothing (no test data, no compare run).
struct SeedResult {
  uint64_t seed = 0;
  int64_t steps = 0, skipped = 0, compareSkipped = 0;
  /// The mean loss of the applied steps in the run's last tenth (train),
  /// and the last evaluation's loss and accuracy (test), of the run and of
  /// the --compare run beside it.
  double trainLoss = NAN, testLoss = NAN, testAccuracy = NAN;
  double compareTrainLoss = NAN, compareTestLoss = NAN, compareTestAccuracy = NAN;
  /// Seconds spent in the steps of the run and of the compare run.
  double stepSeconds = 0, compareStepSeconds = 0;
  /// The mean gradient norm of the applied steps.
  double gradNormMean = NAN;
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
  /// One per seed, in order (one for a plain run).
  std::vector<SeedResult> seeds;
  /// The ensemble verdict ("" without --compare), and the five metrics as
  /// the --metrics file holds them (JSON, README "Training metrics").
  std::string verdict, metricsJson;
};

constexpr int kTrainError = 1;
constexpr int kTrainUsage = 2;
constexpr int kTrainScaleStuck = 5;

/// The loss the step computes (the labels it needs, how evaluation scores).
enum class LossKind { CrossEntropy, Mse, Model };

/// "ce", "mse", "model".
const char *lossName(LossKind loss);

/// What the loop must know of the compiled step beyond its signature: the
/// build's facts, or a saved folder's trainer.txt.
struct StepFacts {
  LossKind loss = LossKind::CrossEntropy;
  /// Cross-entropy's classes: the last dim of the output the loss reads.
  int64_t classes = 0;
  /// Micro-batches a step accumulates (the step takes accumulate x batch rows).
  int64_t accumulate = 1;
  /// The output the evaluation module scores ("": its first).
  std::string evalOutput;
  /// The model's path (messages) and fingerprint ("HASH:SIZE": checkpoints).
  std::string model, modelFingerprint;
  /// The precision options as the pipeline prints them (checkpoints), the
  /// precision's name and the loss scaling's ("dynamic", "static", "none").
  std::string precisionOptions, precisionName, scaling;
  /// The loss scale's floor (--min-scale; 0: none), named when it is hit.
  double minScale = 0;
  /// The samples per micro-batch the step was compiled for, and per
  /// evaluation run (0: no evaluation module).
  int64_t batch = 0, evalBatch = 0;
  /// The step averages its gradients across ranks (all_reduce steps:
  /// TrainingOptions::dataParallel); a job of more than one rank needs it.
  bool dataParallel = false;
  /// The ranks the step's sharded optimizer state is for
  /// (TrainingOptions::shardOptimizer; 0: not sharded). The job must have
  /// as many.
  int64_t shardWorld = 0;
};

/// The name labels (or MSE's targets) go by in messages and the step.
const char *labelsNameFor(LossKind loss);

/// The samples per evaluation run for a test set of `rows` samples.
int64_t evalBatchFor(int64_t rows);

/// One array of samples, as one of the step's inputs takes it.
struct Column {
  std::string name; ///< the step's input it feeds
  std::string path;
  support::NpyArray array;
  std::vector<int64_t> rowShape; ///< the shape of one sample
  HostTensor all;                ///< every row, as the input's kind
  mixprec_dtype_t dtype = MIXPREC_DTYPE_F32;

  int64_t rows() const { return array.shape.empty() ? 0 : array.shape.front(); }
  int64_t rowElements() const;
  std::vector<int64_t> batchShape(int64_t batch) const;
};

/// The files a run reads (path, what it is): no output may replace one.
using InputFiles = std::vector<std::pair<std::string, std::string>>;

/// Reads the arrays of --data (or --test-data) and the labels (as the last
/// column, named `labelsName`); every one must have a sample dim, and all
/// the same number of samples. `what` names the option in messages.
bool readColumns(const std::vector<TrainArray> &data, const std::optional<TrainArray> &labels,
                 const std::string &labelsName, const std::string &what,
                 std::vector<Column> &out, InputFiles &inputs, std::string &error);

/// The loop's options (the CLI's).
struct LoopOptions {
  mixprec_backend_t backend = MIXPREC_BACKEND_AUTO;
  /// Steps in all (0: not given), or epochs (0: 1 when steps is 0 too).
  int64_t steps = 0, epochs = 0;
  uint64_t seed = 0;
  bool shuffle = true;
  int64_t logEvery = 10, evalEvery = 0, checkpointEvery = 0;
  int64_t maxSkippedInARow = 50;
  std::string csv, checkpoint, resume, stateDir;
  /// Runs in the ensemble: data-order seeds seed, seed+1, ... (each from
  /// the initial state); the summary gives each precision's mean and
  /// standard deviation and, with a compare run, Welch's interval.
  int64_t seeds = 1;
  /// With a compare run: every K steps, the gradients of both precisions
  /// on the same batch and master weights, per parameter (0: never).
  int64_t compareEvery = 0;
  /// The five metrics as JSON ("" none), and the HTML run report ("" none).
  std::string metrics, report;
  /// FP32's samples/s for the speedup when there is no compare run (0: none).
  double fp32SamplesPerSecond = 0;
  /// Each run resamples the trained parameters from its seed (uniform, with
  /// each parameter's initial mean and standard deviation; the compare run
  /// gets the same values): an ensemble over initialisations too.
  bool reinit = false;
};

/// The kinds of bytes a training step holds (its memory plan's), for the
/// memory metric; all 0 when unknown (modules loaded from a folder).
struct StepMemory {
  int64_t weights = 0;         ///< the parameters' copies the GEMMs read
  int64_t masterWeights = 0;   ///< FP32 master weights (state)
  int64_t optimizerState = 0;  ///< momentum, exp_avg, ... (state)
  int64_t otherState = 0;      ///< step count, loss scale, FP8 amax histories
  int64_t gradients = 0;       ///< the FP32 unscaled gradients
  int64_t arena = 0;           ///< the plan's arena (every intermediate at its peak)
  int64_t total() const { return masterWeights + optimizerState + otherState + arena; }
};

/// What the compiler knows of the step that the loop reports (metrics).
struct StepCosts {
  bool known = false;
  /// FLOPs of one step (forward and backward as they run, every micro-batch).
  double flopsPerStep = 0;
  StepMemory memory, fp32Memory; ///< this precision's plan and FP32's
  /// The forward graph as the report draws it (JSON: {"nodes": [...], "edges": [...]}).
  std::string graphJson;
};

/// A compiled step and, when there is test data, its evaluation module.
struct StepModules {
  std::string label; ///< "" for the main run, else the --compare precision
  mixprec::Module step;
  std::optional<mixprec::Module> eval;
};

/// Names the first op whose value is not finite when the loss scale is
/// stuck (the compiler reruns the step on its interpreter); "" when it
/// cannot tell. Gets the step's session (the states) and the batch.
using DiagnoseFn = std::function<std::string(const mixprec::Session &session,
                                             const std::vector<HostTensor> &batch)>;

/// Everything one run of the loop takes.
struct LoopInputs {
  StepFacts facts;
  LoopOptions options;
  std::vector<Column> train, test; ///< from readColumns
  InputFiles inputs;               ///< the files read so far
  StepModules primary;
  std::optional<StepModules> compare;
  /// The program the lines name, and how the modules came ("compiled in
  /// 0.52 s", "loaded from DIR"), for the first line.
  std::string program = "mixprec train", origin;
  DiagnoseFn diagnose; ///< may be empty
  StepCosts costs;
  /// Renders the HTML report from the CSV text and the metrics JSON (the
  /// compiler's renderer; empty: --report is refused).
  std::function<bool(const std::string &csvPath, const std::string &csv,
                     const std::string &metricsJson, std::string &html, std::string &error)>
      renderReport;
  /// The job this process is a rank of (data parallelism; null: one
  /// process). Each rank trains on its slice of every global batch (batch
  /// x accumulate rows at rank x that offset, from the same shuffled
  /// order); the step's all_reduce steps call it; rank 0 alone prints and
  /// writes the CSV, checkpoints, states, metrics and report; at the end
  /// the ranks compare a hash of their states. Owned by the front end.
  Collective *collective = nullptr;
  /// Seconds a collective waits for the other ranks (NCCL's, which the
  /// loop opens for a CUDA session over `collective`).
  double collectiveTimeout = 300;
};

/// After a failed run of a job of several ranks: ends every rank
/// (Collective::abort with the outcome's status), so that no other rank
/// waits for this one. Does nothing for a run that succeeded or a job of
/// one process. The front ends call it once they have printed the error.
void endJobAfterFailure(Collective *collective, const TrainOutcome &outcome);

/// The job a front end's process is a rank of: null (and no error) for a
/// process no launcher started, or started as a job of one; else MPI's
/// collective (CPU buffers; the CUDA backend stages through the host), or
/// null with `error` naming the rank and what failed.
std::unique_ptr<Collective> joinLaunchedJob(double timeoutSeconds, std::string &error);

/// `--ranks N` outside a launcher: runs `args` (this program's command
/// line, argv[0] first) again as a job of `ranks` processes under mpirun
/// (`mpirun --oversubscribe -np N`, `--allow-run-as-root` for root), each
/// without `--ranks N`, and returns the job's exit status; -1 with `error`
/// when mpirun cannot be started.
int runAsRanks(int64_t ranks, const std::vector<std::string> &args, std::string &error);

/// How a front end's process takes part in a data-parallel job (`mixprec
/// train`, `mixprec-train-run`): `--ranks N` (0: not given) outside a
/// launcher starts the job (runAsRanks) and this process only waits for it;
/// under a launcher `--ranks` must be its world size; a rank joins the job.
struct JobStart {
  /// >= 0: the job --ranks started ended with this status; exit with it.
  int spawnedExit = -1;
  /// The job this process is a rank of (null: one process).
  std::unique_ptr<Collective> collective;
  /// Not empty: no job (`usage`: the arguments disagree with the launcher).
  std::string error;
  bool usage = false;
};
JobStart startJob(int64_t ranks, const std::vector<std::string> &args, double timeoutSeconds);

/// Whether a state of a training step is a trained parameter's FP32 master
/// (not the optimizer's, the step count, loss-scale or FP8 scaling state),
/// by the names buildTrainingStep gives (passes/Training/TrainingStep.h).
bool isParameterState(const std::string &name);

/// Whether a state is an optimizer's (NAME.momentum_buffer, NAME.exp_avg,
/// NAME.exp_avg_sq).
bool isOptimizerState(const std::string &name);

/// "" when a step of `batch` x `accumulate` samples fits the `rows`
/// samples of the data (`path` names it), else the error. Checked before
/// anything is built for the batch: a step larger than its data cannot
/// train, and a batch of 2^32 rows would not fit the compiler's containers.
std::string checkStepRows(int64_t batch, int64_t accumulate, int64_t rows,
                          const std::string &path);

/// The most runs --seeds takes.
constexpr int64_t kMaxSeeds = 1000;

/// The loop's checks of options that need no file: "" or the error.
std::string checkLoopOptions(const LoopOptions &options, bool testData);

/// Runs the loop (see the file comment). Never throws or exits: every
/// failure is in the outcome (status kTrainError, or kTrainScaleStuck).
TrainOutcome runLoop(LoopInputs &inputs, const TrainEvents &events);

/// A whole string as a decimal integer (no sign for the unsigned one);
/// false when it is not one or does not fit. The runner's options and the
/// loop's records are read with these.
bool parseInt64(const std::string &text, int64_t &out);
bool parseUint64(const std::string &text, uint64_t &out);

/// The file name an array named `name` is written to (NAME.npy, every byte
/// outside [A-Za-z0-9_.-] and a leading '.' as %XX).
std::string npyFileNameFor(const std::string &name);

/// The outputs of a step compiled with gradient outputs
/// (TrainingOptions::gradientOutputs): GRAD_PREFIX + the parameter's name.
constexpr const char *kGradOutputPrefix = "grad.";

/// A saved folder's files.
constexpr const char *kSavedStepFile = "step.mpk";
constexpr const char *kSavedEvalFile = "eval.mpk";
constexpr const char *kSavedFactsFile = "trainer.txt";

/// trainer.txt: the facts as "key value" lines, first "mixprec-train-modules 1".
std::string serializeFacts(const StepFacts &facts);
/// Parses trainer.txt ("" or why it cannot be read).
std::string parseFacts(const std::string &text, StepFacts &facts);

/// Loads a folder `mixprec train --save-modules` wrote: its facts and
/// modules (the evaluation module when it has one). False with `error`
/// naming the file.
bool loadSavedModules(const std::string &folder, StepFacts &facts, StepModules &modules,
                      std::string &error);

} // namespace mixprec::trainer

#endif // MIXPREC_RUNTIME_TRAIN_TRAINLOOP_H
