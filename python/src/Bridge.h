//===- Bridge.h - the compile API for the Python extension ------*- C++ -*-===//
//
// The Python extension is built with exceptions and RTTI (nanobind needs
// both) and LLVM/MLIR without: this header is the wall between them. It
// declares plain C++ (strings, vectors, the runtime's C types) over the
// compile API (compiler/Compile/Compile.h) and the report library
// (compiler/Report/Report.h); Bridge.cpp, built like the rest of mixprec,
// implements it and never throws. Failures are a Failure: the one line the
// CLI prints after "mixprec: error: ", and its notes.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_PYTHON_BRIDGE_H
#define MIXPREC_PYTHON_BRIDGE_H

#include "common/Npy.h"
#include "mixprec/runtime.h"
#include "train/TrainLoop.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mixprec::python {

/// Why a call failed. `kind` says which Python exception it becomes.
struct Failure {
  enum class Kind { None, Compile, InvalidArgument, Io };
  Kind kind = Kind::None;
  std::string message;
  std::vector<std::string> notes;
  explicit operator bool() const { return kind != Kind::None; }
};

/// Named arrays given from Python (inputs, calibration data), in call order.
using NamedArrays = std::vector<std::pair<std::string, support::NpyArray>>;

/// What to compile: the model file, the precision pipeline's options as
/// `mixprec-opt --mp-precision-pipeline=` takes them ("precision=bf16
/// keep-fp32=softmax"), `--shape` sizes, `--calibrate` arrays.
struct CompileRequest {
  std::string path;
  /// The model as errors and reports name it (the path, or what the
  /// caller gave when it wrote a temporary file).
  std::string displayName;
  std::string options;
  /// Whether a precision was asked for: a graph that carries a plan keeps
  /// it only when none was.
  bool precisionGiven = true;
  std::map<std::string, std::vector<int64_t>> shapes;
  NamedArrays calibrate;
};

/// A compiled model: the annotated graph on its own MLIR context.
class CompiledModel {
public:
  virtual ~CompiledModel() = default;
  /// The annotated IR as `mixprec compile --emit mp-mlir` prints it.
  virtual std::string ir(bool elideWeights) = 0;
  /// The module bytes and side file of the graph, the side file called
  /// `sideFileName`; with `smVersion` > 0 the kernels' CUDA code too.
  virtual Failure image(const std::string &sideFileName, int smVersion,
                        std::vector<uint8_t> &module, std::vector<uint8_t> &sideFile) = 0;
  /// Writes the module (and its side file beside it) to `path`, atomically;
  /// an Io failure when `path` or its side file is one of sources().
  virtual Failure save(const std::string &path, int smVersion) = 0;
  /// The files it was made from: the model, its external data, the policy.
  virtual const std::vector<std::string> &sources() const = 0;
};

/// An Io failure naming `path` when it, or the side file a module written
/// there would have, is one of `sources` (compared as files: other
/// spellings and links count): Module.save and save_checkpoint never
/// replace what the module was made from. `module` names it.
Failure checkNotASource(const std::vector<std::string> &sources, const std::string &path,
                        const std::string &module);

/// What a module loaded from `path` was made from: the file and its side file.
std::vector<std::string> loadedModuleSources(const std::string &path);

/// Loads and compiles a model at the request's precision.
Failure compileModel(const CompileRequest &request, std::unique_ptr<CompiledModel> &out);

/// `mixprec report --json`: the document (JSON text) and the printed text.
Failure report(const CompileRequest &request, bool graph, std::string &json, std::string &text);

/// `mixprec validate --json`: inputs given (all, or none for random ones
/// from `seed`); `tolerance` negative for the default bounds.
Failure validate(const CompileRequest &request, const NamedArrays &inputs, uint64_t seed,
                 double tolerance, std::string &json, std::string &text, int &status);

