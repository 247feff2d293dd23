//===- main.cpp - the mixprec command-line tool ----------------------------===//
//
//   mixprec import | compile | run | report | validate | train MODEL [options]
//   mixprec report-run CSV... [--metrics FILE.json] -o FILE.html
//   mixprec --version | --help | COMMAND --help
//
// The commands are llvm::cl subcommands (Options.h). Each calls the compile
// API (compiler/Compile/Compile.h) and prints a failure as one line
// "mixprec: error: ..." naming the file, node or tensor at fault, then the
// notes of its diagnostic ("mixprec: note: ..."); the exit status is 1 (2
// for usage errors).
//
//===----------------------------------------------------------------------===//
#include "Version.h"
#include "codegen/Cuda/NvrtcCompiler.h"
#include "codegen/ModuleWriter.h"
#include "common/Escape.h"
#include "common/Npy.h"
#include "common/Shapes.h"
#include "compiler/Compile/Compile.h"
#include "compiler/Interpreter/Interpreter.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "mixprec/runtime.h"
#include "tools/mixprec/CliCommon.h"
#include "tools/mixprec/Commands.h"
#include "tools/mixprec/JitCache.h"
#include "tools/mixprec/Options.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstring>

using namespace mlir;
using mixprec::compiler::GraphSignature;
using mixprec::compiler::HostTensor;
using mixprec::compiler::TensorSpec;
using namespace mixprec::tools;

