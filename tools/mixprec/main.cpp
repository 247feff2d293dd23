//===- main.cpp - the mixprec command-line tool ----------------------------===//
//
//   mixprec import MODEL.onnx [-o OUT.mlir]
//   mixprec run MODEL [--input NAME=FILE.npy]... [--output-dir DIR] [--seed N]
//               [--repeat N] [--time]
//   mixprec --version | --help
//
// Every failure prints one line "mixprec: error: ..." naming the file,
// node or tensor at fault, and exits with status 1 (2 for usage errors).
//
//===----------------------------------------------------------------------===//
#include "Version.h"
#include "codegen/ModuleWriter.h"
#include "common/Npy.h"
#include "compiler/Interpreter/Interpreter.h"
#include "compiler/Pipeline/Pipeline.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"
#include "tools/mixprec/CliCommon.h"
#include "tools/mixprec/Commands.h"
#include "tools/mixprec/ModelLoader.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <random>

using namespace mlir;
using mixprec::compiler::GraphSignature;
using mixprec::compiler::HostTensor;
using mixprec::compiler::TensorSpec;
using namespace mixprec::tools;

const char *const mixprec::tools::kUsage = R"(usage:
  mixprec import MODEL.onnx [-o OUT.mlir]
      Import an ONNX model and print its mp graph IR (or write it to OUT).
  mixprec run MODEL [--input NAME=FILE.npy]... [--output-dir DIR] [--seed N]
              [--repeat N] [--time] [--backend interpreter|cpu|cuda|auto] [--precision P]
      Run MODEL and write NAME.npy per graph output NAME into DIR (default:
      .); every byte of NAME outside [A-Za-z0-9_.-], and a leading '.', is
      written as %XX, so distinct names give distinct files ("a/b" ->
      a%2Fb.npy, "a_b" -> a_b.npy). --backend interpreter runs the graph on
      the CPU reference interpreter (the default for .mlir), as imported or,
      with --precision, at that plan; cpu, cuda or auto (the default for
      .onnx: CUDA when a GPU is found, else CPU) compile it just in time (at
      --precision, default fp32) to a temporary module and run it on the
      runtime. An .mpk module always runs on the runtime, with the plan it
      was compiled with; --precision is an error for it, and for an .mlir
      that already carries a plan. Without --input, every input is random
      (normal floats; integers: indices valid for their gather on the
      interpreter, 0/1 on the runtime; bools 0/1) from the seed (an integer
      in [0, 2^64-1], default 0). Inputs take the array dtypes of their
      kind: float16/32/64 for floats, int8/uint8/int32/int64 for integers
      (exact), bool (or uint8) for bools. --repeat runs N times; --time
      prints load and run times (JSON) to stderr.
  mixprec compile MODEL [--precision fp32|tf32|bf16|fp16|fp8] [--calibrate NAME=FILE.npy]...
                  [--policy FILE.json] [--keep-fp32 TYPE|GLOB[,...]]... [--force GLOB:DTYPE]...
                  [--no-keep-io-types] [--fp16-margin F] [--underflow-threshold F]
                  [--overflow-fallback bf16|fp32] [--fp8-scaling auto|current|static]
                  [--fp8-margin N] [--emit mp-mlir|mpk-mlir|mpk] [-o OUT]
      Assign a precision to every op (with a reason), insert and fold casts.
      --emit mp-mlir (the default, unless OUT ends in .mpk) writes the
      annotated mp IR, which `mixprec run OUT.mlir` executes with its
      dtypes; mpk-mlir writes the fused, planned kernel IR; mpk (implied by
      -o OUT.mpk) writes the module an application loads with the runtime,
      large weights in OUT.mpk.weights, and prints its statistics (JSON) to
      stderr. --calibrate runs the FP32 graph on the given inputs first and
      moves ops whose values would overflow or underflow FP16.
  mixprec report MODEL [compile options] [--json FILE]
      Print the precision plan: a header line, a table with one row per op
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
      FLOPs: 2*M*N*K per output batch element for GEMMs (conv: per output
      element 2*C/groups*kH*kW), one per element otherwise, none for data
      movement and casts. Bytes: every constant; GEMM weights (constant-
      derived weight operands, at the dtype the GEMM reads them); every
      non-constant op result. "fp32" is the imported graph. --json FILE
      writes it all as JSON ("-": JSON on stdout instead of the text).
  mixprec validate MODEL [compile options] [--input NAME=FILE.npy]... [--seed N]
                   [--tolerance X] [--json FILE]
      Run the FP32 reference (the imported graph) and the mixed plan on the
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
      Exit status: 0 all outputs finite, 3 some output holds inf/NaN (or
      its FP32 reference does where it does not: max_rel inf), 4 an
      output's max_rel exceeds --tolerance X, 1 errors. --json FILE writes
      the same as JSON (metrics that are not finite as null).
  mixprec --version

