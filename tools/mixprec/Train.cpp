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
  config.batch = t.batch;
  config.loop = t.loop;
  config.loop.backend = opts::backend() == Backend::Cpu    ? MIXPREC_BACKEND_CPU
                        : opts::backend() == Backend::Cuda ? MIXPREC_BACKEND_CUDA
                                                           : MIXPREC_BACKEND_AUTO;
  config.loop.seed = opts::seed();
  config.compare = t.compare;
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
