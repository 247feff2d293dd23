//===- Options.cpp - mixprec's subcommands and their options ---------------===//
#include "tools/mixprec/Options.h"

#include "tools/mixprec/CliCommon.h"

#include "compiler/Train/Trainer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/GlobPattern.h"

#include <cmath>


namespace cl = llvm::cl;
using mixprec::passes::EnumParser;
using mixprec::passes::IntegerInRangeParser;
using mixprec::passes::NumberParser;
using mixprec::passes::reportOptionError;

namespace mixprec::tools {
namespace {

//===----------------------------------------------------------------------===//
// Commands
//===----------------------------------------------------------------------===//

/// A command: its name, the synopsis and description the usage text and
/// its --help show.
struct CommandInfo {
  Command command;
  const char *name, *synopsis, *description;
};

/// Every command, in the order the usage text lists them.
const CommandInfo kCommands[] = {
    {Command::Import, "import",
     R"(mixprec import MODEL.onnx [--shape NAME=DIMS]... [--elide-weights] [-o OUT.mlir|OUT.mlirbc])",
     R"(Import an ONNX model and print its mp graph IR (or write it to OUT:
MLIR bytecode for OUT.mlirbc). Values are named after the ONNX nodes and
initializers (%fc1, %fc1.weight), graph inputs are %argN with their
names as mp.name attributes. IR printed to a terminal, or with
--elide-weights, is for reading: constants over 16 elements are elided
(dense_resource<__elided__>) under a first-line comment, and commands
refuse such a file; a file to run again is written with -o.
--shape NAME=DIMS (every command that reads a model takes it) fixes the
shape of graph input NAME (x=2x128; x= for a scalar), --shape NAME=N the
size of the symbolic dimension (dim_param) NAME (batch=8): a model with
dynamic dims is specialised to these sizes; the model's fixed dims must
agree and one name must get one size. `run` takes the shapes of the
inputs it is given.)"},
    {Command::Run, "run",
     R"(mixprec run MODEL [--input NAME=FILE.npy]... [--output-dir DIR] [--seed N]
            [--repeat N] [--time] [--threads N] [--backend interpreter|cpu|cuda|auto]
            [--precision P] [--shape NAME=DIMS]...)",
     R"(Run MODEL and write NAME.npy per graph output NAME into DIR (default:
.); every byte of NAME outside [A-Za-z0-9_.-], and a leading '.', is
written as %XX, so distinct names give distinct files ("a/b" ->
a%2Fb.npy, "a_b" -> a_b.npy). --backend interpreter runs the graph on
the CPU reference interpreter (the default for .mlir), as imported or,
with --precision, at that plan; cpu, cuda or auto (the default for
.onnx: CUDA when a GPU is found, else CPU) compile it just in time (at
--precision, default fp32; dynamic dims take the shapes of the inputs)
to a module and run it on the runtime; the module is kept in modules/
of the cache folder ($MIXPREC_CACHE_DIR, else $XDG_CACHE_HOME/mixprec,
else ~/.cache/mixprec), keyed by the model's bytes, the options and the
shapes, so the same run again compiles nothing (--time: "jit_cache":
"hit"). An .mpk module always runs on the runtime, with the plan it
was compiled with; --precision is an error for it, and for an .mlir
that already carries a plan. Without --input, every input is random
(normal floats; integers: indices valid for their gather on the
interpreter, 0/1 on the runtime; bools 0/1) from the seed (an integer
in [0, 2^64-1], default 0). Inputs take the array dtypes of their
kind: float16/32/64 for floats, int8/uint8/int32/int64 for integers
(exact), bool (or uint8) for bools. --repeat runs N times; --time
prints load and run times (JSON) to stderr. --threads sets the CPU
backend's threads (results are the same bits for any count).)"},
    {Command::Compile, "compile",
     R"(mixprec compile MODEL [--precision fp32|tf32|bf16|fp16|fp8] [--calibrate NAME=FILE.npy]...
                [--policy FILE.json] [--keep-fp32 TYPE|GLOB[,...]]... [--force GLOB:DTYPE]...
                [--no-keep-io-types] [--fp16-margin F] [--underflow-threshold F]
                [--overflow-fallback bf16|fp32] [--fp8-scaling auto|current|static|block|mxfp8]
                [--fp8-margin N] [--emit mp-mlir|mp-mlirbc|mpk-mlir|mpk|cuda|ptx]
                [--elide-weights] [--arch sm_XX] [--shape NAME=DIMS]... [-o OUT])",
     R"(Assign a precision to every op (with a reason), insert and fold casts.
--emit mp-mlir (the default, unless OUT ends in .mpk or .mlirbc) writes
the annotated mp IR, which `mixprec run OUT.mlir` executes with its
dtypes; printed to a terminal, or with --elide-weights (mp-mlir and
mpk-mlir), it is for reading: constants over 16 elements are elided and
the file does not run. mp-mlirbc (implied by -o OUT.mlirbc) writes the
same IR as MLIR bytecode, weights as raw bytes: smaller and faster to
read; every command reads it, and mixprec-opt. mpk-mlir writes the
fused, planned kernel IR; mpk (implied by
-o OUT.mpk) writes the module an application loads with the runtime,
large weights in OUT.mpk.weights, and prints its statistics (JSON) to
stderr. --arch sm_XX (sm_80 and newer that this NVRTC knows) also puts
the kernels' CUDA code into the module: one CUDA C++ program, compiled by
NVRTC to PTX and a CUBIN for sm_XX, cached on disk in $MIXPREC_CACHE_DIR
(else $XDG_CACHE_HOME/mixprec, else ~/.cache/mixprec) so that compiling
the same model again runs NVRTC zero times; the statistics then add
"cuda_kernels", "nvrtc_compiles" and "cache_hits". A damaged cache entry
is rebuilt with a warning. --emit cuda writes that CUDA C++ (--arch,
if given, is checked; the source is the same for every architecture);
--emit ptx its PTX, for --arch (default: sm_90). --arch with mp-mlir or
mpk-mlir is an error. --calibrate runs the FP32 graph on the given
inputs first and moves ops whose values would overflow or underflow
FP16.)"},
    {Command::Report, "report", R"(mixprec report MODEL [compile options] [--graph] [--json FILE])",
     R"(Print the precision plan: a header line, a table with one row per op
in program order (constants left out; casts are rows of class "cast",
FP8 amax/fp8_scale/quantize/dequantize rows of class "scaling")
  node type class precision inputs output acc reason
(node: ONNX node name, else FILE:LINE:COL, else #INDEX; class: lowp,
fp32, follow, cast or scaling; inputs/output: element types; acc:
acc_type or -; reason: mp.reason or -), then "summary:" and the lines
  ops: N (CLASS N, ...; DTYPE N, ...)
  flops: N (DTYPE P%, ...)
  gemm flops: N (DTYPE P%, ...)
  weight bytes: N (fp32 N, P%)
  gemm weight bytes: N (fp32 N, P%)
  activation bytes: N (fp32 N, P%)
  casts: N [(plus N quantize, N dequantize)]
  bytes moved, op by op: N (fp32 N, P%)
FLOPs: 2*M*N*K per output batch element for GEMMs (conv: per output
element 2*C/groups*kH*kW), one per element otherwise, none for data
movement and casts. Bytes: every constant; GEMM weights (constant-
derived weight operands, at the dtype the GEMM reads them); every
non-constant op result; moved: each op's operands and results, before
fusion (reshapes none). "fp32" is the imported graph. --graph prints,
instead of the table, the annotated graph: "inputs: NAME = %NAME, ...",
"outputs: NAME = %VALUE, ..." and one line per op
  value = op operands in out acc reason
(values as the printed IR names them). --json FILE writes it all as
JSON, with each op's flops and bytes ("-": JSON on stdout instead of
the text).)"},
    {Command::Validate, "validate",
     R"(mixprec validate MODEL [compile options] [--input NAME=FILE.npy]... [--seed N]
                 [--tolerance X] [--json FILE])",
     R"(Run the FP32 reference (the imported graph) and the mixed plan on the