namespace {

/// Prints "mixprec VERSION (MLIR/LLVM VERSION)".
void printVersion(llvm::raw_ostream &os) {
  os << "mixprec " << MIXPREC_VERSION << " (MLIR/LLVM " << MIXPREC_LLVM_VERSION << ")\n";
}

/// Whether `-o PATH` asks for MLIR bytecode (`.mlirbc`).
bool isBytecodePath(llvm::StringRef path) { return path.ends_with(".mlirbc"); }

/// `mixprec import MODEL [-o OUT.mlir|OUT.mlirbc]`: the model's mp IR.
int runImport() {
  const std::string &output = opts::output();
  if (opts::elideWeights() && isBytecodePath(output))
    return usageError("import: --elide-weights applies to MLIR text, not to " + output);
  CommandContext command;
  OwningOpRef<ModuleOp> module = loadModel(command);
  if (!module)
    return 1;
  return emitModule(*module, output, isBytecodePath(output) ? IrForm::Bytecode : IrForm::Text);
}

/// Lowers an annotated module to kernels and writes it as .mpk to `path`,
/// with the kernels' CUDA code when `cuda` is given; errors about the graph
/// name the model, errors about files the file.
int writeCompiledModule(ModuleOp module, const std::string &path,
                        const DiagnosticCapture &diagnostics,
                        mixprec::codegen::ModuleStats &stats,
                        const mixprec::codegen::CudaCompileOptions *cuda = nullptr,
                        mixprec::codegen::CudaCompileStats *cudaStats = nullptr) {
  std::string error;
  if (!checkNotAnInput(path, error) ||
      !checkNotAnInput(mixprec::codegen::sideFilePathFor(path), error))
    return fail(error);
  mixprec::codegen::ModuleWriteOptions options;
  options.producer = std::string("mixprec ") + MIXPREC_VERSION;
  FailureOr<mixprec::codegen::ModuleImage> image = mixprec::compiler::buildModule(
      module, mixprec::codegen::sideFileNameFor(path), options, stats, cuda, cudaStats);
  if (failed(image))
    return diagnostics.fail(opts::model());
  if (failed(mixprec::compiler::writeModule(*module.getContext(), path, *image)))
    return diagnostics.fail();
  return 0;
}

//===----------------------------------------------------------------------===//
// mixprec run
//===----------------------------------------------------------------------===//

/// The key of a just-in-time module (JitCache.h): what it depends on,
/// before the model is even read; "" (with `error`) when the model cannot
/// be read.
std::string jitKey(const std::string &cudaArch, std::string &error) {
  std::string model;
  if (!fileFingerprint(opts::model(), model, error))
    return "";
  // The compiler itself: a rebuilt or reinstalled mixprec (same version
  // string, other code) must not reuse what the old one compiled.
  std::string self = llvm::sys::fs::getMainExecutable(nullptr, nullptr), selfStamp = "?";
  llvm::sys::fs::file_status status;
  if (!self.empty() && !llvm::sys::fs::status(self, status))
    selfStamp = std::to_string(status.getSize()) + " " +
                std::to_string(status.getLastModificationTime().time_since_epoch().count());
  std::string key = std::string("mixprec-jit 1\nmixprec ") + MIXPREC_VERSION + " " + selfStamp +
                    "\nmodel " + model +
                    "\ncuda " + (cudaArch.empty() ? "none" : cudaArch) + "\nprecision ";
  llvm::raw_string_ostream os(key);
  opts::precision().print(os);
  auto shapes = [&](const char *what, const std::map<std::string, std::vector<int64_t>> &m) {
    os << "\n" << what;
    for (const auto &[name, dims] : m)
      os << " " << mixprec::common::escapeControls(name) << "="
         << mixprec::shapes::formatShape(dims);
  };
  shapes("shapes", opts::shapes());
  shapes("inputs", givenArrays().shapes);
  os << "\n";
  return key;
}

/// Compiles the model just in time for the shapes at hand and runs it on
/// the runtime's `backend`, as an application would. The module is kept
/// in the cache (JitCache.h): the same model, options and shapes run again
/// compile nothing.
int runJustInTime(Backend backend) {
  auto start = std::chrono::steady_clock::now();
  int smVersion = 0;
  std::string arch = jitCudaArch(backend, smVersion);
  std::string error, why;
  std::string key = jitKey(arch, error);
  if (key.empty())
    return fail(error);
  JitCacheEntry entry;
  bool cached = jitCacheEntry(key, entry, why);
  if (!cached && !why.empty())
    llvm::errs() << "mixprec: warning: the module cache is off: " << why << "\n";
  // The values of the small integer inputs: a module specialised to some
  // (an input the model needs at compile time) is valid for those only.
  const GivenArrays &given = givenArrays();
  ValueStamps stamps;
  for (const auto &[name, v] : given.intValues)
    stamps[name] = valueStamp(v);
  for (const auto &[name, v] : given.floatValues) {
    std::vector<int64_t> bits;
    for (float f : v) {
      uint32_t b;
      std::memcpy(&b, &f, 4);
      bits.push_back(b);
    }
    stamps[name] = "f" + valueStamp(bits);
  }
  mixprec_module_t loaded = nullptr; // the cached module, loaded once on a hit
  bool hit = cached && jitCacheValid(entry, stamps, why, &loaded);
  if (cached && !hit && !why.empty())
    llvm::errs() << "mixprec: warning: cached module " << entry.modulePath << " is not used ("
                 << mixprec::common::escapeControls(why) << "); compiling again\n";

  llvm::SmallString<256> jitDir;
  std::string modulePath = entry.modulePath;
  if (!hit) {
    CommandContext command;
    std::vector<std::string> externalFiles, valuesUsed;
    OwningOpRef<ModuleOp> compiled = compileModel(command, &externalFiles, &valuesUsed);
    if (!compiled)
      return 1;
    // Without a cache, or when the cache cannot take the module, it goes to
    // a temporary folder under the same file name (the module names its
    // side file by it): a cache fault is a warning, never the run's failure.
    auto useTemporaryFolder = [&]() -> bool {
      if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("mixprec-jit", jitDir))
        return fail("cannot create a temporary directory: " + ec.message()), false;
      llvm::SmallString<256> path(jitDir);
      llvm::sys::path::append(path, cached ? llvm::sys::path::filename(entry.modulePath)
                                           : llvm::StringRef("jit.mpk"));
      modulePath = std::string(path);
      return true;
    };
    if (!cached && !useTemporaryFolder())
      return 1;
    mixprec::codegen::ModuleStats stats;
    mixprec::codegen::CudaCompileOptions cuda = cudaCompileOptions(smVersion);
    mixprec::codegen::CudaCompileStats cudaStats;
    const bool withCuda = !arch.empty();
    mixprec::codegen::ModuleWriteOptions options;
    options.producer = std::string("mixprec ") + MIXPREC_VERSION;
    FailureOr<mixprec::codegen::ModuleImage> image = mixprec::compiler::buildModule(
        *compiled, mixprec::codegen::sideFileNameFor(modulePath), options, stats,
        withCuda ? &cuda : nullptr, withCuda ? &cudaStats : nullptr);
    if (failed(image))
      return command.diagnostics.fail(opts::model());
    bool written = mixprec::codegen::writeModuleFiles(modulePath, *image, error);
    if (!written && cached) {
      llvm::errs() << "mixprec: warning: the module cache is off for this run: "
                   << mixprec::common::escapeControls(error) << "\n";
      cached = false;
      if (!useTemporaryFolder())
        return 1;
      written = mixprec::codegen::writeModuleFiles(modulePath, *image, error);
    }
    if (!written) {
      if (!jitDir.empty())
        llvm::sys::fs::remove_directories(jitDir);
      return fail(error);
    }
    ValueStamps used;
    for (const std::string &name : valuesUsed)
      used[name] = stamps[name];
    if (cached && !jitCacheCommit(entry, externalFiles, used, error))
      llvm::errs() << "mixprec: warning: the module cache: " << error << "\n";
  }
  double compileMs = millisecondsSince(start);
  if (opts::time())
    llvm::errs() << llvm::format("{\"jit_cache\": \"%s\", \"compile_ms\": %.3f}\n",
                                 hit ? "hit" : cached ? "miss" : "off", compileMs);
  int rc = runCompiledModule(modulePath, opts::model(), opts::inputs(), opts::seed(),
                             opts::backendName(backend).str(), opts::outputDir(), opts::repeat(),
                             opts::time(), loaded);
  if (!jitDir.empty())
    llvm::sys::fs::remove_directories(jitDir);
  return rc;
}