files:
  Every output file (-o, --json, run's .npy files, a module and its
  .weights) is written atomically: into a temporary file in the same
  folder, checked after it is closed, then renamed into place, so a failed
  write (missing folder, full disk) leaves the old file intact. An existing
  output that is a device or FIFO (/dev/null) is written in place. No
  command writes over a file it reads (the model and its .weights, --input,
  --calibrate and --policy files), compared as files, so other spellings and
  links count: it stops with an error instead. Inputs must be regular files
  (a folder, device or FIFO is refused). Without -o, or with -o -, output
  goes to stdout; a failed write there is an error too.
)";

namespace {

int runImport(llvm::ArrayRef<std::string> args) {
  std::string model, output;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o" && i + 1 < args.size())
      output = args[++i];
    else if (!args[i].empty() && args[i][0] == '-')
      return usageError("import: unknown option '" + args[i] + "'");
    else if (model.empty())
      model = args[i];
    else
      return usageError("import: more than one model given");
  }
  if (model.empty())
    return usageError("import: no model given");
  MLIRContext context;
  mixprec::tools::loadDialects(context);
  std::string error;
  OwningOpRef<ModuleOp> module = mixprec::tools::loadModel(context, model, error);
  if (!module)
    return fail(error);
  return emitModule(*module, output);
}

/// Lowers an annotated module to kernels and writes it as .mpk to `path`;
/// errors about the graph name `model`, errors about files the file.
int writeCompiledModule(ModuleOp module, const std::string &model, const std::string &path,
                        mixprec::codegen::ModuleStats *statsOut) {
  std::string error;
  if (!checkNotAnInput(path, error) ||
      !checkNotAnInput(mixprec::codegen::sideFilePathFor(path), error))
    return fail(error);
  func::FuncOp func = mixprec::compiler::findEntryFunction(module, error);
  if (!func)
    return fail(model + ": " + error);
  std::vector<mixprec::codegen::PrecisionEntry> plan = mixprec::codegen::collectPrecisionPlan(func);
  if (!mixprec::compiler::runKernelPipeline(module, error))
    return fail(model + ": " + error);
  mixprec::codegen::ModuleWriteOptions options;
  options.producer = std::string("mixprec ") + MIXPREC_VERSION;
  mixprec::codegen::ModuleStats stats;
  mixprec::codegen::ModuleImage image;
  if (!mixprec::codegen::buildModule(func, plan, mixprec::codegen::sideFileNameFor(path), options,
                                     stats, image, error))
    return fail(model + ": " + error);
  if (!mixprec::codegen::writeModuleFiles(path, image, error))
    return fail(error);
  if (statsOut)
    *statsOut = stats;
  return 0;
}