same inputs (random from --seed without --input). Prints a header
line, "outputs:" and a table with one row per graph output
  name dtype max_abs max_rel cosine nonfinite
"ops: N compared, N without an FP32 counterpart" and a table with one
row per op in program order, matched by node and op type (an FP8
scaled_matmul/scaled_linear stands for its matmul/linear; casts,
constants and FP8 scaling ops are not compared)
  node type dtype max_abs max_rel cosine nonfinite
then "first non-finite op: NODE (TYPE, DTYPE): N of M values" or
"first non-finite op: none", and the line: status: WHAT (exit N), N
being the exit status. max_rel = max|a-b| / max|b| (b: FP32); cosine
over the values finite in both; nonfinite counts the mixed run; an op
went non-finite when it holds more non-finite values than in the FP32
run (constants included, so an FP16 weight above 65504 is named).
Exit status: 0 all outputs finite and within bounds, 3 some output
holds inf/NaN (or its FP32 reference does where it does not: max_rel
inf), 4 an output is out of bounds: max_rel above --tolerance X, or
without it the README's bounds of the plan's precision (the loosest
any op runs in: fp32 1e-5; tf32, fp16 5e-3 and cosine >= 0.999998;
bf16 3e-2 and 0.9999; fp8 0.35 and 0.99); 1 errors. On failure it
lists the ops that lost the most ("worst ops:") and, for FP16, a hint
to --calibrate when values overflowed or flushed to zero. --json FILE
writes the same as JSON (metrics that are not finite as null).)"},
    {Command::Train, "train",
     R"(mixprec train MODEL --data NAME=FILE.npy... [--labels FILE.npy] [--loss ce|mse|model]
            [--optimizer sgd|adamw] [--lr X] [--precision P] [--loss-scale none|static|dynamic]
            [--batch N [--accumulate K]] [--steps N | --epochs N] [--log-every N] [--csv FILE]
            [--checkpoint FILE [--checkpoint-every N]] [--resume FILE] [--seed N]
            [--test-data NAME=FILE.npy... --test-labels FILE.npy] [--compare fp32
            [--compare-every N]] [--seeds N [--reinit]] [--metrics FILE.json]
            [--report FILE.html]
            [--backend cpu|cuda|auto] [--state-dir DIR] [--save-modules DIR [--arch sm_XX]]
            [more: train --help])",
     R"(Train MODEL's float initializers (FP32 master weights; --frozen GLOB
keeps some fixed) on the rows of the --data arrays (dim 0: one sample
each; every graph input gets one) against --labels (integer classes for
cross-entropy over the logits, targets of the output's shape for mse;
none for --loss model, whose output is the loss). The step (forward,
loss, scaled gradients, unscale + inf/NaN check, clipping, optimizer,
loss-scale update) is built, compiled at --precision and run on the
runtime (--backend, default auto); an overflowing step is skipped and
changes nothing but the loss scale. Batches of --batch rows (the last
partial batch of an epoch is dropped; --accumulate K: K micro-batches
per step, gradients summed under one loss scale, one update with their
mean) in an order shuffled per epoch
from --seed (--no-shuffle: file order). Every --log-every steps a line:
step, epoch, mean loss, loss scale, skipped steps, grad norm, samples/s;
--csv FILE gets one row per step. With --test-data the model, as
trained, is evaluated at the end (and every --eval-every steps): test
loss and, for cross-entropy, accuracy. --checkpoint FILE is written
atomically at the end (and every --checkpoint-every steps): master
weights, optimizer and loss-scale state, step and data order; --resume
FILE continues such a run bit for bit. --compare fp32 trains an FP32
copy beside it on the same batches and reports the loss gap;
--compare-every N also compares every parameter's gradient with FP32's
on the same batch and master weights. --seeds N trains N times (data
order from --seed .. --seed+N-1) and judges the lower precision by
Welch's 95% interval of the difference of means, never by one run. The
five metrics (throughput and speedup, memory against the FP32 plan,
difference to FP32, applied steps, MFU) are printed at the end;
--metrics FILE.json writes them, --report FILE.html draws the run.
--state-dir DIR writes every state (NAME.npy) at the end. Exit status
5 when the loss scale cannot recover (--max-skipped-in-a-row skipped
steps): the diagnosis names the first op whose value overflowed.
--save-modules DIR compiles the step (and, with --test-data, the
evaluation) for --arch and writes them with the facts the loop needs
(DIR/step.mpk, eval.mpk, trainer.txt) instead of training: then
`mixprec-train-run DIR --data ... --labels ...` trains on a machine with
the runtime alone (the same steps bit for bit; each resumes the other's
checkpoints).
Data parallelism: `mpirun -np N mixprec train ...` (or --ranks N, which
starts mpirun itself) trains one model on N processes: each rank takes
its --batch rows of every global batch (N x --batch, one shuffled order
from --seed), the scaled gradients are averaged across the ranks in
buckets (--bucket-mb, in --allreduce-dtype) before unscaling, the
overflow check and clipping, so every rank takes the same skip-or-step
decision and keeps the same state (compared by hash at the end); rank 0
prints and writes the files. A rank that fails ends the job; a rank that
waits longer than --collective-timeout seconds fails. --shard-optimizer
(ZeRO stage 1) keeps each rank's 1/N slice of the optimizer state and
all-gathers the updated master weights: the same bits as unsharded, and
checkpoints that resume either way.)"},
    {Command::ReportRun, "report-run",
     R"(mixprec report-run CSV... [--metrics FILE.json] -o FILE.html)",
     R"(Draw a training run as one self-contained HTML page (inline SVG and
CSS; no script, no network, no other file): the training loss per step
(mean and min..max band over seeds, the FP32 run beside it dashed, test
loss at evaluation steps), the loss scale with the skipped steps, the
gradient norm, the per-layer gradient error against FP32, the memory
breakdown against FP32, the table of the five metrics and the op graph
coloured by dtype. Each CSV (what train --csv writes; columns found by
name) is one group of curves, labelled by its file name, or by the
metrics' precision when there is one CSV. --metrics FILE.json is what
train --metrics writes; the parts it leaves out are shown as not
measured. -o is required.)"},
};

/// The rules every command follows for the files it reads and writes.
const char *const kFilesText = R"(  Every output file (-o, --json, run's .npy files, a module and its
  .weights, train's --csv, --metrics, --report, checkpoints and
  --state-dir files) is written atomically: into a temporary file in the same
  folder, checked after it is closed, then renamed into place, so a failed
  write (missing folder, full disk) leaves the old file intact. An existing
  output that is a device or FIFO (/dev/null) is written in place. No
  command writes over a file it reads (the model and its .weights, --input,
  --calibrate and --policy files, train's --data and --labels, report-run's
  CSVs and --metrics), compared as files, so other spellings and
  links count: it stops with an error instead. Inputs must be regular files
  (a folder, device or FIFO is refused). Without -o, or with -o -, output
  goes to stdout; a failed write there is an error too.
)";

