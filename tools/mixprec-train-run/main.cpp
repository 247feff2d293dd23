//===- main.cpp - mixprec-train-run: train from saved step modules ---------===//
//
// `mixprec-train-run DIR --data NAME=FILE.npy... [--labels FILE.npy] ...`
// runs the training loop (train/TrainLoop.h) on the modules that
// `mixprec train MODEL ... --save-modules DIR` compiled: DIR/step.mpk,
// DIR/eval.mpk (with test data) and DIR/trainer.txt. It needs the runtime
// alone (no LLVM: the runtime-only build makes it), so a model compiled on
// one machine trains on another, e.g. a GPU machine without the compiler.
// The loss, optimizer, precision, loss scaling and batch were fixed when
// the modules were compiled; the options here are the loop's.
//
// Exit status: 0, 1 errors, 2 usage errors, 5 when the loss scale cannot
// recover (mixprec train, which can rerun the step on its interpreter,
// names the op that overflows).
//
//===----------------------------------------------------------------------===//
#include "common/Escape.h"
#include "train/TrainLoop.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

using namespace mixprec;

namespace {

const char *const kUsage =
    R"(usage: mixprec-train-run DIR --data NAME=FILE.npy... [--labels FILE.npy]
            [--test-data NAME=FILE.npy... [--test-labels FILE.npy]] [--steps N | --epochs N]
            [--seed N] [--no-shuffle] [--log-every N] [--eval-every N] [--csv FILE]
            [--checkpoint FILE [--checkpoint-every N]] [--resume FILE] [--state-dir DIR]
            [--max-skipped-in-a-row N] [--backend cpu|cuda|auto] [--seeds N]
            [--reinit] [--metrics FILE.json] [--fp32-samples-per-s X]
            [--ranks N] [--collective-timeout S]

Trains with the step DIR holds, as `mixprec train MODEL ... --save-modules DIR`
compiled it (its loss, optimizer, precision, loss scaling and batch), on the
runtime alone. The options are mixprec train's: --data gives each graph input
its samples (dim 0), --labels the classes (cross-entropy) or targets (mse);
batches are drawn in an order shuffled per epoch from --seed; a progress line
every --log-every steps, one CSV row per step, evaluation on --test-data at
the end (and every --eval-every steps), checkpoints mixprec train can resume
(and the other way round), every state as NAME.npy in --state-dir. --seeds N
trains N times (data order from --seed .. --seed+N-1) and gives each metric's
mean and sd; the five training metrics are printed at the end and --metrics
writes them as JSON (memory and MFU need the compiler's facts: mixprec train
reports them); `mixprec report-run CSV --metrics FILE.json -o run.html` draws
the run. Data parallelism: `mpirun -np N mixprec-train-run DIR ...` (or
--ranks N, which starts mpirun itself) trains on N processes, each on its
slice of every global batch of N x the step's batch; the step must have been
saved with `mixprec train --save-modules DIR --data-parallel` (or
--shard-optimizer --world N: then the job must have N ranks); rank 0 prints
and writes; a rank waits at most --collective-timeout seconds (300) for the
others.
Exit status: 0, 1 errors, 2 usage errors, 5 when the loss scale cannot recover.
)";

int usage(const std::string &message) {
  std::fprintf(stderr, "mixprec-train-run: error: %s\n%s",
               common::escapeControls(message).c_str(),
               "(mixprec-train-run --help lists the options)\n");
  return trainer::kTrainUsage;
}

/// What the command line asks for.
struct CommandLine {
  std::string folder;
  std::vector<trainer::TrainArray> data, testData;
  std::optional<trainer::TrainArray> labels, testLabels;
  trainer::LoopOptions options;
  int64_t ranks = 0;
  double collectiveTimeout = 300;
};

