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

/// --ranks N outside a launcher: this command again, as N ranks.
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

  // Data parallelism: a rank of the job mpirun started (or --ranks starts).
  trainer::JobStart job = trainer::startJob(t.ranks, commandLine(), t.collectiveTimeout);
  if (job.spawnedExit >= 0)
    return job.spawnedExit;
  if (job.usage)
    return usageError("train: " + job.error);
  if (!job.error.empty())
    return fail("train: " + job.error);
  std::unique_ptr<trainer::Collective> collective = std::move(job.collective);
  config.collectiveTimeout = t.collectiveTimeout;
  if (collective) {
    config.collective = collective.get();
    config.step.dataParallel = true;
  }
  // Sharded optimizer state: compiled for the job's ranks (or --world's).
  const int64_t jobWorld = collective ? collective->worldSize() : 1;
  if (t.world > 0 && !config.step.shardOptimizer)
    return usageError("train: --world is the ranks --shard-optimizer compiles for; give both");
  if (t.world > 0 && collective && t.world != jobWorld)
    return usageError("train: --world " + std::to_string(t.world) +
                      ", but this is a rank of a job of " + std::to_string(jobWorld) +
                      ": give one or the other");
  if (config.step.shardOptimizer) {
    config.step.dataParallel = true;
    config.step.world = t.world > 0 ? t.world : jobWorld;
  }
  const int rank = collective ? collective->rank() : 0;

  compiler::TrainEvents events;
  events.print = [rank](const std::string &line) {
    if (rank != 0)
      return; // rank 0 speaks for the job
    if (llvm::StringRef(line).starts_with("warning: "))
      llvm::errs() << "mixprec: " << common::escapeControls(line) << "\n";
    else
      llvm::outs() << line << "\n";
  };
  llvm::outs().SetUnbuffered();
  compiler::TrainOutcome outcome = compiler::train(config, events);
  if (outcome.status == 0)
    return 0;
  int rc = outcome.status;
  if (outcome.status == compiler::kTrainUsage) {
    rc = usageError(outcome.error);
  } else {
    fail(outcome.error);
    for (const std::string &note : outcome.notes)
      llvm::errs() << "mixprec: note: " << common::escapeControls(note) << "\n";
  }
  llvm::errs().flush();
  llvm::outs().flush();
  // The other ranks would wait for this one: end the job.
  trainer::endJobAfterFailure(collective.get(), outcome);
  return rc;
}

} // namespace mixprec::tools