/// The graph the interpreter runs: as imported, or with --precision its
/// mixed plan (the interpreter rounds where the IR says). Null after
/// printing the error.
OwningOpRef<ModuleOp> loadForInterpreter(CommandContext &command) {
  if (opts::precisionGiven())
    return compileModel(command);
  return loadModel(command);
}

/// Fails when two different values share an output name: one name, one
/// file (the compiled path refuses them too).
int checkOutputNames(func::FuncOp func, const GraphSignature &sig) {
  Operation *ret = func.getBody().front().getTerminator();
  for (size_t i = 0; i < sig.outputs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (sig.outputs[i].name == sig.outputs[j].name && ret->getOperand(i) != ret->getOperand(j))
        return fail(opts::model() + ": outputs #" + std::to_string(j) + " and #" +
                    std::to_string(i) + " are different values with the same name '" +
                    sig.outputs[i].name + "'");
  return 0;
}

/// Writes NAME.npy per graph output into --output-dir.
int writeOutputs(const GraphSignature &sig, const std::vector<HostTensor> &outputs) {
  std::vector<std::string> names, paths;
  for (const TensorSpec &spec : sig.outputs)
    names.push_back(spec.name);
  std::string error;
  if (!planOutputFiles(opts::outputDir(), names, paths, error))
    return fail(error);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (paths[i].empty())
      continue;
    if (!writeOutput(outputs[i], paths[i], error, sig.outputs[i].elementType.isInteger(32)))
      return fail(error);
    llvm::outs() << "wrote " << paths[i] << "  (" << sig.outputs[i].name << ", "
                 << mixprec::shapes::formatShape(outputs[i].shape) << ")\n";
  }
  return 0;
}