/// The first line of `mixprec COMMAND --help`.
const char *const kOverview =
    "mixprec: a mixed-precision graph compiler (`mixprec --help`: every command, the error "
    "format and the rules for files)";

/// How errors look, for the usage text.
const char *const kErrorsText = R"(An error is one line, "mixprec: error: ...", naming the file, node or
tensor at fault (control characters escaped). The notes MLIR attached to
it (where an operand was defined, a symbol first declared) follow, one
"mixprec: note: ..." line each. Exit status 1 (2 for usage
errors, followed by this text).
)";

const CommandInfo &infoOf(Command command) {
  return *llvm::find_if(kCommands, [&](const CommandInfo &c) { return c.command == command; });
}

cl::SubCommand importCommand("import", infoOf(Command::Import).description);
cl::SubCommand compileCommand("compile", infoOf(Command::Compile).description);
cl::SubCommand runCommand("run", infoOf(Command::Run).description);
cl::SubCommand reportCommand("report", infoOf(Command::Report).description);
cl::SubCommand validateCommand("validate", infoOf(Command::Validate).description);
cl::SubCommand trainCommand("train", infoOf(Command::Train).description);
cl::SubCommand reportRunCommand("report-run", infoOf(Command::ReportRun).description);

/// The subcommand of a command.
cl::SubCommand &subCommandOf(Command command) {
  switch (command) {
  case Command::Import:
    return importCommand;
  case Command::Compile:
    return compileCommand;
  case Command::Run:
    return runCommand;
  case Command::Report:
    return reportCommand;
  case Command::Validate:
    return validateCommand;
  case Command::Train:
    return trainCommand;
  case Command::ReportRun:
    return reportRunCommand;
  }
  llvm_unreachable("unknown command");
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

/// NAME=FILE.npy, kept as written (split by namedFiles).
struct NamedFileParser : cl::parser<std::string> {
  using parser::parser;
  bool parse(cl::Option &option, llvm::StringRef argName, llvm::StringRef arg,
             std::string &value) {
    size_t eq = arg.find('=');
    if (eq == llvm::StringRef::npos || eq == 0 || eq + 1 == arg.size())
      return reportOptionError(option, argName, "takes NAME=FILE.npy, got '" + arg + "'");
    value = arg.str();
    return false;
  }
};

/// NAME=DIMS: a graph input's shape ("2x128", "2,128") or a symbolic dim's
/// size ("8"); "NAME=" is a scalar.
struct ShapeParser : cl::parser<std::string> {
  using parser::parser;
  bool parse(cl::Option &option, llvm::StringRef argName, llvm::StringRef arg,
             std::string &value) {
    auto [name, dims] = arg.split('=');
    bool ok = arg.contains('=') && !name.empty();
    llvm::SmallVector<llvm::StringRef> parts;
    if (!dims.empty())
      dims.split(parts, dims.contains(',') ? ',' : 'x', -1, /*KeepEmpty=*/true);
    for (llvm::StringRef part : parts) {
      uint64_t size = 0;
      ok = ok && parseUnsigned(part, size) && size <= (uint64_t(1) << 62);
    }
    if (!ok)
      return reportOptionError(option, argName,
                               "takes NAME=DIMS (an input's shape, e.g. x=2x128) or "
                               "NAME=N (a symbolic dimension's size, e.g. batch=8), got '" +
                                   arg + "'");
    value = arg.str();
    return false;
  }
};

/// A folder name, which cannot be empty.
struct FolderParser : cl::parser<std::string> {
  using parser::parser;
  bool parse(cl::Option &option, llvm::StringRef argName, llvm::StringRef arg,
             std::string &value) {
    if (arg.empty())
      return reportOptionError(option, argName, "needs a folder name, got ''");
    value = arg.str();
    return false;
  }
};

/// A seed: a whole decimal number in [0, 2^64-1].
struct SeedParser : cl::parser<unsigned long long> {
  using parser::parser;
  bool parse(cl::Option &option, llvm::StringRef argName, llvm::StringRef arg,
             unsigned long long &value) {
    uint64_t parsed = 0;
    if (!parseUnsigned(arg, parsed))
      return reportOptionError(option, argName,
                               "takes an integer in [0, 2^64-1], got '" + arg + "'");
    value = parsed;
    return false;
  }
};

/// The numbers >= 0 (NaN is not one).
struct NonNegativeNumbers {
  static constexpr const char *kWhat = "a number >= 0";
  static bool contains(double x) { return x >= 0; }
};

//===----------------------------------------------------------------------===//
// Options, each declared once, in the subcommands that take it
//===----------------------------------------------------------------------===//

cl::list<std::string> modelArg(cl::Positional, cl::desc("<model>"), cl::sub(importCommand),
                               cl::sub(compileCommand), cl::sub(runCommand),
                               cl::sub(reportCommand), cl::sub(validateCommand),
                               cl::sub(trainCommand));

/// report-run's positional arguments: one or more training CSVs.
cl::list<std::string> csvArg(cl::Positional, cl::desc("<CSV>..."), cl::sub(reportRunCommand));

cl::opt<std::string> outputOpt("o", cl::desc("Write to this file instead of stdout ('-': stdout)"),
                               cl::value_desc("file"), cl::sub(importCommand),
                               cl::sub(compileCommand), cl::sub(reportRunCommand));

cl::opt<Emit, false, EnumParser<Emit>> emitOpt(
    "emit", cl::desc("What compile writes (default: mpk for -o FILE.mpk, else mp-mlir)"),
    cl::init(Emit::Default), cl::sub(compileCommand),
    cl::values(clEnumValN(Emit::MpMlir, "mp-mlir", "the annotated mp IR"),
               clEnumValN(Emit::MpMlirbc, "mp-mlirbc",
                          "the annotated mp IR as MLIR bytecode (weights as raw bytes)"),
               clEnumValN(Emit::MpkMlir, "mpk-mlir", "the fused, planned kernel IR"),
               clEnumValN(Emit::Mpk, "mpk", "the module an application loads (needs -o)"),
               clEnumValN(Emit::Cuda, "cuda", "the kernels' CUDA C++ (one NVRTC program)"),
               clEnumValN(Emit::Ptx, "ptx", "the kernels' PTX for --arch (default sm_90)")));

cl::opt<bool> elideWeightsOpt(
    "elide-weights",
    cl::desc("Print the IR for reading: constants over 16 elements elided (the default when "
             "it goes to a terminal); such a file does not run"),
    cl::ValueDisallowed, cl::sub(importCommand), cl::sub(compileCommand));

cl::opt<std::string> archOpt(
    "arch",
    cl::desc("Put the kernels' CUDA code, compiled by NVRTC for this GPU architecture "
             "(sm_80 or newer), into the module; the architecture of --emit ptx (train: of "
             "the modules it trains or saves; default: the device's)"),
    cl::value_desc("sm_XX"), cl::sub(compileCommand), cl::sub(trainCommand));

cl::opt<int, false, IntegerInRangeParser<0, 1 << 30>> cudaTestBreakKernelOpt(
    "cuda-test-break-kernel",
    cl::desc("Test only: put an error into kernel #N's CUDA code, so that NVRTC rejects it"),
    cl::init(-1), cl::value_desc("N"), cl::Hidden, cl::sub(compileCommand));

cl::list<std::string, bool, NamedFileParser> calibrateOpt(
    "calibrate",
    cl::desc("NAME=FILE.npy: run the FP32 graph on these inputs first and move ops whose "
             "values would overflow or underflow FP16 (one per graph input)"),
    cl::value_desc("NAME=FILE.npy"), cl::sub(compileCommand), cl::sub(reportCommand),
    cl::sub(validateCommand));

cl::opt<bool> noKeepIoTypesOpt(
    "no-keep-io-types", cl::desc("Graph inputs and outputs take the plan's dtypes"),
    cl::ValueDisallowed, cl::sub(compileCommand), cl::sub(reportCommand), cl::sub(validateCommand),
    cl::callback([](const bool &on) { opts::precision().keepIoTypes = !on; }));

cl::opt<std::string> jsonOpt("json",
                             cl::desc("Also write the result as JSON ('-': only JSON, on stdout)"),
                             cl::value_desc("file"), cl::sub(reportCommand),
                             cl::sub(validateCommand));

cl::opt<bool> graphOpt(
    "graph",
    cl::desc("Print the plan as the annotated graph: one line per op with its value name "
             "(as the IR prints it), operands, dtypes in and out, accumulator and reason"),
    cl::ValueDisallowed, cl::sub(reportCommand));

cl::list<std::string, bool, ShapeParser> shapeOpt(
    "shape",
    cl::desc("NAME=DIMS: the shape of graph input NAME (2x128), or NAME=N: the size of the "
             "symbolic dimension NAME (batch=8); the model's dynamic dims are specialised to them"),
    cl::value_desc("NAME=DIMS"), cl::sub(importCommand), cl::sub(compileCommand),
    cl::sub(runCommand), cl::sub(reportCommand), cl::sub(validateCommand),
    cl::sub(trainCommand));

cl::list<std::string, bool, NamedFileParser> inputOpt(
    "input", cl::desc("NAME=FILE.npy: a graph input (give every input, or none for random ones)"),
    cl::value_desc("NAME=FILE.npy"), cl::sub(runCommand), cl::sub(validateCommand));

cl::opt<unsigned long long, false, SeedParser> seedOpt(
    "seed", cl::desc("Seed of the random inputs (train: of the data order), in [0, 2^64-1]"),
    cl::init(0), cl::value_desc("N"), cl::sub(runCommand), cl::sub(validateCommand),
    cl::sub(trainCommand));

cl::opt<double, false, NumberParser<NonNegativeNumbers>> toleranceOpt(
    "tolerance", cl::desc("Exit 4 when an output's max_rel exceeds this"), cl::init(-1),
    cl::value_desc("X"),
    cl::sub(validateCommand));

cl::opt<std::string, false, FolderParser> outputDirOpt(
    "output-dir", cl::desc("Where NAME.npy is written per graph output"), cl::init("."),
    cl::value_desc("folder"), cl::sub(runCommand));

cl::opt<int, false, IntegerInRangeParser<1, 100000>> repeatOpt(
    "repeat", cl::desc("Run N times (with --time: median and minimum)"), cl::init(1),
    cl::value_desc("N"),
    cl::sub(runCommand));

cl::opt<int, false, IntegerInRangeParser<0, 1024>> threadsOpt(
    "threads",
    cl::desc("CPU backend: threads for its kernels, the same results for any count (0: "
             "MIXPREC_NUM_THREADS, else OMP_NUM_THREADS, else the CPUs; GEMMs follow it too)"),
    cl::init(0), cl::value_desc("N"), cl::sub(runCommand));

cl::opt<bool> timeOpt("time", cl::desc("Print load and run times (JSON) to stderr"),
                      cl::ValueDisallowed, cl::sub(runCommand));

cl::opt<Backend, false, EnumParser<Backend>> backendOpt(
    "backend", cl::desc("Where run (or train) runs the model"), cl::init(Backend::Default),
    cl::sub(runCommand), cl::sub(trainCommand),
    cl::values(clEnumValN(Backend::Interpreter, "interpreter",
                          "the CPU reference interpreter (default for .mlir)"),
               clEnumValN(Backend::Cpu, "cpu", "the runtime's CPU backend"),
               clEnumValN(Backend::Cuda, "cuda", "the runtime's CUDA backend"),
               clEnumValN(Backend::Auto, "auto",
                          "CUDA when a GPU is found, else CPU (default for .onnx)")));

//===----------------------------------------------------------------------===//
// train
//===----------------------------------------------------------------------===//

using TrainingOptions = passes::TrainingOptions;

/// Numbers of any finite value (train's ranges are checked together, by
/// passes::checkTrainingOptions, after parsing).
struct FiniteNumbers {
  static constexpr const char *kWhat = "a finite number";
  static bool contains(double x) { return std::isfinite(x); }
};
using FiniteParser = NumberParser<FiniteNumbers>;

/// A whole decimal number in [lo, 2^40].
template <int64_t Lo> struct CountParser : cl::parser<long long> {
  using parser::parser;
  bool parse(cl::Option &option, llvm::StringRef argName, llvm::StringRef arg,
             long long &value) {
    uint64_t parsed = 0;
    if (!parseUnsigned(arg, parsed) || parsed < uint64_t(Lo) || parsed > (uint64_t(1) << 40))
      return reportOptionError(option, argName,
                               "takes an integer in [" + llvm::Twine(Lo) + ", 2^40], got '" +
                                   arg + "'");
    value = static_cast<long long>(parsed);
    return false;
  }
};

/// A file name, which cannot be empty.
struct FileParser : cl::parser<std::string> {
  using parser::parser;
  bool parse(cl::Option &option, llvm::StringRef argName, llvm::StringRef arg,
             std::string &value) {
    if (arg.empty())
      return reportOptionError(option, argName, "needs a file name, got ''");
    value = arg.str();
    return false;
  }
};

/// A glob (llvm::GlobPattern).
struct GlobParser : cl::parser<std::string> {
  using parser::parser;
  bool parse(cl::Option &option, llvm::StringRef argName, llvm::StringRef arg,
             std::string &value) {
    if (auto glob = llvm::GlobPattern::create(arg); !glob) {
      std::string why = llvm::toString(glob.takeError());
      return reportOptionError(option, argName,
                               "takes a glob, got '" + arg + "' (" + why + ")");
    }
    value = arg.str();
    return false;
  }
};

cl::list<std::string, bool, NamedFileParser> dataOpt(
    "data", cl::desc("NAME=FILE.npy: the training samples of graph input NAME (dim 0: samples)"),
    cl::value_desc("NAME=FILE.npy"), cl::sub(trainCommand));
cl::opt<std::string, false, FileParser> labelsOpt(
    "labels", cl::desc("FILE.npy: integer class per sample (ce) or the targets (mse)"),
    cl::value_desc("FILE.npy"), cl::sub(trainCommand));
cl::list<std::string, bool, NamedFileParser> testDataOpt(
    "test-data", cl::desc("NAME=FILE.npy: samples the trained model is evaluated on"),
    cl::value_desc("NAME=FILE.npy"), cl::sub(trainCommand));
cl::opt<std::string, false, FileParser> testLabelsOpt(
    "test-labels", cl::desc("FILE.npy: the labels (or targets) of --test-data"),
    cl::value_desc("FILE.npy"), cl::sub(trainCommand));

cl::opt<TrainingOptions::Loss, false, EnumParser<TrainingOptions::Loss>> lossOpt(
    "loss", cl::desc("The loss"), cl::init(TrainingOptions::Loss::CrossEntropy),
    cl::sub(trainCommand),
    cl::values(clEnumValN(TrainingOptions::Loss::CrossEntropy, "ce",
                          "cross-entropy over the logits (class dim last) with --labels"),
               clEnumValN(TrainingOptions::Loss::Mse, "mse",
                          "mean squared error against --labels (targets)"),
               clEnumValN(TrainingOptions::Loss::Model, "model",
                          "the model's output (one element) is the loss")));
cl::opt<std::string> trainOutputOpt(
    "output", cl::desc("The graph output the loss reads (default: the first)"),
    cl::value_desc("NAME"), cl::sub(trainCommand));
cl::opt<TrainingOptions::Optimizer, false, EnumParser<TrainingOptions::Optimizer>> optimizerOpt(
    "optimizer", cl::desc("The optimizer (PyTorch's formulas)"),
    cl::init(TrainingOptions::Optimizer::Sgd), cl::sub(trainCommand),
    cl::values(clEnumValN(TrainingOptions::Optimizer::Sgd, "sgd",
                          "SGD with --momentum and --weight-decay"),
               clEnumValN(TrainingOptions::Optimizer::AdamW, "adamw",
                          "AdamW with --beta1, --beta2, --eps, --weight-decay")));
cl::opt<double, false, FiniteParser> lrOpt("lr", cl::desc("Learning rate (default 0.01)"),
                                           cl::init(0.01), cl::value_desc("X"),
                                           cl::sub(trainCommand));
cl::opt<double, false, FiniteParser> momentumOpt("momentum", cl::desc("SGD momentum in [0, 1)"),
                                                 cl::init(0.0), cl::value_desc("X"),
                                                 cl::sub(trainCommand));
cl::opt<double, false, FiniteParser> weightDecayOpt(
    "weight-decay", cl::desc("SGD: L2 added to the gradient; AdamW: decoupled decay"),
    cl::init(0.0), cl::value_desc("X"), cl::sub(trainCommand));
cl::opt<double, false, FiniteParser> beta1Opt("beta1", cl::desc("AdamW beta1 (0.9)"),
                                              cl::init(0.9), cl::value_desc("X"),
                                              cl::sub(trainCommand));
cl::opt<double, false, FiniteParser> beta2Opt("beta2", cl::desc("AdamW beta2 (0.999)"),
                                              cl::init(0.999), cl::value_desc("X"),
                                              cl::sub(trainCommand));
cl::opt<double, false, FiniteParser> epsOpt("eps", cl::desc("AdamW epsilon (1e-8)"),
                                            cl::init(1e-8), cl::value_desc("X"),
                                            cl::sub(trainCommand));
cl::opt<TrainingOptions::Scaling, false, EnumParser<TrainingOptions::Scaling>> lossScaleOpt(
    "loss-scale", cl::desc("Loss scaling (default: dynamic at fp16, none otherwise)"),
    cl::sub(trainCommand),
    cl::values(clEnumValN(TrainingOptions::Scaling::None, "none",
                          "no scaling (a non-finite gradient still skips the step)"),
               clEnumValN(TrainingOptions::Scaling::Static, "static", "a fixed --init-scale"),
               clEnumValN(TrainingOptions::Scaling::Dynamic, "dynamic",
                          "GradScaler's: grows every --growth-interval clean steps, backs off "
                          "on overflow")));
cl::opt<double, false, FiniteParser> initScaleOpt(
    "init-scale", cl::desc("Initial (or static) loss scale (65536)"), cl::init(65536.0),
    cl::value_desc("X"), cl::sub(trainCommand));
cl::opt<double, false, FiniteParser> growthFactorOpt("growth-factor",
                                                     cl::desc("Scale growth factor (2)"),
                                                     cl::init(2.0), cl::value_desc("X"),
                                                     cl::sub(trainCommand));
cl::opt<double, false, FiniteParser> backoffFactorOpt("backoff-factor",
                                                      cl::desc("Scale backoff factor (0.5)"),
                                                      cl::init(0.5), cl::value_desc("X"),
                                                      cl::sub(trainCommand));
cl::opt<long long, false, CountParser<1>> growthIntervalOpt(
    "growth-interval", cl::desc("Clean steps before the scale grows (2000)"), cl::init(2000),
    cl::value_desc("N"), cl::sub(trainCommand));
cl::opt<long long, false, CountParser<1>> hysteresisOpt(
    "hysteresis", cl::desc("Overflows absorbed before the scale backs off (1)"), cl::init(1),
    cl::value_desc("N"), cl::sub(trainCommand));
cl::opt<double, false, FiniteParser> minScaleOpt(
    "min-scale", cl::desc("The scale never backs off below this (0: no floor)"), cl::init(0.0),
    cl::value_desc("X"), cl::sub(trainCommand));
cl::opt<double, false, FiniteParser> clipNormOpt(
    "clip-norm", cl::desc("Clip the unscaled gradients to this global L2 norm (0: off)"),
    cl::init(0.0), cl::value_desc("X"), cl::sub(trainCommand));
cl::list<std::string, bool, GlobParser> frozenOpt(
    "frozen", cl::desc("GLOB: initializers whose name matches stay fixed"),
    cl::value_desc("GLOB"), cl::sub(trainCommand));
cl::opt<long long, false, CountParser<1>> accumulateOpt(
    "accumulate", cl::desc("Micro-batches of --batch samples per step (gradient accumulation)"),
    cl::init(1), cl::value_desc("N"), cl::sub(trainCommand));
cl::opt<long long, false, CountParser<1>> batchOpt("batch", cl::desc("Samples per step (32)"),
                                                 cl::init(32), cl::value_desc("N"),
                                                 cl::sub(trainCommand));
cl::opt<long long, false, CountParser<1>> stepsOpt("steps", cl::desc("Steps to train in all"),
                                                 cl::init(0), cl::value_desc("N"),
                                                 cl::sub(trainCommand));
cl::opt<long long, false, CountParser<1>> epochsOpt(
    "epochs", cl::desc("Epochs to train in all (default 1 without --steps)"), cl::init(0),
    cl::value_desc("N"), cl::sub(trainCommand));
cl::opt<long long, false, CountParser<1>> logEveryOpt("log-every",
                                                    cl::desc("A progress line every N steps (10)"),
                                                    cl::init(10), cl::value_desc("N"),
                                                    cl::sub(trainCommand));
cl::opt<long long, false, CountParser<1>> evalEveryOpt(
    "eval-every", cl::desc("Evaluate on --test-data every N steps (default: at the end)"),
    cl::init(0), cl::value_desc("N"), cl::sub(trainCommand));
cl::opt<std::string, false, FileParser> csvOpt("csv", cl::desc("Write one row per step here"),
                                               cl::value_desc("FILE"), cl::sub(trainCommand));
cl::opt<std::string, false, FileParser> checkpointOpt(
    "checkpoint", cl::desc("Write the training state here at the end (atomically)"),
    cl::value_desc("FILE"), cl::sub(trainCommand));
cl::opt<long long, false, CountParser<1>> checkpointEveryOpt(
    "checkpoint-every", cl::desc("Also write --checkpoint every N steps"), cl::init(0),
    cl::value_desc("N"), cl::sub(trainCommand));
cl::opt<std::string, false, FileParser> resumeOpt(
    "resume", cl::desc("Continue the run a checkpoint was written by"), cl::value_desc("FILE"),
    cl::sub(trainCommand));
cl::opt<std::string, false, FolderParser> stateDirOpt(
    "state-dir", cl::desc("Write every state (weights, optimizer state) as NAME.npy here"),
    cl::value_desc("folder"), cl::sub(trainCommand));
cl::opt<std::string, false, FolderParser> saveModulesOpt(
    "save-modules",
    cl::desc("Compile the step (and the evaluation) and write them here (step.mpk, eval.mpk, "
             "trainer.txt) for mixprec-train-run, instead of training"),
    cl::value_desc("folder"), cl::sub(trainCommand));
cl::opt<bool> noShuffleOpt("no-shuffle", cl::desc("Batches in file order"), cl::ValueDisallowed,
                           cl::sub(trainCommand));
cl::opt<std::string> compareOpt("compare",
                                cl::desc("Train a copy at this precision beside (fp32)"),
                                cl::value_desc("fp32"), cl::sub(trainCommand));
cl::opt<long long, false, CountParser<1>> seedsOpt(
    "seeds",
    cl::desc("Train N times, data-order seeds --seed .. --seed+N-1, and report each precision's "
             "mean and sd and, with --compare, Welch's 95% interval of the difference (1)"),
    cl::init(1), cl::value_desc("N"), cl::sub(trainCommand));
cl::opt<bool> reinitOpt(
    "reinit",
    cl::desc("Each run resamples the trained parameters from its seed (uniform, each "
             "parameter's initial mean and sd): --seeds then varies the initialisation too"),
    cl::ValueDisallowed, cl::sub(trainCommand));
cl::opt<long long, false, CountParser<1>> compareEveryOpt(
    "compare-every",
    cl::desc("With --compare fp32: every N steps, compare each parameter's gradient with FP32's "
             "on the same batch and master weights (relative L2, cosine, zeros, drift)"),
    cl::init(0), cl::value_desc("N"), cl::sub(trainCommand));
cl::opt<std::string, false, FileParser> metricsOpt(
    "metrics", cl::desc("Write the five training metrics (and the ensemble, gradients) as JSON"),
    cl::value_desc("FILE.json"), cl::sub(trainCommand));
cl::opt<std::string, false, FileParser> reportOpt(
    "report", cl::desc("Write the run's visual report (one self-contained HTML file)"),
    cl::value_desc("FILE.html"), cl::sub(trainCommand));
cl::opt<double, false, FiniteParser> fp32SamplesOpt(
    "fp32-samples-per-s",
    cl::desc("FP32's throughput for the speedup metric when there is no --compare fp32"),
    cl::init(0.0), cl::value_desc("X"), cl::sub(trainCommand));
cl::opt<bool> dataParallelOpt(
    "data-parallel",
    cl::desc("Compile the step to average its gradients across ranks (implied under mpirun "
             "with 2 or more ranks; for --save-modules)"),
    cl::ValueDisallowed, cl::sub(trainCommand));
cl::opt<std::string> allreduceDTypeOpt(
    "allreduce-dtype", cl::desc("The dtype gradients travel in across ranks: fp32, bf16, fp16"),
    cl::init("fp32"), cl::value_desc("fp32|bf16|fp16"), cl::sub(trainCommand));
cl::opt<double, false, FiniteParser> bucketMBOpt(
    "bucket-mb", cl::desc("Most MB of gradients per all-reduce (25)"), cl::init(25.0),
    cl::value_desc("X"), cl::sub(trainCommand));
cl::opt<bool> shardOptimizerOpt(
    "shard-optimizer",
    cl::desc("ZeRO stage 1: each rank keeps and updates its 1/N slice of the optimizer state "
             "(momentum, AdamW's moments); the updated master weights are all-gathered"),
    cl::ValueDisallowed, cl::sub(trainCommand));
cl::opt<long long, false, CountParser<1>> worldOpt(
    "world",
    cl::desc("The ranks --shard-optimizer compiles for outside a job (--save-modules; under "
             "mpirun or --ranks: the job's)"),
    cl::init(0), cl::value_desc("N"), cl::sub(trainCommand));
cl::opt<long long, false, CountParser<1>> ranksOpt(
    "ranks", cl::desc("Run as a data-parallel job of N processes on this machine (mpirun)"),
    cl::init(0), cl::value_desc("N"), cl::sub(trainCommand));
cl::opt<double, false, FiniteParser> collectiveTimeoutOpt(
    "collective-timeout",
    cl::desc("Seconds a rank waits for the others in a collective before failing (300)"),
    cl::init(300.0), cl::value_desc("S"), cl::sub(trainCommand));
cl::opt<long long, false, CountParser<1>> maxSkippedOpt(
    "max-skipped-in-a-row",
    cl::desc("Stop with a diagnosis after this many skipped steps in a row (50)"), cl::init(50),
    cl::value_desc("N"), cl::sub(trainCommand));

/// report-run's --metrics (train's --metrics is the file train writes).
cl::opt<std::string, false, FileParser> reportRunMetricsOpt(
    "metrics", cl::desc("The run's metrics JSON (what train --metrics writes)"),
    cl::value_desc("FILE.json"), cl::sub(reportRunCommand));

/// Whether --precision was on the command line, and why its value is
/// not a precision ("" if it is).
bool precisionWasGiven = false;
std::string unknownPrecisionMessage;

/// The options no subcommand declares: they arrive here, in order.
cl::list<std::string> unknownArgs(cl::Sink, cl::sub(importCommand), cl::sub(compileCommand),
                                  cl::sub(runCommand), cl::sub(reportCommand),
                                  cl::sub(validateCommand), cl::sub(trainCommand),
                                  cl::sub(reportRunCommand));

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// One problem with the command line, in the order the arguments came.
struct ArgError {
  const cl::Option *option; ///< the option whose value is bad, or null
  std::string arg;          ///< the option's name, the unknown argument, or ""
  std::string message;      ///< what the option's parser (or llvm::cl) said
};

/// How an option is written on the command line: "-o", "--seed".
std::string dashed(llvm::StringRef name) {
  return (name.size() == 1 ? "-" : "--") + name.str();
}

/// The error line of an option no subcommand of `command` declares: some
/// belong to another command; the rest are unknown.
std::string unknownOptionError(Command command, llvm::StringRef arg) {
  llvm::StringRef name = arg.ltrim('-').split('=').first;
  llvm::StringRef commandName = infoOf(command).name;
  if ((command == Command::Report || command == Command::Validate) && name == "o")
    return commandName.str() + ": -o is not an option of " + commandName.str() +
           " (use --json FILE)";
  if (command == Command::Report && name == "input")
    return "report: --input is an option of validate, not report";
  return commandName.str() +
         (command == Command::Import ? ": unknown option '" : ": unknown or incomplete option '") +
         arg.str() + "'";
}

/// The arguments after the command that are options (not models, not
/// option values), walked as llvm::cl walks them: an option that takes a
/// value and carries none ("--seed 3") takes the next argument.
std::vector<llvm::StringRef> optionArguments(Command command, int argc, char **argv) {
  cl::SubCommand &sub = subCommandOf(command);
  std::vector<llvm::StringRef> options;
  for (int i = 2; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (!arg.starts_with("-") || arg == "-")
      continue; // a model, or a file named "-" (modelArgumentError)
    options.push_back(arg);
    cl::Option *option = sub.OptionsMap.lookup(arg.ltrim('-'));
    if (option && option->getValueExpectedFlag() == cl::ValueRequired)
      ++i; // its value, whatever it looks like
  }
  return options;
}

/// Why the arguments cannot be given to llvm::cl as they are, or "". An
/// existing @FILE would be read as a response file. llvm::cl would accept
/// LLVM's own options (--stats) in any subcommand and take "--" as the end
/// of options; it would print its own error for a switch with a value
/// ("--time=1") or an option missing its value.
std::string refusedArguments(Command command, int argc, char **argv) {
  for (int i = 2; i < argc; ++i)
    if (llvm::StringRef arg = argv[i];
        arg.starts_with("@") && llvm::sys::fs::exists(arg.drop_front()))
      return std::string(infoOf(command).name) + ": '" + arg.str() +
             "' would be read as a response file, which mixprec does not take (write ./" +
             arg.str() + " for a file of that name)";
  cl::SubCommand &sub = subCommandOf(command);
  for (llvm::StringRef arg : optionArguments(command, argc, argv)) {
    auto [name, value] = arg.ltrim('-').split('=');
    cl::Option *option = arg == "--" ? nullptr : sub.OptionsMap.lookup(name);
    bool hasValue = arg.contains('=');
    cl::ValueExpected expected = option ? option->getValueExpectedFlag() : cl::ValueOptional;
    if (!option || (hasValue && expected == cl::ValueDisallowed) ||
        (!hasValue && expected == cl::ValueRequired && arg.data() == argv[argc - 1]))
      return unknownOptionError(command, arg);
  }
  return "";
}

/// The usage error a model argument makes, or "".
std::string modelArgumentError(Command command) {
  llvm::StringRef commandName = infoOf(command).name;
  if (command == Command::ReportRun) { // one or more CSVs, no model
    for (const std::string &csv : csvArg)
      if (llvm::StringRef(csv).starts_with("-"))
        return unknownOptionError(command, csv);
    return csvArg.empty() ? "report-run: no training CSV given" : "";
  }
  for (const std::string &model : modelArg)
    if (llvm::StringRef(model).starts_with("-"))
      return unknownOptionError(command, model);
  if (modelArg.empty())
    return commandName.str() + ": no model given";
  if (modelArg.size() > 1)
    return commandName.str() + ": more than one model given";
  return "";
}

/// The error line of a bad option value: "COMMAND: --OPTION MESSAGE"; an
/// .mpk module takes no interpreter, so its --backend list is shorter.
std::string valueError(Command command, const ArgError &error) {
  std::string commandName = infoOf(command).name;
  if (error.option == &backendOpt && llvm::StringRef(modelArg.empty() ? "" : modelArg[0])
                                         .ends_with(".mpk"))
    return commandName + ": --backend takes cpu, cuda or auto, " +
           error.message.substr(error.message.find("got '"));
  return commandName + ": " + dashed(error.arg) + " " + error.message;
}

/// Runs llvm::cl on the arguments, collecting every problem in order
/// instead of letting llvm::cl print them. Returns the problems.
std::vector<ArgError> collectArgErrors(int argc, char **argv) {
  std::vector<ArgError> errors;
  passes::ScopedOptionErrorHandler handler(
      [&](const cl::Option &option, llvm::StringRef argName, const std::string &message) {
        errors.push_back({&option, argName.str(), message});
      });
  unknownArgs.setCallback([&](const std::string &arg) { errors.push_back({nullptr, arg, ""}); });
  std::string clErrors;
  llvm::raw_string_ostream clErrorStream(clErrors);
  if (!cl::ParseCommandLineOptions(argc, argv, kOverview, &clErrorStream) && errors.empty())
    // Not expected after refusedArguments; still an error, never ignored.
    errors.push_back({nullptr, "", llvm::StringRef(clErrors).split('\n').first.str()});
  return errors;
}

/// Registers the precision options in their subcommands and gives --emit
/// its other spelling, before the command line is read.
void completeOptions() {
  (void)opts::precision();
  emitOpt.getParser().aliases["mlir"] = Emit::MpMlir; // the name before mpk-mlir existed
}

} // namespace