/// What `mixprec.train` asks for: `mixprec train`'s options (README
/// "Training"), typed; the arrays in memory (one sample per row).
struct TrainRequest {
  std::string path, displayName;
  /// The precision options, as CompileRequest::options.
  std::string options;
  bool precisionGiven = true;
  std::map<std::string, std::vector<int64_t>> shapes;
  NamedArrays data, testData;
  bool hasLabels = false, hasTestLabels = false;
  support::NpyArray labels, testLabels;
  std::string loss = "ce", output, optimizer = "sgd", lossScale, backend = "auto";
  double lr = 0.01, momentum = 0, weightDecay = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double initScale = 65536, growthFactor = 2, backoffFactor = 0.5, minScale = 0, clipNorm = 0;
  int64_t growthInterval = 2000, hysteresis = 1, accumulate = 1;
  std::vector<std::string> frozen;
  int64_t batch = 32;
  /// The loop's options (steps, epochs, seed, shuffling, logs, evaluation,
  /// CSV, checkpoints, ensembles, metrics, report) as the keywords give
  /// them; the backend is `backend` above.
  trainer::LoopOptions loop;
  std::string compare;
  /// Data parallelism: the world size the caller expects (0: whatever the
  /// launcher started; a rank of an mpirun job of N trains data-parallel),
  /// a step compiled for it without a job (save_modules), the all-reduce's
  /// dtype and buckets, and the collectives' timeout.
  int64_t world = 0;
  bool dataParallel = false;
  /// shard_optimizer=True: ZeRO stage 1 over the job's ranks.
  bool shardOptimizer = false;
  std::string allreduceDType = "fp32";
  double bucketMB = 25, collectiveTimeout = 300;
};

/// One step as `mixprec.train`'s callback sees it (NaN: not evaluated).
struct TrainStepInfo {
  uint64_t seed = 0;
  int64_t step = 0, epoch = 0;
  double loss = 0, lossScale = 0, gradNorm = 0;
  bool skipped = false;
  double testLoss = 0, testAccuracy = 0;
  double compareLoss = 0;
};

/// How a training run ended (`status` 5: the loss scale could not recover;
/// `message` and `notes` say why).
struct TrainSummary {
  int status = 0;
  std::string message;
  std::vector<std::string> notes;
  int64_t steps = 0, skipped = 0;
  double lastLoss = 0, testLoss = 0, testAccuracy = 0, compareLastLoss = 0;
  /// The ensemble verdict ("" without a compare run) and the five metrics
  /// (the --metrics JSON).
  std::string verdict, metricsJson;
};

/// Runs compiler::train (compiler/Train/Trainer.h) on the request; `print`
/// gets the progress lines, `onStep` every step (false stops the run).
/// A configuration or data error is a Failure; a run the loss scale stops
/// returns with summary.status 5.
Failure train(const TrainRequest &request, const std::function<void(const std::string &)> &print,
              const std::function<bool(const TrainStepInfo &)> &onStep, TrainSummary &summary);

/// Encodes an array as module input `info`'s bytes by the CLI's rules
/// (float inputs take float16/32/64, integer inputs integer arrays, bool
/// inputs bool or uint8; the shape must match); errors name `subject` and
/// the input.
Failure encodeInput(const mixprec_tensor_info_t &info, const support::NpyArray &array,
                    const std::string &subject, std::vector<uint8_t> &bytes);

/// The SM version of this machine's GPU (90 for sm_90) when it has one
/// that NVRTC compiles for, else 0: a module for the CUDA backend then
/// gets no CUDA code, and the runtime says why CUDA is not there.
int deviceSmVersion();

/// Decodes `n` values of a float dtype (F16, BF16, FP8) to float32.
void decodeFloats(mixprec_dtype_t dtype, const void *data, float *out, size_t n);

/// The producer string modules are written with ("mixprec 0.1.0").
std::string producer();

} // namespace mixprec::python

#endif // MIXPREC_PYTHON_BRIDGE_H