/// Sets option `name` (an option that takes a value) to `value`; 0, or the
/// usage error's status.
int setOption(const std::string &name, const std::string &value, CommandLine &cl) {
  // Every count option is >= 1.
  auto count = [&](int64_t &out) { return trainer::parseInt64(value, out) && out >= 1; };
  auto named = [&](std::vector<trainer::TrainArray> &to) {
    size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == value.size())
      return false;
    to.push_back({value.substr(0, eq), value.substr(eq + 1), std::nullopt});
    return true;
  };
  bool ok = true;
  if (name == "--data")
    ok = named(cl.data);
  else if (name == "--test-data")
    ok = named(cl.testData);
  else if (name == "--labels")
    cl.labels = trainer::TrainArray{"", value, std::nullopt};
  else if (name == "--test-labels")
    cl.testLabels = trainer::TrainArray{"", value, std::nullopt};
  else if (name == "--steps")
    ok = count(cl.options.steps);
  else if (name == "--epochs")
    ok = count(cl.options.epochs);
  else if (name == "--log-every")
    ok = count(cl.options.logEvery);
  else if (name == "--eval-every")
    ok = count(cl.options.evalEvery);
  else if (name == "--checkpoint-every")
    ok = count(cl.options.checkpointEvery);
  else if (name == "--max-skipped-in-a-row")
    ok = count(cl.options.maxSkippedInARow);
  else if (name == "--seed")
    ok = trainer::parseUint64(value, cl.options.seed);
  else if (name == "--seeds")
    ok = count(cl.options.seeds);
  else if (name == "--ranks")
    ok = count(cl.ranks);
  else if (name == "--collective-timeout") {
    char *end = nullptr;
    cl.collectiveTimeout = std::strtod(value.c_str(), &end);
    ok = !value.empty() && *end == 0 && cl.collectiveTimeout > 0 && cl.collectiveTimeout <= 86400;
  } else if (name == "--metrics")
    cl.options.metrics = value, ok = !value.empty();
  else if (name == "--fp32-samples-per-s") {
    char *end = nullptr;
    cl.options.fp32SamplesPerSecond = std::strtod(value.c_str(), &end);
    ok = !value.empty() && *end == 0;
  } else if (name == "--csv")
    cl.options.csv = value;
  else if (name == "--checkpoint")
    cl.options.checkpoint = value;
  else if (name == "--resume")
    cl.options.resume = value;
  else if (name == "--state-dir")
    cl.options.stateDir = value;
  else if (name == "--backend") {
    if (value == "cpu")
      cl.options.backend = MIXPREC_BACKEND_CPU;
    else if (value == "cuda")
      cl.options.backend = MIXPREC_BACKEND_CUDA;
    else if (value == "auto")
      cl.options.backend = MIXPREC_BACKEND_AUTO;
    else
      ok = false;
  } else
    return usage("unknown option '" + name + "'");
  if (!ok || value.empty())
    return usage(name + ": invalid value '" + value + "'");
  return 0;
}

