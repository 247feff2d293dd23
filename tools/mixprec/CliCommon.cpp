//===- CliCommon.cpp - pieces shared by the mixprec subcommands ------------===//
#include "tools/mixprec/CliCommon.h"

#include "compiler/Train/Trainer.h"

#include "Version.h"

#include "common/Npy.h"
#include "common/Shapes.h"
#include "compiler/Interpreter/Evaluator.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "common/FileIO.h"
#include "common/Escape.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/AsmState.h"
#include "dialects/Graph/IR/GraphAsm.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>

using namespace mlir;
using mixprec::compiler::GraphSignature;
using mixprec::compiler::HostTensor;
using mixprec::compiler::TensorSpec;

namespace mixprec::tools {
namespace {

/// Converts an .npy array to a host tensor of the kind `spec` needs.
bool tensorFromNpy(const TensorSpec &spec, const std::string &path,
                   const mixprec::support::NpyArray &array, HostTensor &out,
                   std::string &error) {
  return compiler::hostTensorFromNpy(array, compiler::kindOfType(spec.elementType), spec.shape,
                                     path, spec.name, out, error);
}


} // namespace

std::vector<std::string> &commandLine() {
  static std::vector<std::string> args;
  return args;
}

int fail(const std::string &message) {
  llvm::errs() << "mixprec: error: " << common::escapeControls(message) << "\n";
  return 1;
}

int usageError(const std::string &message) {
  llvm::errs() << "mixprec: error: " << common::escapeControls(message) << "\n" << usageText();
  return 2;
}

int DiagnosticCapture::fail(llvm::StringRef subject) const {
  const std::string &error = first.message();
  std::string line = error.empty() ? "failed without a diagnostic" : error;
  int rc = tools::fail(subject.empty() ? line : subject.str() + ": " + line);
  for (const std::string &note : first.notes())
    llvm::errs() << "mixprec: note: " << common::escapeControls(note) << "\n";
  return rc;
}

double millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}


/// Reads `--input NAME=FILE` arrays for the graph inputs, or makes random
/// ones from `seed` when none are given. Fails naming the file or input.
bool loadInputs(func::FuncOp func, const GraphSignature &sig, const NamedFiles &inputFiles,
                uint64_t seed, std::vector<HostTensor> &inputs, std::string &error,
                llvm::StringRef flag) {
  inputs.assign(sig.inputs.size(), HostTensor());
  std::vector<bool> given(sig.inputs.size(), false);
  for (const auto &[name, path] : inputFiles) {
    auto it = std::find_if(sig.inputs.begin(), sig.inputs.end(),
                           [&](const TensorSpec &s) { return s.name == name; });
    if (it == sig.inputs.end()) {
      std::string known;
      for (const TensorSpec &s : sig.inputs)
        known += (known.empty() ? "" : ", ") + s.name;
      error = flag.str() + " " + name + "=" + path + ": the model has no input '" + name +
              "' (its inputs: " + known + ")";
      return false;
    }
    size_t index = it - sig.inputs.begin();
    if (given[index]) {
      error = flag.str() + ": input '" + name + "' given twice";
      return false;
    }
    noteInput(path, flag.str() + " " + name + "=" + path);
    mixprec::support::NpyArray array;
    if (!mixprec::support::readNpy(path, array, error) ||
        !tensorFromNpy(*it, path, array, inputs[index], error))
      return false;
    given[index] = true;
  }
  // A state argument (mp.state) starts from its initial value unless given.
  if (!compiler::initialStates(func, sig, given, inputs, error))
    return false;
  if (!inputFiles.empty())
    for (size_t i = 0; i < sig.inputs.size(); ++i)
      if (!given[i]) {
        error = flag.str() + ": input '" + sig.inputs[i].name +
                "' not given (give every input, or none for random ones)";
        return false;
      }
  compiler::randomInputs(func, sig, given, seed, inputs);
  return true;
}

std::string fileNameFor(const std::string &name) { return compiler::npyFileNameFor(name); }