/// Module state on the interpreter (GraphBase.td, mp.state): a state
/// argument starts from its mp.state_init (loadInputs), each --repeat run
/// from the previous run's update, and the updates are written as outputs.
/// A state argument or update result without an mp.name is named after
/// its state. Returns (argument, result) per state.
std::vector<std::pair<size_t, size_t>> nameStates(func::FuncOp func, GraphSignature &sig) {
  using mixprec::graph::GraphDialect;
  std::vector<std::pair<size_t, size_t>> states;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto name = func.getArgAttrOfType<StringAttr>(i, GraphDialect::kStateAttr);
    if (!name)
      continue;
    if (!func.getArgAttr(i, GraphDialect::kNameAttr))
      sig.inputs[i].name = name.str();
    for (unsigned r = 0; r < func.getNumResults(); ++r)
      if (func.getResultAttr(r, GraphDialect::kStateUpdateAttr) == name) {
        if (!func.getResultAttr(r, GraphDialect::kNameAttr))
          sig.outputs[r].name = name.str();
        states.push_back({i, r});
      }
  }
  return states;
}

/// Prints the --time line of an interpreter run.
void printTimes(double importMs, double prepareMs, std::vector<double> runMs) {
  std::sort(runMs.begin(), runMs.end());
  llvm::errs() << llvm::format(
      "{\"import_ms\": %.3f, \"prepare_ms\": %.3f, \"run_ms_median\": %.3f, "
      "\"run_ms_min\": %.3f, \"repeat\": %d}\n",
      importMs, prepareMs, runMs[runMs.size() / 2], runMs.front(), (int)runMs.size());
}

/// Runs the model --repeat times on the CPU reference interpreter.
int runOnInterpreter() {
  auto importStart = std::chrono::steady_clock::now();
  CommandContext command;
  OwningOpRef<ModuleOp> module = loadForInterpreter(command);
  if (!module)
    return 1;
  func::FuncOp func = entryFunctionOf(*module, command.diagnostics);
  if (!func)
    return 1;
  double importMs = millisecondsSince(importStart);
  GraphSignature sig = mixprec::compiler::getSignature(func);
  std::vector<std::pair<size_t, size_t>> states = nameStates(func, sig);
  if (int rc = checkOutputNames(func, sig))
    return rc;
  std::vector<HostTensor> inputs, outputs;
  std::string error;
  if (!loadInputs(func, sig, opts::inputs(), opts::seed(), inputs, error))
    return fail(error);
  mixprec::compiler::Interpreter interpreter(func);
  auto prepareStart = std::chrono::steady_clock::now();
  if (!interpreter.prepare(error))
    return fail(opts::model() + ": " + error);
  double prepareMs = millisecondsSince(prepareStart);
  std::vector<double> runMs;
  for (int r = 0; r < opts::repeat(); ++r) {
    auto runStart = std::chrono::steady_clock::now();
    if (!interpreter.run(inputs, outputs, error))
      return fail(opts::model() + ": " + error);
    runMs.push_back(millisecondsSince(runStart));
    for (auto [arg, result] : states) // the next run starts from the updated state
      inputs[arg] = outputs[result];
  }
  if (opts::time())
    printTimes(importMs, prepareMs, runMs);
  return writeOutputs(sig, outputs);
}

/// `mixprec run MODEL ...`: an .mpk on the runtime; an .onnx compiled just
/// in time (or on the interpreter); an .mlir on the interpreter.
int runRun() {
  const std::string &model = opts::model();
  if (llvm::StringRef(model).ends_with(".mpk")) {
    if (opts::precisionGiven())
      return usageError("run: --precision applies to models compiled just in time; " + model +
                        " is a compiled module, whose plan `mixprec compile` fixed");
    return runCompiledModule(model, model, opts::inputs(), opts::seed(),
                             opts::backend() == Backend::Default
                                 ? ""
                                 : opts::backendName(opts::backend()).str(),
                             opts::outputDir(), opts::repeat(), opts::time());
  }
  // ONNX models compile just in time by default; mp IR runs on the
  // reference interpreter unless a runtime backend is asked for.
  Backend backend = opts::backend();
  if (backend == Backend::Default)
    backend = llvm::StringRef(model).ends_with(".onnx") ? Backend::Auto : Backend::Interpreter;
  if (!opts::precisionGiven())
    opts::precision().precision = mixprec::passes::Precision::FP32; // run's default
  if (backend == Backend::Interpreter)
    return runOnInterpreter();
  return runJustInTime(backend);
}

