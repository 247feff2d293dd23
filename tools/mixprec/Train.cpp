//===- Train.cpp - mixprec train -------------------------------------------===//
//
// `mixprec train MODEL --data NAME=FILE.npy ... --labels FILE.npy`: the
// command line becomes a compiler::TrainConfig and compiler::train
// (compiler/Train/Trainer.h) runs it; its lines go to stdout, its error and
// notes to stderr as every command's do.
//
// Exit status: 0, 1 errors, 2 usage errors, 5 when the loss scale cannot
// recover (the diagnosis names the first op whose value was not finite).
//
//===----------------------------------------------------------------------===//
#include "compiler/Train/Trainer.h"
#include "common/Escape.h"
#include "tools/mixprec/CliCommon.h"
#include "tools/mixprec/Commands.h"
#include "tools/mixprec/Options.h"

#include "llvm/Support/raw_ostream.h"

namespace mixprec::tools {

int runTrain() {
  const opts::TrainSettings &t = opts::train();
  if (opts::backend() == Backend::Interpreter)
    return usageError("train: --backend takes cpu, cuda or auto");
  if (!opts::unknownPrecision().empty())
    return usageError("train: --precision " + opts::unknownPrecision());

  compiler::TrainConfig config;
  config.model = opts::model();
  config.shapes = opts::shapes();
  for (const auto &[name, path] : t.data)
    config.data.push_back({name, path, std::nullopt});
  for (const auto &[name, path] : t.testData)
    config.testData.push_back({name, path, std::nullopt});
  if (!t.labels.empty())
    config.labels = compiler::TrainArray{"", t.labels, std::nullopt};
  if (!t.testLabels.empty())
    config.testLabels = compiler::TrainArray{"", t.testLabels, std::nullopt};
  config.step = t.step;
  config.precision = &opts::precision();
  config.loop.backend = opts::backend() == Backend::Cpu    ? MIXPREC_BACKEND_CPU
                   : opts::backend() == Backend::Cuda ? MIXPREC_BACKEND_CUDA
                                                      : MIXPREC_BACKEND_AUTO;
  config.batch = t.batch;
  config.loop.steps = t.steps;
  config.loop.epochs = t.epochs;
  config.loop.seed = opts::seed();
  config.loop.shuffle = t.shuffle;
  config.loop.logEvery = t.logEvery;
  config.loop.evalEvery = t.evalEvery;
  config.loop.checkpointEvery = t.checkpointEvery;
  config.loop.maxSkippedInARow = t.maxSkippedInARow;
  config.loop.csv = t.csv;
  config.loop.checkpoint = t.checkpoint;
  config.loop.resume = t.resume;
  config.loop.stateDir = t.stateDir;
  config.compare = t.compare;
  config.loop.seeds = t.seeds;
  config.loop.reinit = t.reinit;
  config.loop.compareEvery = t.compareEvery;
  config.loop.metrics = t.metrics;
  config.loop.report = t.report;
  config.loop.fp32SamplesPerSecond = t.fp32SamplesPerSecond;
  config.saveModules = t.saveModules;
  config.arch = opts::arch();

  compiler::TrainEvents events;
  events.print = [](const std::string &line) {
    if (llvm::StringRef(line).starts_with("warning: "))
      llvm::errs() << "mixprec: " << common::escapeControls(line) << "\n";
    else
      llvm::outs() << line << "\n";
  };
  llvm::outs().SetUnbuffered();
  compiler::TrainOutcome outcome = compiler::train(config, events);
  if (outcome.status == compiler::kTrainUsage)
    return usageError(outcome.error);
  if (outcome.status != 0) {
    fail(outcome.error);
    for (const std::string &note : outcome.notes)
      llvm::errs() << "mixprec: note: " << common::escapeControls(note) << "\n";
  }
  return outcome.status;
}

} // namespace mixprec::tools