bool parseUnsigned(llvm::StringRef text, uint64_t &out) {
  // getAsInteger takes "0x"/"0" prefixes; the CLI takes plain decimal.
  if (text.empty() || !llvm::all_of(text, [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  return !text.getAsInteger(10, out);
}

bool planOutputFiles(const std::string &outputDir, const std::vector<std::string> &names,
                     std::vector<std::string> &paths, std::string &error) {
  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir)) {
    error = outputDir + ": cannot create the output folder: " +
            common::writeFailureReason(outputDir + "/", ec.value());
    return false;
  }
  paths.clear();
  llvm::StringSet<> seen;
  for (const std::string &name : names) {
    if (!seen.insert(name).second) {
      paths.push_back("");
      continue;
    }
    llvm::SmallString<256> path(outputDir);
    llvm::sys::path::append(path, fileNameFor(name));
    paths.push_back(path.str().str());
    if (!checkNotAnInput(paths.back(), error))
      return false;
  }
  return true;
}

/// Writes one output tensor as .npy (float32, int64 or bool; int32 for an
/// INT32 output, `int32`: the interpreter holds every integer as int64).
bool writeOutput(const HostTensor &t, const std::string &path, std::string &error, bool int32) {
  using mixprec::support::NpyArray;
  using mixprec::support::NpyDType;
  NpyArray array;
  array.shape = t.shape;
  auto bytesOf = [&](const auto &values, NpyDType dtype) {
    array.dtype = dtype;
    const uint8_t *p = reinterpret_cast<const uint8_t *>(values.data());
    array.data.assign(p, p + values.size() * sizeof(values[0]));
  };
  switch (t.kind) {
  case HostTensor::Kind::Float:
    bytesOf(t.floats, NpyDType::F32);
    break;
  case HostTensor::Kind::Int:
    if (int32) {
      std::vector<int32_t> narrow(t.ints.begin(), t.ints.end()); // in range: i32 values
      bytesOf(narrow, NpyDType::I32);
    } else {
      bytesOf(t.ints, NpyDType::I64);
    }
    break;
  case HostTensor::Kind::Bool:
    bytesOf(t.bools, NpyDType::Bool);
    break;
  }
  return mixprec::support::writeNpy(path, array, error);
}


int emitModule(ModuleOp module, const std::string &output, IrForm form) {
  const bool toStdout = output.empty() || output == "-";
  // Stdout is written as the IR is printed; a file gets it whole, atomically.
  std::string text;
  llvm::raw_string_ostream buffer(text);
  llvm::raw_ostream &os = toStdout ? static_cast<llvm::raw_ostream &>(llvm::outs()) : buffer;
  if (form == IrForm::Bytecode) {
    if (toStdout && llvm::outs().is_displayed())
      return usageError("MLIR bytecode is binary: write it with -o FILE.mlirbc, not to a terminal");
    const std::string producer = std::string("mixprec ") + MIXPREC_VERSION;
    BytecodeWriterConfig config(producer);
    if (failed(writeBytecodeToFile(module, os, config)))
      return fail("cannot write the module as MLIR bytecode");
  } else {
    // Weights are noise to a reader at a terminal, and megabytes of it.
    bool elide = opts::elideWeights() || (toStdout && llvm::outs().is_displayed());
    printModule(module, os, elide);
  }
  if (toStdout)
    return 0;
  return writeTextFile(output, text) ? 0 : 1;
}

namespace {
/// The files the running command reads, with what they are.
std::vector<std::pair<std::string, std::string>> &commandInputs() {
  static std::vector<std::pair<std::string, std::string>> inputs;
  return inputs;
}
} // namespace

void noteInput(const std::string &path, const std::string &what) {
  commandInputs().emplace_back(path, what);
}

bool checkNotAnInput(const std::string &output, std::string &error) {
  for (const auto &[path, what] : commandInputs())
    if (common::sameFile(output, path)) {
      error = output + ": cannot write: it is an input of this command (" + what +
              "); outputs never replace inputs";
      return false;
    }
  return true;
}

bool writeTextFile(const std::string &path, llvm::StringRef text) {
  if (path.empty() || path == "-") {
    llvm::outs() << text;
    return true;
  }
  std::string error;
  if (!checkNotAnInput(path, error) ||
      !common::writeFileAtomically(path, text.data(), text.size(), error)) {
    fail(error);
    return false;
  }
  return true;
}

int finishStdout(int rc) {
  llvm::raw_fd_ostream &out = llvm::outs();
  out.flush();
  if (!out.has_error())
    return rc;
  std::error_code ec = out.error();
  // Cleared, or LLVM would abort with "IO failure on output stream" at exit.
  out.clear_error();
  if (rc == 0 || rc == 3 || rc == 4)
    rc = 1;
  fail("<stdout>: cannot write: " + common::writeFailureReason("<stdout>", ec.value()));
  return rc;
}

namespace {
/// The elements of an integer or float32 array, or false for other dtypes.
bool arrayValues(const support::NpyArray &array, std::vector<int64_t> &ints,
                 std::vector<float> &floats) {
  int64_t n = array.numElements();
  size_t size = support::npyDTypeSize(array.dtype);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t *p = array.data.data() + i * size;
    switch (array.dtype) {
    case support::NpyDType::I64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      ints.push_back(v);
      break;
    }
    case support::NpyDType::I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      ints.push_back(v);
      break;
    }
    case support::NpyDType::I8:
      ints.push_back(static_cast<int8_t>(*p));
      break;
    case support::NpyDType::U8:
      ints.push_back(*p);
      break;
    case support::NpyDType::F32: {
      float v;
      std::memcpy(&v, p, 4);
      floats.push_back(v);
      break;
    }
    default:
      return false; // never a shape, scales or an axis list
    }
  }
  return true;
}
} // namespace