//===----------------------------------------------------------------------===//
// mixprec compile
//===----------------------------------------------------------------------===//

/// Prints the statistics of a written module (JSON) on stderr; with CUDA
/// code (`cuda`), what its compilation did too.
void printModuleStats(const mixprec::codegen::ModuleStats &stats, double compileMs,
                      const mixprec::codegen::CudaCompileStats *cuda) {
  llvm::errs() << llvm::format(
      "{\"compile_ms\": %.1f, \"kernels\": %lld, \"gemms\": %lld, \"routines\": %lld, "
      "\"arena_bytes\": %lld, \"buffer_bytes\": %lld, \"bytes_moved\": %lld, "
      "\"minimum_bytes\": %lld, \"constant_bytes\": %lld, \"side_file_bytes\": %lld",
      compileMs, (long long)stats.kernels, (long long)stats.gemms, (long long)stats.routines,
      (long long)stats.arenaBytes, (long long)stats.bufferBytes, (long long)stats.bytesMoved,
      (long long)stats.minimumBytes, (long long)stats.constantBytes,
      (long long)stats.sideFileBytes);
  if (cuda)
    llvm::errs() << llvm::format(", \"cuda_kernels\": %lld, \"nvrtc_compiles\": %lld, "
                                 "\"cache_hits\": %lld",
                                 (long long)cuda->kernels, (long long)cuda->nvrtcCompiles,
                                 (long long)cuda->cacheHits);
  llvm::errs() << "}\n";
}

/// Writes the kernels' CUDA C++ (--emit cuda) or, with `cuda`, their PTX
/// (--emit ptx) to -o or stdout.
int emitCudaCode(ModuleOp module, CommandContext &command,
                 const mixprec::codegen::CudaCompileOptions *cuda) {
  if (failed(mixprec::compiler::compileKernels(module)))
    return command.diagnostics.fail(opts::model());
  mixprec::codegen::CudaCompileStats stats;
  FailureOr<mixprec::codegen::CudaModuleCode> code =
      mixprec::compiler::compileCuda(module, cuda, stats);
  if (failed(code))
    return command.diagnostics.fail(opts::model());
  return writeTextFile(opts::output(), cuda ? code->ptx : code->source) ? 0 : 1;
}

/// `mixprec compile MODEL ...`: the annotated graph, its kernel IR or a module.
int runCompile() {
  const std::string &output = opts::output();
  // -o x.mpk implies --emit mpk, -o x.mlirbc mp-mlirbc; otherwise the
  // annotated graph is printed.
  Emit emit = opts::emit();
  if (emit == Emit::Default)
    emit = llvm::StringRef(output).ends_with(".mpk") ? Emit::Mpk
           : isBytecodePath(output)                  ? Emit::MpMlirbc
                                                     : Emit::MpMlir;
  if (emit == Emit::Mpk && output.empty())
    return usageError("compile: --emit mpk needs -o FILE.mpk");
  const bool printsIr = emit == Emit::MpMlir || emit == Emit::MpkMlir;
  if (opts::elideWeights() && !printsIr)
    return usageError("compile: --elide-weights applies to --emit mp-mlir and mpk-mlir (IR "
                      "printed for reading), not to a file meant to run");
  const std::string &arch = opts::arch();
  if (!arch.empty() && (printsIr || emit == Emit::MpMlirbc))
    return usageError(std::string("compile: --arch applies to --emit mpk, cuda and ptx, not ") +
                      (emit == Emit::MpMlir     ? "mp-mlir"
                       : emit == Emit::MpMlirbc ? "mp-mlirbc"
                                                : "mpk-mlir"));
  // --emit ptx without --arch: sm_90, the H100/H200 mixprec targets first.
  int smVersion = 90;
  std::string archError;
  if (!arch.empty() && !mixprec::codegen::parseCudaArch(arch, smVersion, archError))
    return fail(archError);
  mixprec::codegen::CudaCompileOptions cuda = cudaCompileOptions(smVersion);
  auto start = std::chrono::steady_clock::now();
  CommandContext command;
  OwningOpRef<ModuleOp> module = compileModel(command);
  if (!module)
    return 1;
  if (emit == Emit::MpMlir || emit == Emit::MpMlirbc)
    return emitModule(*module, output, emit == Emit::MpMlirbc ? IrForm::Bytecode : IrForm::Text);
  if (emit == Emit::MpkMlir) {
    if (failed(mixprec::compiler::compileKernels(*module)))
      return command.diagnostics.fail(opts::model());
    return emitModule(*module, output);
  }
  if (emit == Emit::Cuda || emit == Emit::Ptx)
    return emitCudaCode(*module, command, emit == Emit::Ptx ? &cuda : nullptr);
  mixprec::codegen::ModuleStats stats;
  mixprec::codegen::CudaCompileStats cudaStats;
  const bool withCuda = !arch.empty();
  if (int rc = writeCompiledModule(*module, output, command.diagnostics, stats,
                                   withCuda ? &cuda : nullptr, &cudaStats))
    return rc;
  printModuleStats(stats, millisecondsSince(start), withCuda ? &cudaStats : nullptr);
  return 0;
}