/// Reads the command line into `cl`; 0, or the usage error's status (0
/// with `help` set after printing --help).
int parseArguments(int argc, char **argv, CommandLine &cl, bool &help) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      help = true;
      return 0;
    }
    // --name=value or --name value.
    std::string name = arg, value;
    bool inlineValue = false;
    if (arg.rfind("--", 0) == 0) {
      if (size_t eq = arg.find('='); eq != std::string::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        inlineValue = true;
      }
    } else {
      if (!cl.folder.empty())
        return usage("one folder only: got '" + cl.folder + "' and '" + arg + "'");
      cl.folder = arg;
      continue;
    }
    if (name == "--no-shuffle" || name == "--reinit") {
      if (inlineValue)
        return usage(name + " takes no value");
      (name == "--reinit" ? cl.options.reinit : cl.options.shuffle) = name == "--reinit";
      continue;
    }
    if (!inlineValue) {
      if (i + 1 >= argc)
        return usage(name + " needs a value");
      value = argv[++i];
    }
    if (int status = setOption(name, value, cl))
      return status;
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  CommandLine cl;
  bool help = false;
  if (int status = parseArguments(argc, argv, cl, help); status || help)
    return status;
  const std::string &folder = cl.folder;
  const std::vector<trainer::TrainArray> &data = cl.data, &testData = cl.testData;
  const std::optional<trainer::TrainArray> &labels = cl.labels, &testLabels = cl.testLabels;
  const trainer::LoopOptions &options = cl.options;
  if (folder.empty())
    return usage("no folder: give the DIR that mixprec train --save-modules wrote");
  if (data.empty())
    return usage("no training data: give --data NAME=FILE.npy for each graph input");

  // Data parallelism: a rank of the job mpirun started (or --ranks starts).
  trainer::JobStart job = trainer::startJob(cl.ranks, std::vector<std::string>(argv, argv + argc),
                                            cl.collectiveTimeout);
  if (job.spawnedExit >= 0)
    return job.spawnedExit;
  if (job.usage)
    return usage(job.error);
  if (!job.error.empty()) {
    std::fprintf(stderr, "mixprec-train-run: error: %s\n",
                 common::escapeControls(job.error).c_str());
    return trainer::kTrainError;
  }
  std::unique_ptr<trainer::Collective> collective = std::move(job.collective);

  trainer::LoopInputs in;
  in.collective = collective.get();
  in.collectiveTimeout = cl.collectiveTimeout;
  in.options = options;
  in.program = "mixprec-train-run";
  in.origin = "modules from " + folder;
  std::string error;
  if (!trainer::loadSavedModules(folder, in.facts, in.primary, error)) {
    std::fprintf(stderr, "mixprec-train-run: error: %s\n",
                 common::escapeControls(error).c_str());
    return trainer::kTrainError;
  }
  const trainer::StepFacts &facts = in.facts;
  const bool modelLoss = facts.loss == trainer::LossKind::Model;
  if (!modelLoss && !labels)
    return usage(std::string("the step's loss (") + trainer::lossName(facts.loss) +
                 ") needs --labels FILE.npy");
  if (modelLoss && (labels || testLabels))
    return usage("the step's loss is the model's output: it takes no --labels");
  if (!testData.empty() && !modelLoss && !testLabels)
    return usage("--test-data needs --test-labels");
  if (testData.empty() && testLabels)
    return usage("--test-labels needs --test-data");
  if (!testData.empty() && !in.primary.eval)
    return usage(folder + " has no evaluation module: save it with --test-data to evaluate");
  if (std::string why = trainer::checkLoopOptions(options, !testData.empty()); !why.empty())
    return usage(why);
  in.inputs.emplace_back(folder + "/" + trainer::kSavedStepFile, "the step module");
  in.inputs.emplace_back(folder + "/" + trainer::kSavedFactsFile, "the step's facts");
  if (in.primary.eval)
    in.inputs.emplace_back(folder + "/" + trainer::kSavedEvalFile, "the evaluation module");
  std::string labelsName = trainer::labelsNameFor(facts.loss);
  if (!trainer::readColumns(data, labels, labelsName, "--data", in.train, in.inputs, error) ||
      (!testData.empty() && !trainer::readColumns(testData, testLabels, labelsName,
                                                  "--test-data", in.test, in.inputs, error))) {
    std::fprintf(stderr, "mixprec-train-run: error: %s\n",
                 common::escapeControls(error).c_str());
    return trainer::kTrainError;
  }

  trainer::TrainEvents events;
  const int rank = collective ? collective->rank() : 0;
  events.print = [rank](const std::string &line) {
    if (rank != 0)
      return; // rank 0 speaks for the job
    if (line.rfind("warning: ", 0) == 0)
      std::fprintf(stderr, "mixprec-train-run: %s\n", common::escapeControls(line).c_str());
    else
      std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  trainer::TrainOutcome outcome = trainer::runLoop(in, events);
  if (outcome.status == trainer::kTrainUsage)
    return usage(outcome.error);
  if (outcome.status != 0) {
    std::fprintf(stderr, "mixprec-train-run: error: %s\n", outcome.error.c_str());
    for (const std::string &note : outcome.notes)
      std::fprintf(stderr, "mixprec-train-run: note: %s\n",
                   common::escapeControls(note).c_str());
    std::fflush(nullptr);
    // The other ranks would wait for this one: end the job.
    trainer::endJobAfterFailure(collective.get(), outcome);
  }
  return outcome.status;
}
