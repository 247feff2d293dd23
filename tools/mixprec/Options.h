//===- Options.h - mixprec's subcommands and their options ------*- C++ -*-===//
//
// One llvm::cl::SubCommand per command; every option is declared once and
// registered in the subcommands that take it (the precision options are
// passes::PrecisionPipelineOptions' own, registered in compile, report and
// validate, and run's --precision). `mixprec COMMAND --help` lists them.
//
// llvm::cl reports bad values on stderr in its own words; mixprec keeps its
// one error line per failure: the value parsers report through
// passes::ScopedOptionErrorHandler, unknown options land in a sink, and
// parseCommandLine prints the first problem as
// "mixprec: error: COMMAND: --OPTION ..." (exit status 2, then the usage).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_TOOLS_MIXPREC_OPTIONS_H
#define MIXPREC_TOOLS_MIXPREC_OPTIONS_H

#include "passes/Pipelines.h"
#include "passes/Training/TrainingStep.h"
#include "train/TrainLoop.h"

#include "llvm/Support/CommandLine.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mixprec::tools {

/// The commands of mixprec.
enum class Command { Import, Compile, Run, Report, Validate, Train, ReportRun };

/// The command named `name`, if there is one.
std::optional<Command> findCommand(llvm::StringRef name);

/// The text `mixprec --help` prints, and usage errors after their line:
/// every command's synopsis and description, how errors look, the rules
/// for files.
std::string usageText();

/// Prints the options of `command` (argv[1]) if its arguments ask for them
/// (--help, --help-hidden); returns whether they did.
bool printHelpIfAsked(Command command, int argc, char **argv);

/// Parses the command line of `command` (argv[1]). Returns 0, or the exit
/// status after printing the error (2: a usage error, with the usage text).
int parseCommandLine(Command command, int argc, char **argv);

/// What `compile --emit` writes.
enum class Emit { Default, MpMlir, MpMlirbc, MpkMlir, Mpk, Cuda, Ptx };

/// Where `run --backend` runs the model.
enum class Backend { Default, Interpreter, Cpu, Cuda, Auto };

/// NAME=FILE pairs of --input and --calibrate.
using NamedFiles = std::vector<std::pair<std::string, std::string>>;

/// The parsed command line (valid after parseCommandLine returned 0).
namespace opts {
/// The model file (every command but report-run takes exactly one).
const std::string &model();
/// report-run's training CSVs (one or more).
std::vector<std::string> files();
/// report-run's --metrics FILE.json; "" when not given.
const std::string &reportRunMetrics();
/// The precision options, and whether --precision was given.
passes::PrecisionPipelineOptions &precision();
bool precisionGiven();
/// Why --precision's value is not a precision, or "": an error about the
/// graph when it is compiled, as the precision pipeline always reported it.
const std::string &unknownPrecision();
/// -o (import, compile); "" when not given.
const std::string &output();
Emit emit();
/// --elide-weights (import, compile): print IR for reading, large constants elided.
bool elideWeights();
/// compile's --arch ("sm_90"), "" when not given.
const std::string &arch();
/// compile's hidden --cuda-test-break-kernel: the kernel NVRTC is made to
/// reject (tests of that error), or -1.
int cudaTestBreakKernel();
/// report --graph: the plan as a dataflow table (value, op, operands, ...).
bool graph();
/// --json (report, validate); "" when not given.
const std::string &json();
/// --shape NAME=DIMS by name (every command; a name given twice is a usage error).
std::map<std::string, std::vector<int64_t>> shapes();
/// --input (run, validate) and --calibrate (compile, report, validate).
NamedFiles inputs();
NamedFiles calibration();
uint64_t seed();
/// --tolerance (validate), or a negative number when not given.
double tolerance();
/// run's --output-dir, --repeat, --time, --backend.
const std::string &outputDir();
int repeat();
/// run's --threads: the CPU session's num_threads (0: its default).
int threads();
bool time();
Backend backend();
/// The name of a backend, as --backend takes it ("" for Default).
llvm::StringRef backendName(Backend backend);

/// What `mixprec train` was asked to do.
struct TrainSettings {
  /// The step: loss, optimizer, loss scaling, clipping, frozen globs.
  passes::TrainingOptions step;
  /// --data / --test-data NAME=FILE.npy, --labels / --test-labels FILE.npy.
  NamedFiles data, testData;
  std::string labels, testLabels;
  int64_t batch = 32;
  /// The loop's options as the flags give them (--steps, --epochs, logs,
  /// evaluation, CSV, checkpoints, ensembles, metrics, report); the
  /// backend and the seed come from the common flags (runTrain).
  trainer::LoopOptions loop;
  /// --compare: the precision of the run beside this one ("" for none).
  std::string compare;
  std::string saveModules;
  /// --ranks N: run as a job of N processes under mpirun (0: as launched).
  int64_t ranks = 0;
  /// --world N: the ranks a step with sharded optimizer state is compiled
  /// for when this process is not a rank of a job (--save-modules).
  int64_t world = 0;
  /// --collective-timeout: seconds a collective waits for the other ranks.
  double collectiveTimeout = 300;
};
const TrainSettings &train();
} // namespace opts

} // namespace mixprec::tools

#endif // MIXPREC_TOOLS_MIXPREC_OPTIONS_H