/// Runs a parsed command; returns its exit status.
int runCommand(Command command) {
  switch (command) {
  case Command::Import:
    return runImport();
  case Command::Compile:
    return runCompile();
  case Command::Run:
    return runRun();
  case Command::Report:
    return runReport();
  case Command::Validate:
    return runValidate();
  case Command::Train:
    return runTrain();
  case Command::ReportRun:
    return runReportRun();
  }
  return 1;
}

/// Runs the command line; returns the exit status.
int runMixprec(int argc, char **argv) {
  commandLine().assign(argv, argv + argc);
  if (argc < 2)
    return usageError("no command given");
  llvm::StringRef first = argv[1];
  if (first == "--version" || first == "version") {
    printVersion(llvm::outs());
    return 0;
  }
  if (first == "--help" || first == "-h" || first == "help") {
    llvm::outs() << usageText();
    return 0;
  }
  std::optional<Command> command = findCommand(first);
  if (!command)
    return usageError("unknown command '" + first.str() + "'");
  if (printHelpIfAsked(*command, argc, argv))
    return 0;
  if (int rc = parseCommandLine(*command, argc, argv))
    return rc;
  return runCommand(*command);
}

} // namespace

namespace mixprec::tools {

/// The NVRTC options of compile's --arch (`smVersion`); kernel cache
/// warnings are printed as "mixprec: warning: ..." lines.
codegen::CudaCompileOptions cudaCompileOptions(int smVersion) {
  mixprec::codegen::CudaCompileOptions options;
  options.smVersion = smVersion;
  options.breakKernel = opts::cudaTestBreakKernel();
  options.warn = [](const std::string &message) {
    llvm::errs() << "mixprec: warning: " << mixprec::common::escapeControls(message) << "\n";
  };
  return options;
}

/// The CUDA architecture a just-in-time module gets code for on `backend`:
/// the device's (cuda, or auto with a device), else none ("").
std::string jitCudaArch(Backend backend, int &smVersion) {
  if (backend != Backend::Cuda && backend != Backend::Auto)
    return "";
  std::string note;
  std::string arch = compiler::deviceCudaArch(smVersion, note);
  // Without a device the module has no CUDA code and the runtime says why
  // CUDA is not there.
  if (!note.empty())
    llvm::errs() << "mixprec: note: " << note << "; the module gets no CUDA code\n";
  return arch;
}

} // namespace mixprec::tools

int main(int argc, char **argv) {
  llvm::cl::SetVersionPrinter(printVersion);
  return finishStdout(runMixprec(argc, argv));
}