bool printHelpIfAsked(Command command, int argc, char **argv) {
  completeOptions();
  std::vector<llvm::StringRef> options = optionArguments(command, argc, argv);
  bool hidden = llvm::is_contained(options, "--help-hidden") ||
                llvm::is_contained(options, "-help-hidden");
  if (!hidden && !llvm::is_contained(options, "--help") && !llvm::is_contained(options, "-help"))
    return false;
  // llvm::cl would print the help and exit, past the check of stdout
  // (finishStdout); its printer prints the subcommand the command line
  // names, so that is all it is given.
  cl::ParseCommandLineOptions(2, argv, kOverview);
  cl::PrintHelpMessage(hidden, /*Categorized=*/true);
  return true;
}

std::optional<Command> findCommand(llvm::StringRef name) {
  for (const CommandInfo &info : kCommands)
    if (name == info.name)
      return info.command;
  return std::nullopt;
}

std::string usageText() {
  std::string text = "usage:\n";
  auto indented = [&](llvm::StringRef block, unsigned by) {
    llvm::SmallVector<llvm::StringRef> lines;
    block.split(lines, '\n');
    for (llvm::StringRef line : lines)
      text += std::string(by, ' ') + line.str() + "\n";
  };
  for (const CommandInfo &info : kCommands) {
    indented(info.synopsis, 2);
    indented(info.description, 6);
  }
  text += "  mixprec --version\n  mixprec COMMAND --help\n      The options of COMMAND.\n";
  text += "\nerrors:\n";
  indented(kErrorsText, 2);
  text.pop_back(); // kErrorsText ends in a newline
  text += "\nfiles:\n";
  text += kFilesText;
  return text;
}

