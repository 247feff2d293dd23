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
the run.
Exit status: 0, 1 errors, 2 usage errors, 5 when the loss scale cannot recover.
)";

int usage(const std::string &message) {
  std::fprintf(stderr, "mixprec-train-run: error: %s\n%s",
               common::escapeControls(message).c_str(),
               "(mixprec-train-run --help lists the options)\n");
  return trainer::kTrainUsage;
}

} // namespace

int main(int argc, char **argv) {
  std::string folder;
  std::vector<trainer::TrainArray> data, testData;
  std::optional<trainer::TrainArray> labels, testLabels;
  trainer::LoopOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
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
      if (!folder.empty())
        return usage("one folder only: got '" + folder + "' and '" + arg + "'");
      folder = arg;
      continue;
    }
    if (name == "--no-shuffle" || name == "--reinit") {
      if (inlineValue)
        return usage(name + " takes no value");
      (name == "--reinit" ? options.reinit : options.shuffle) = name == "--reinit";
      continue;
    }
    if (!inlineValue) {
      if (i + 1 >= argc)
        return usage(name + " needs a value");
      value = argv[++i];
    }
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
      ok = named(data);
    else if (name == "--test-data")
      ok = named(testData);
    else if (name == "--labels")
      labels = trainer::TrainArray{"", value, std::nullopt};
    else if (name == "--test-labels")
      testLabels = trainer::TrainArray{"", value, std::nullopt};
    else if (name == "--steps")
      ok = count(options.steps);
    else if (name == "--epochs")
      ok = count(options.epochs);
    else if (name == "--log-every")
      ok = count(options.logEvery);
    else if (name == "--eval-every")
      ok = count(options.evalEvery);
    else if (name == "--checkpoint-every")
      ok = count(options.checkpointEvery);
    else if (name == "--max-skipped-in-a-row")
      ok = count(options.maxSkippedInARow);
    else if (name == "--seed")
      ok = trainer::parseUint64(value, options.seed);
    else if (name == "--seeds")
      ok = count(options.seeds);
    else if (name == "--metrics")
      options.metrics = value, ok = !value.empty();
    else if (name == "--fp32-samples-per-s") {
      char *end = nullptr;
      options.fp32SamplesPerSecond = std::strtod(value.c_str(), &end);
      ok = !value.empty() && *end == 0;
    } else if (name == "--csv")
      options.csv = value;
    else if (name == "--checkpoint")
      options.checkpoint = value;
    else if (name == "--resume")
      options.resume = value;
    else if (name == "--state-dir")
      options.stateDir = value;
    else if (name == "--backend") {
      if (value == "cpu")
        options.backend = MIXPREC_BACKEND_CPU;
      else if (value == "cuda")
        options.backend = MIXPREC_BACKEND_CUDA;
      else if (value == "auto")
        options.backend = MIXPREC_BACKEND_AUTO;
      else
        ok = false;
    } else
      return usage("unknown option '" + name + "'");
    if (!ok || value.empty())
      return usage(name + ": invalid value '" + value + "'");
  }
  if (folder.empty())
    return usage("no folder: give the DIR that mixprec train --save-modules wrote");
  if (data.empty())
    return usage("no training data: give --data NAME=FILE.npy for each graph input");

  trainer::LoopInputs in;
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
  events.print = [](const std::string &line) {
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
  }
  return outcome.status;
}