int runRun(llvm::ArrayRef<std::string> args) {
  std::string model, outputDir = ".";
  std::vector<std::pair<std::string, std::string>> inputFiles;
  uint64_t seed = 0;
  int repeat = 1;
  bool time = false;
  std::string backend, precision = "fp32";
  bool precisionGiven = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    bool hasValue = i + 1 < args.size();
    if (a == "--input" && hasValue) {
      std::string spec = args[++i];
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
        return usageError("run: --input takes NAME=FILE.npy, got '" + spec + "'");
      inputFiles.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
    } else if (a == "--output-dir" && hasValue) {
      outputDir = args[++i];
      if (outputDir.empty())
        return usageError("run: --output-dir needs a folder name, got ''");
    } else if ((a == "--seed" || a == "--repeat") && hasValue) {
      const std::string &v = args[++i];
      uint64_t parsed = 0;
      if (!parseUnsigned(v, parsed) || (a == "--repeat" && (parsed < 1 || parsed > 100000)))
        return usageError("run: " + a +
                          (a == "--seed" ? " takes an integer in [0, 2^64-1], got '"
                                         : " takes an integer in [1, 100000], got '") +
                          v + "'");
      if (a == "--seed")
        seed = parsed;
      else
        repeat = static_cast<int>(parsed);
    } else if (a == "--backend" && hasValue) {
      backend = args[++i];
    } else if (a == "--precision" && hasValue) {
      precision = args[++i];
      precisionGiven = true;
    } else if (a == "--time") {
      time = true;
    } else if (!a.empty() && a[0] == '-') {
      return usageError("run: unknown or incomplete option '" + a + "'");
    } else if (model.empty()) {
      model = a;
    } else {
      return usageError("run: more than one model given");
    }
  }
  if (model.empty())
    return usageError("run: no model given");
  if (llvm::StringRef(model).ends_with(".mpk")) {
    if (precisionGiven)
      return usageError("run: --precision applies to models compiled just in time; " + model +
                        " is a compiled module, whose plan `mixprec compile` fixed");
    return runCompiledModule(model, model, inputFiles, seed, backend, outputDir, repeat, time);
  }
  // ONNX models compile just in time by default; mp IR runs on the
  // reference interpreter unless a runtime backend is asked for.
  if (backend.empty())
    backend = llvm::StringRef(model).ends_with(".onnx") ? "auto" : "interpreter";
  if (backend != "interpreter" && backend != "cpu" && backend != "cuda" && backend != "auto")
    return usageError("run: --backend takes interpreter, cpu, cuda or auto, got '" + backend +
                      "'");
  CompileArgs compileArgs;
  compileArgs.model = model;
  compileArgs.precision.precision = precision;
  compileArgs.precisionGiven = precisionGiven;
  if (backend != "interpreter") {
    // A backend asks for the compiled path: compile just in time to a
    // module beside the outputs, then run it like any application would.
    MLIRContext context;
    mixprec::tools::loadDialects(context);
    OwningOpRef<ModuleOp> compiled = compileModel(context, compileArgs);
    if (!compiled)
      return 1;
    // The module lives in a temporary directory for this run only.
    llvm::SmallString<256> jitDir;
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("mixprec-jit", jitDir))
      return fail("cannot create a temporary directory: " + ec.message());
    llvm::SmallString<256> modulePath(jitDir);
    llvm::sys::path::append(modulePath, "jit.mpk");
    int rc = writeCompiledModule(*compiled, model, modulePath.str().str(), nullptr);
    if (rc == 0)
      rc = runCompiledModule(modulePath.str().str(), model, inputFiles, seed, backend, outputDir,
                             repeat, time);
    llvm::sys::fs::remove_directories(jitDir);
    return rc;
  }

  auto importStart = std::chrono::steady_clock::now();
  MLIRContext context;
  mixprec::tools::loadDialects(context);
  std::string error;
  OwningOpRef<ModuleOp> module;
  if (precisionGiven) {
    // The interpreter runs the mixed plan, rounding where the IR says.
    module = compileModel(context, compileArgs);
    if (!module)
      return 1;
  } else {
    module = mixprec::tools::loadModel(context, model, error);
    if (!module)
      return fail(error);
  }
  func::FuncOp func = mixprec::compiler::findEntryFunction(*module, error);
  if (!func)
    return fail(model + ": " + error);
  double importMs = millisecondsSince(importStart);
  GraphSignature sig = mixprec::compiler::getSignature(func);
  // One name, one file: two different values under one output name would
  // leave one of them unwritten (the compiled path refuses them too).
  Operation *ret = func.getBody().front().getTerminator();
  for (size_t i = 0; i < sig.outputs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (sig.outputs[i].name == sig.outputs[j].name && ret->getOperand(i) != ret->getOperand(j))
        return fail(model + ": outputs #" + std::to_string(j) + " and #" + std::to_string(i) +
                    " are different values with the same name '" + sig.outputs[i].name + "'");

  std::vector<HostTensor> inputs;
  if (!loadInputs(func, sig, inputFiles, seed, inputs, error))
    return fail(error);

  mixprec::compiler::Interpreter interpreter(func);
  auto prepareStart = std::chrono::steady_clock::now();
  if (!interpreter.prepare(error))
    return fail(model + ": " + error);
  double prepareMs = millisecondsSince(prepareStart);
  std::vector<HostTensor> outputs;
  std::vector<double> runMs;
  for (int r = 0; r < repeat; ++r) {
    auto runStart = std::chrono::steady_clock::now();
    if (!interpreter.run(inputs, outputs, error))
      return fail(model + ": " + error);
    runMs.push_back(millisecondsSince(runStart));
  }
  if (time) {
    std::sort(runMs.begin(), runMs.end());
    llvm::errs() << llvm::format(
        "{\"import_ms\": %.3f, \"prepare_ms\": %.3f, \"run_ms_median\": %.3f, "
        "\"run_ms_min\": %.3f, \"repeat\": %d}\n",
        importMs, prepareMs, runMs[runMs.size() / 2], runMs.front(), repeat);
  }

  std::vector<std::string> names, paths;
  for (const TensorSpec &spec : sig.outputs)
    names.push_back(spec.name);
  if (!planOutputFiles(outputDir, names, paths, error))
    return fail(error);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (paths[i].empty())
      continue;
    if (!writeOutput(outputs[i], paths[i], error))
      return fail(error);
    llvm::outs() << "wrote " << paths[i] << "  (" << sig.outputs[i].name << ", "
                 << mixprec::graph::formatShape(outputs[i].shape) << ")\n";
  }
  return 0;
}