/// The first NAME=... option given twice for one name (two --shape of one
/// input or dim, two --data, --test-data or --calibrate files for one
/// input): "" or the error. Neither may silently win.
std::string repeatedNames(Command command) {
  auto check = [&](const char *option, auto &list) -> std::string {
    std::map<std::string, std::string> seen;
    for (const std::string &spec : list) {
      std::string name = spec.substr(0, spec.find('='));
      auto [it, inserted] = seen.emplace(name, spec);
      if (!inserted)
        return std::string(infoOf(command).name) + ": " + option + " gives '" + name +
               "' twice ('" + it->second + "' and '" + spec + "'): one value per name";
    }
    return "";
  };
  // (--input has its own error, from the run: "input 'x' given twice".)
  for (std::string why : {check("--shape", shapeOpt), check("--data", dataOpt),
                          check("--test-data", testDataOpt), check("--calibrate", calibrateOpt)})
    if (!why.empty())
      return why;
  return "";
}

int parseCommandLine(Command command, int argc, char **argv) {
  completeOptions();
  if (std::string why = refusedArguments(command, argc, argv); !why.empty())
    return usageError(why);
  for (const ArgError &error : collectArgErrors(argc, argv)) {
    if (!error.option && error.arg.empty())
      return usageError(std::string(infoOf(command).name) + ": " + error.message);
    if (!error.option)
      return usageError(unknownOptionError(command, error.arg));
    // A --precision mixprec does not know was always an error about the
    // graph, reported when it was compiled (status 1): compileModel does.
    if (error.option == &opts::precision().precision) {
      if (unknownPrecisionMessage.empty())
        unknownPrecisionMessage = error.message;
      continue;
    }
    return usageError(valueError(command, error));
  }
  if (std::string why = modelArgumentError(command); !why.empty())
    return usageError(why);
  if (std::string why = repeatedNames(command); !why.empty())
    return usageError(why);
  // Read now: assigning the option later (run's fp32 default) marks it given.
  precisionWasGiven = opts::precision().precision.hasValue() || !unknownPrecisionMessage.empty();
  if (const std::string &policy = opts::precision().policyFile; !policy.empty())
    noteInput(policy, "--policy " + policy);
  return 0;
}

