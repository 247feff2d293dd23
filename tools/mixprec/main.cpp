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
#include "compiler/Interpreter/Interpreter.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"
#include "runtime/src/support/Npy.h"
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

namespace {

constexpr const char *kUsage = R"(usage:
  mixprec import MODEL.onnx [-o OUT.mlir]
      Import an ONNX model and print its mp graph IR (or write it to OUT).
  mixprec run MODEL [--input NAME=FILE.npy]... [--output-dir DIR] [--seed N]
              [--repeat N] [--time]
      Run MODEL (.onnx or .mlir) on the CPU reference interpreter and write
      <output name>.npy per graph output into DIR (default: .). Without
      --input, every input is random (normal floats, valid indices) from the
      seed (default 0). --repeat runs N times; --time prints import and run
      times to stderr.
  mixprec --version
)";

int fail(const std::string &message) {
  llvm::errs() << "mixprec: error: " << message << "\n";
  return 1;
}

int usageError(const std::string &message) {
  llvm::errs() << "mixprec: error: " << message << "\n" << kUsage;
  return 2;
}

double millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Prints IR with op locations (node names), so they survive a round trip.
void printModule(ModuleOp module, llvm::raw_ostream &os) {
  OpPrintingFlags flags;
  flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  flags.elideLargeElementsAttrs(std::numeric_limits<int64_t>::max());
  module.print(os, flags);
  os << "\n";
}

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
  if (output.empty()) {
    printModule(*module, llvm::outs());
    return 0;
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(output, ec);
  if (ec)
    return fail(output + ": cannot write: " + ec.message());
  printModule(*module, os);
  return 0;
}

/// Converts an .npy array to a host tensor of the kind `spec` needs.
bool tensorFromNpy(const TensorSpec &spec, const std::string &path,
                   const mixprec::support::NpyArray &array, HostTensor &out,
                   std::string &error) {
  using mixprec::support::NpyDType;
  out.shape = array.shape;
  if (array.shape != spec.shape) {
    error = path + ": input '" + spec.name + "' has shape " +
            mixprec::graph::formatShape(array.shape) + ", the model expects " +
            mixprec::graph::formatShape(spec.shape);
    return false;
  }
  int64_t n = array.numElements();
  auto readInts = [&](auto tag) {
    using T = decltype(tag);
    const T *p = reinterpret_cast<const T *>(array.data.data());
    out.ints.assign(p, p + n);
  };
  if (spec.elementType.isInteger(1)) {
    if (array.dtype != NpyDType::Bool && array.dtype != NpyDType::U8) {
      error = path + ": input '" + spec.name + "' must be a bool array";
      return false;
    }
    out.kind = HostTensor::Kind::Bool;
    out.bools.assign(array.data.begin(), array.data.end());
    for (uint8_t &b : out.bools)
      b = b != 0;
    return true;
  }
  if (isa<IntegerType>(spec.elementType)) {
    out.kind = HostTensor::Kind::Int;
    switch (array.dtype) {
    case NpyDType::I64:
      readInts(int64_t{});
      return true;
    case NpyDType::I32:
      readInts(int32_t{});
      return true;
    case NpyDType::I8:
      readInts(int8_t{});
      return true;
    case NpyDType::U8:
      readInts(uint8_t{});
      return true;
    default:
      error = path + ": input '" + spec.name + "' must be an integer array";
      return false;
    }
  }
  out.kind = HostTensor::Kind::Float;
  if (array.dtype != NpyDType::F32 && array.dtype != NpyDType::F64 &&
      array.dtype != NpyDType::F16) {
    error = path + ": input '" + spec.name + "' must be a float array, got dtype " +
            mixprec::support::npyDTypeDescr(array.dtype);
    return false;
  }
  return mixprec::support::npyToFloat32(array, out.floats, error);
}

/// The size of the table a gather reads with this input, or 0 if none.
int64_t gatherRange(func::FuncOp func, unsigned argIndex) {
  Value arg = func.getArgument(argIndex);
  for (Operation *user : arg.getUsers())
    if (auto gather = dyn_cast<mixprec::graph::GatherOp>(user))
      if (gather.getIndices() == arg)
        return cast<RankedTensorType>(gather.getData().getType()).getShape()[gather.getAxis()];
  return 0;
}