int runCompile(llvm::ArrayRef<std::string> rawArgs) {
  CompileArgs args;
  args.emit.clear();
  if (int rc = parseCompileArgs("compile", rawArgs, args))
    return rc;
  // -o x.mpk implies --emit mpk; otherwise the annotated graph is printed.
  if (args.emit.empty())
    args.emit = llvm::StringRef(args.output).ends_with(".mpk") ? "mpk" : "mp-mlir";
  if (args.emit == "mlir")
    args.emit = "mp-mlir";
  if (args.emit != "mp-mlir" && args.emit != "mpk-mlir" && args.emit != "mpk")
    return usageError("compile: --emit takes mp-mlir, mpk-mlir or mpk, got '" + args.emit + "'");
  if (args.emit == "mpk" && args.output.empty())
    return usageError("compile: --emit mpk needs -o FILE.mpk");
  auto start = std::chrono::steady_clock::now();
  MLIRContext context;
  mixprec::tools::loadDialects(context);
  OwningOpRef<ModuleOp> module = compileModel(context, args);
  if (!module)
    return 1;
  if (args.emit == "mp-mlir")
    return emitModule(*module, args.output);
  if (args.emit == "mpk-mlir") {
    std::string error;
    if (!mixprec::compiler::runKernelPipeline(*module, error))
      return fail(args.model + ": " + error);
    return emitModule(*module, args.output);
  }
  mixprec::codegen::ModuleStats stats;
  if (int rc = writeCompiledModule(*module, args.model, args.output, &stats))
    return rc;
  llvm::errs() << llvm::format(
      "{\"compile_ms\": %.1f, \"kernels\": %lld, \"gemms\": %lld, \"routines\": %lld, "
      "\"arena_bytes\": %lld, \"buffer_bytes\": %lld, \"bytes_moved\": %lld, "
      "\"minimum_bytes\": %lld, \"constant_bytes\": %lld, \"side_file_bytes\": %lld}\n",
      millisecondsSince(start), (long long)stats.kernels, (long long)stats.gemms,
      (long long)stats.routines, (long long)stats.arenaBytes, (long long)stats.bufferBytes,
      (long long)stats.bytesMoved, (long long)stats.minimumBytes, (long long)stats.constantBytes,
      (long long)stats.sideFileBytes);
  return 0;
}

} // namespace

namespace {
int runCommand(const std::vector<std::string> &args) {
  if (args.empty())
    return usageError("no command given");
  const std::string &command = args.front();
  llvm::ArrayRef<std::string> rest = llvm::ArrayRef(args).drop_front();
  if (command == "--version" || command == "version") {
    llvm::outs() << "mixprec " << MIXPREC_VERSION << " (MLIR/LLVM " << MIXPREC_LLVM_VERSION
                 << ")\n";
    return 0;
  }
  if (command == "--help" || command == "-h" || command == "help") {
    llvm::outs() << kUsage;
    return 0;
  }
  if (command == "import")
    return runImport(rest);
  if (command == "run")
    return runRun(rest);
  if (command == "compile")
    return runCompile(rest);
  if (command == "report")
    return runReport(rest);
  if (command == "validate")
    return runValidate(rest);
  return usageError("unknown command '" + command + "'");
}
} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return finishStdout(runCommand(args));
}