//===----------------------------------------------------------------------===//
// The parsed command line
//===----------------------------------------------------------------------===//

namespace opts {

const std::string &model() { return modelArg.front(); }
std::vector<std::string> files() { return {csvArg.begin(), csvArg.end()}; }
const std::string &reportRunMetrics() { return reportRunMetricsOpt; }

namespace {
/// The precision pipeline's options as flags of this tool's subcommands.
struct PrecisionFlags : passes::PrecisionPipelineOptions {
  /// Makes these options (or only those named in `only`) options of `sub`
  /// too, parsed straight into this struct.
  void addToSubCommand(cl::SubCommand &sub, llvm::ArrayRef<llvm::StringRef> only = {}) {
    // Registering an option again re-registers it everywhere it lives, so
    // the options are collected before the map they sit in changes.
    llvm::SmallVector<cl::Option *> selected;
    for (auto &[name, option] : OptionsMap)
      if (only.empty() || llvm::is_contained(only, name))
        selected.push_back(option);
    for (cl::Option *option : selected) {
      option->removeArgument();
      option->addSubCommand(sub);
      option->addArgument();
    }
  }
};
} // namespace

passes::PrecisionPipelineOptions &precision() {
  static PrecisionFlags *options = [] {
    auto *options = new PrecisionFlags();
    options->addToSubCommand(compileCommand);
    options->addToSubCommand(reportCommand);
    options->addToSubCommand(validateCommand);
    options->addToSubCommand(trainCommand);
    // run compiles just in time at --precision; the other options are
    // compile's.
    options->addToSubCommand(runCommand, {"precision"});
    return options;
  }();
  return *options;
}

bool precisionGiven() { return precisionWasGiven; }
const std::string &unknownPrecision() { return unknownPrecisionMessage; }
const std::string &output() { return outputOpt; }
Emit emit() { return emitOpt; }
bool elideWeights() { return elideWeightsOpt; }
const std::string &arch() { return archOpt; }
int cudaTestBreakKernel() { return cudaTestBreakKernelOpt; }
const std::string &json() { return jsonOpt; }
bool graph() { return graphOpt; }

/// Splits NAME=FILE arguments (checked by NamedFileParser).
static NamedFiles namedFiles(llvm::ArrayRef<std::string> specs) {
  NamedFiles files;
  for (llvm::StringRef spec : specs) {
    auto [name, file] = spec.split('=');
    files.emplace_back(name.str(), file.str());
  }
  return files;
}

std::map<std::string, std::vector<int64_t>> shapes() {
  std::map<std::string, std::vector<int64_t>> out;
  for (llvm::StringRef spec : shapeOpt) {
    auto [name, dims] = spec.split('=');
    llvm::SmallVector<llvm::StringRef> parts;
    if (!dims.empty())
      dims.split(parts, dims.contains(',') ? ',' : 'x');
    std::vector<int64_t> &shape = out[name.str()]; // one per name (repeatedNames)
    for (llvm::StringRef part : parts) {
      uint64_t size = 0;
      parseUnsigned(part, size);
      shape.push_back(static_cast<int64_t>(size));
    }
  }
  return out;
}

NamedFiles inputs() { return namedFiles(inputOpt); }
NamedFiles calibration() { return namedFiles(calibrateOpt); }
uint64_t seed() { return seedOpt; }
double tolerance() { return toleranceOpt; }
const std::string &outputDir() { return outputDirOpt; }
int repeat() { return repeatOpt; }
int threads() { return threadsOpt; }
bool time() { return timeOpt; }
Backend backend() { return backendOpt; }

llvm::StringRef backendName(Backend backend) { return backendOpt.getParser().nameOf(backend); }

const TrainSettings &train() {
  static TrainSettings settings = [] {
    TrainSettings t;
    TrainingOptions &o = t.step;
    o.loss = lossOpt;
    o.output = trainOutputOpt;
    o.optimizer = optimizerOpt;
    o.lr = lrOpt;
    o.momentum = momentumOpt;
    o.weightDecay = weightDecayOpt;
    o.beta1 = beta1Opt;
    o.beta2 = beta2Opt;
    o.eps = epsOpt;
    o.scaling = lossScaleOpt.getNumOccurrences()
                    ? lossScaleOpt.getValue()
                    : compiler::defaultScaling(precision().precision.getValue());
    o.initScale = initScaleOpt;
    o.growthFactor = growthFactorOpt;
    o.backoffFactor = backoffFactorOpt;
    o.growthInterval = growthIntervalOpt;
    o.hysteresis = hysteresisOpt;
    o.minScale = minScaleOpt;
    o.clipNorm = clipNormOpt;
    o.accumulate = accumulateOpt;
    o.frozen.assign(frozenOpt.begin(), frozenOpt.end());
    o.name = "main";
    o.dataParallel = dataParallelOpt;
    o.allreduceDType = allreduceDTypeOpt;
    o.bucketMB = bucketMBOpt;
    o.shardOptimizer = shardOptimizerOpt;
    t.world = worldOpt;
    t.ranks = ranksOpt;
    t.collectiveTimeout = collectiveTimeoutOpt;
    t.data = namedFiles(dataOpt);
    t.testData = namedFiles(testDataOpt);
    t.labels = labelsOpt;
    t.testLabels = testLabelsOpt;
    t.batch = batchOpt;
    trainer::LoopOptions &l = t.loop;
    l.steps = stepsOpt;
    l.epochs = epochsOpt;
    l.logEvery = logEveryOpt;
    l.evalEvery = evalEveryOpt;
    l.checkpointEvery = checkpointEveryOpt;
    l.csv = csvOpt;
    l.checkpoint = checkpointOpt;
    l.resume = resumeOpt;
    l.stateDir = stateDirOpt;
    l.shuffle = !noShuffleOpt;
    l.maxSkippedInARow = maxSkippedOpt;
    l.seeds = seedsOpt;
    l.reinit = reinitOpt;
    l.compareEvery = compareEveryOpt;
    l.metrics = metricsOpt;
    l.report = reportOpt;
    l.fp32SamplesPerSecond = fp32SamplesOpt;
    t.compare = compareOpt;
    t.saveModules = saveModulesOpt;
    return t;
  }();
  return settings;
}

} // namespace opts
} // namespace mixprec::tools