/// Random input for `spec`: normal floats, indices valid for their gather.
HostTensor randomInput(const TensorSpec &spec, int64_t indexRange, std::mt19937_64 &rng) {
  HostTensor t;
  t.shape = spec.shape;
  int64_t n = t.numElements();
  if (spec.elementType.isInteger(1)) {
    t.kind = HostTensor::Kind::Bool;
    std::bernoulli_distribution coin(0.5);
    for (int64_t i = 0; i < n; ++i)
      t.bools.push_back(coin(rng));
  } else if (isa<IntegerType>(spec.elementType)) {
    t.kind = HostTensor::Kind::Int;
    std::uniform_int_distribution<int64_t> pick(0, std::max<int64_t>(indexRange, 2) - 1);
    for (int64_t i = 0; i < n; ++i)
      t.ints.push_back(pick(rng));
  } else {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t i = 0; i < n; ++i)
      t.floats.push_back(normal(rng));
  }
  return t;
}

/// Turns a graph output name into a file name (ONNX names may hold '/').
std::string fileNameFor(const std::string &name) {
  std::string s = name;
  for (char &c : s)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      c = '_';
  if (s.empty() || s[0] == '.')
    s = "_" + s;
  return s + ".npy";
}

/// Writes one output tensor as .npy (float32, int64 or bool).
bool writeOutput(const HostTensor &t, const std::string &path, std::string &error) {
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
    bytesOf(t.ints, NpyDType::I64);
    break;
  case HostTensor::Kind::Bool:
    bytesOf(t.bools, NpyDType::Bool);
    break;
  }
  return mixprec::support::writeNpy(path, array, error);
}

int runRun(llvm::ArrayRef<std::string> args) {
  std::string model, outputDir = ".";
  std::vector<std::pair<std::string, std::string>> inputFiles;
  uint64_t seed = 0;
  int repeat = 1;
  bool time = false;
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
    } else if ((a == "--seed" || a == "--repeat") && hasValue) {
      const std::string &v = args[++i];
      char *end = nullptr;
      unsigned long long parsed = strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || (a == "--repeat" && (parsed < 1 || parsed > 100000)))
        return usageError("run: " + a + " takes a positive integer, got '" + v + "'");
      if (a == "--seed")
        seed = parsed;
      else
        repeat = static_cast<int>(parsed);
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

  auto importStart = std::chrono::steady_clock::now();
  MLIRContext context;
  mixprec::tools::loadDialects(context);
  std::string error;
  OwningOpRef<ModuleOp> module = mixprec::tools::loadModel(context, model, error);
  if (!module)
    return fail(error);
  func::FuncOp func = mixprec::compiler::findEntryFunction(*module, error);
  if (!func)
    return fail(model + ": " + error);
  double importMs = millisecondsSince(importStart);
  GraphSignature sig = mixprec::compiler::getSignature(func);

  std::vector<HostTensor> inputs(sig.inputs.size());
  std::vector<bool> given(sig.inputs.size(), false);
  for (const auto &[name, path] : inputFiles) {
    auto it = std::find_if(sig.inputs.begin(), sig.inputs.end(),
                           [&](const TensorSpec &s) { return s.name == name; });
    if (it == sig.inputs.end()) {
      std::string known;
      for (const TensorSpec &s : sig.inputs)
        known += (known.empty() ? "" : ", ") + s.name;
      return fail("--input " + name + "=" + path + ": the model has no input '" + name +
                  "' (its inputs: " + known + ")");
    }
    size_t index = it - sig.inputs.begin();
    if (given[index])
      return fail("--input: input '" + name + "' given twice");
    mixprec::support::NpyArray array;
    if (!mixprec::support::readNpy(path, array, error) ||
        !tensorFromNpy(*it, path, array, inputs[index], error))
      return fail(error);
    given[index] = true;
  }
  if (!inputFiles.empty())
    for (size_t i = 0; i < sig.inputs.size(); ++i)
      if (!given[i])
        return fail("input '" + sig.inputs[i].name +
                    "' not given (give every input with --input, or none for random ones)");
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < sig.inputs.size(); ++i)
    if (!given[i])
      inputs[i] = randomInput(sig.inputs[i], gatherRange(func, i), rng);

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

  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
    return fail(outputDir + ": cannot create output directory: " + ec.message());
  for (size_t i = 0; i < outputs.size(); ++i) {
    llvm::SmallString<256> path(outputDir);
    llvm::sys::path::append(path, fileNameFor(sig.outputs[i].name));
    if (!writeOutput(outputs[i], path.str().str(), error))
      return fail(error);
    llvm::outs() << "wrote " << path << "  (" << sig.outputs[i].name << ", "
                 << mixprec::graph::formatShape(outputs[i].shape) << ")\n";
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
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
  return usageError("unknown command '" + command + "'");
}