const GivenArrays &givenArrays() {
  // The command line does not change during a run: each file is read once
  // here (the run reads its inputs again when it binds them).
  static const GivenArrays given = [] {
    GivenArrays g;
    // A file that cannot be read is reported where the inputs are loaded;
    // an --input shape wins over a --calibrate one of the same name.
    auto add = [&](const NamedFiles &files, bool values) {
      for (const auto &[name, file] : files) {
        support::NpyArray array;
        std::string error;
        if (!common::whyNotReadable(file).empty() || !support::readNpy(file, array, error))
          continue;
        g.shapes.emplace(name, array.shape);
        if (!values || array.numElements() > kMaxValueElements)
          continue;
        std::vector<int64_t> ints;
        std::vector<float> floats;
        if (!arrayValues(array, ints, floats))
          continue;
        if (array.dtype == support::NpyDType::F32)
          g.floatValues[name] = std::move(floats);
        else
          g.intValues[name] = std::move(ints);
      }
    };
    add(opts::inputs(), /*values=*/true);
    add(opts::calibration(), /*values=*/false);
    return g;
  }();
  return given;
}

namespace {
/// The compile session of the command's model: its --shape sizes, the
/// arrays given (--input, --calibrate), the --calibrate inputs and the
/// precision options. Every file the model reads is noted as an input
/// (no output may replace it) and told to `externalFiles`; the inputs the
/// model was specialised to go to `valuesUsed`.
compiler::SessionOptions sessionOptions(std::vector<std::string> *externalFiles,
                                        std::vector<std::string> *valuesUsed) {
  const std::string &path = opts::model();
  compiler::SessionOptions options;
  options.model = path;
  options.load.onExternalFile = [path, externalFiles](const std::string &file) {
    noteInput(file, "external data of the model " + path);
    if (externalFiles)
      externalFiles->push_back(file);
  };
  options.load.inputShapes = opts::shapes();
  const GivenArrays &given = givenArrays();
  options.load.dataShapes = given.shapes;
  options.load.dataValues = given.intValues;
  options.load.dataFloatValues = given.floatValues;
  options.load.onValueUsed = [valuesUsed](const std::string &name) {
    if (valuesUsed)
      valuesUsed->push_back(name);
  };
  if (!opts::calibration().empty())
    options.calibrationInputs = [](func::FuncOp func) -> FailureOr<std::vector<HostTensor>> {
      std::vector<HostTensor> inputs;
      std::string error;
      if (!loadInputs(func, compiler::getSignature(func), opts::calibration(), 0, inputs, error,
                      "--calibrate")) {
        fail(opts::model() + ": " + error);
        return failure();
      }
      return inputs;
    };
  options.precision = &opts::precision();
  // An annotated graph (compile --emit mp-mlir) keeps its plan, unless a
  // precision was asked for.
  options.existing =
      opts::precisionGiven() ? compiler::ExistingPlan::Refuse : compiler::ExistingPlan::Keep;
  options.precisionError = opts::unknownPrecision();
  return options;
}

/// Prints the error of the session's failed step; returns 1. A load error
/// names the file itself; the calibration inputs printed their own.
int failSession(const compiler::CompileSession &session, const DiagnosticCapture &diagnostics) {
  switch (session.failedStep()) {
  case compiler::SessionStep::Load:
    return diagnostics.fail();
  case compiler::SessionStep::CalibrationInputs:
    return 1;
  default:
    return diagnostics.fail(opts::model());
  }
}
} // namespace

OwningOpRef<ModuleOp> loadModel(CommandContext &command,
                                std::vector<std::string> *externalFiles,
                                std::vector<std::string> *valuesUsed) {
  noteInput(opts::model(), "the model " + opts::model());
  compiler::CompileSession session(command.context, sessionOptions(externalFiles, valuesUsed));
  OwningOpRef<ModuleOp> module = session.load();
  if (!module)
    failSession(session, command.diagnostics);
  return module;
}

func::FuncOp entryFunctionOf(ModuleOp module, const DiagnosticCapture &diagnostics) {
  FailureOr<func::FuncOp> func = compiler::entryFunction(module);
  if (failed(func)) {
    diagnostics.fail(opts::model());
    return nullptr;
  }
  return *func;
}

OwningOpRef<ModuleOp> compileModel(CommandContext &command,
                                   std::vector<std::string> *externalFiles,
                                   std::vector<std::string> *valuesUsed) {
  noteInput(opts::model(), "the model " + opts::model());
  compiler::CompileSession session(command.context, sessionOptions(externalFiles, valuesUsed));
  OwningOpRef<ModuleOp> module = session.plan();
  if (!module)
    failSession(session, command.diagnostics);
  return module;
}

int loadReferenceAndPlan(CommandContext &command, ReferenceAndPlan &out) {
  noteInput(opts::model(), "the model " + opts::model());
  compiler::CompileSession session(command.context, sessionOptions(nullptr, nullptr));
  if (failed(session.referenceAndPlan(out)))
    return failSession(session, command.diagnostics);
  return 0;
}

compiler::PlanInfo planInfo() {
  return {opts::model(), opts::precision().precision, opts::precision().policyFile};
}

} // namespace mixprec::tools
