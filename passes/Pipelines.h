//===- Pipelines.h - the registered mixprec pass pipelines ------*- C++ -*-===//
//
// The pass sequences `mixprec compile` runs, registered with MLIR so that
// `mixprec-opt --mp-precision-pipeline=...` and `--mp-kernel-pipeline`
// reproduce the tool exactly (tests/lit/cli/pipeline.test compares them).
//
// PrecisionPipelineOptions declares the precision options once. The same
// option objects are the options of --mp-precision-pipeline and the flags
// of `mixprec compile`, `report`, `validate` (and `run`'s --precision):
// the tool registers them in its subcommands, so its command line parses
// straight into this struct. A policy file's keys are their names with '_'
// for '-' (PolicyFile.cpp). Bad values are refused when parsed, by the
// parsers below, in the words the tool prints. The passes the pipeline
// runs keep their own options (Passes.td: `mixprec-opt --mp-assign-precision=
// ...` runs one pass); buildPrecisionPipeline binds these to them, and
// tests/unit/passes/PrecisionOptionsTest.cpp fails if a pass option has no
// pipeline option of its name, another default, or is not bound.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_PASSES_PIPELINES_H
#define MIXPREC_PASSES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <optional>
#include <string>

namespace mixprec::passes {

/// The precisions a graph is compiled at.
enum class Precision { FP32, TF32, BF16, FP16, FP8 };

/// The name of a precision in options, policy files and reports ("bf16"),
/// as the cl::values of PrecisionPipelineOptions::precision give it.
llvm::StringRef precisionName(Precision precision);

/// Every precision's name, "fp32, tf32, bf16, fp16 or fp8" (`last` between
/// the last two).
std::string precisionNames(llvm::StringRef last = " or ");

//===----------------------------------------------------------------------===//
// Option values
//===----------------------------------------------------------------------===//

/// Reports a bad option value and returns true (llvm::cl's "error"). By
/// default as llvm::cl reports it ("PROG: for the --NAME option: MESSAGE"
/// on stderr); while a ScopedOptionErrorHandler lives, to its handler.
bool reportOptionError(const llvm::cl::Option &option, llvm::StringRef argName,
                       const llvm::Twine &message);

/// Routes bad option values to `handler` while alive, so that a tool that
/// prints its own error lines (mixprec) formats them.
class ScopedOptionErrorHandler {
public:
  using Handler =
      std::function<void(const llvm::cl::Option &, llvm::StringRef argName, const std::string &)>;
  explicit ScopedOptionErrorHandler(Handler handler);
  ~ScopedOptionErrorHandler();

private:
  Handler handler;
  Handler *previous;
};

/// The whole of `text` as a number (as strtod reads it), if it is one.
std::optional<double> parseNumber(llvm::StringRef text);

/// A number in a range: `Range::contains(x)` says whether it is, and
/// `Range::kWhat` what it takes ("a positive number") when it is not.
template <typename Range> struct NumberParser : llvm::cl::parser<double> {
  using parser::parser;
  bool parse(llvm::cl::Option &option, llvm::StringRef argName, llvm::StringRef arg,
             double &value) {
    std::optional<double> number = parseNumber(arg);
    if (!number || !Range::contains(*number))
      return reportOptionError(option, argName,
                               llvm::Twine("takes ") + Range::kWhat + ", got '" + arg + "'");
    value = *number;
    return false;
  }
};

/// The numbers > 0.
struct PositiveNumbers {
  static constexpr const char *kWhat = "a positive number";
  static bool contains(double x) { return x > 0; }
};
using PositiveNumberParser = NumberParser<PositiveNumbers>;

/// A whole decimal number in [lo, hi] ("takes an integer in [0, 64], got 'X'").
template <int Lo, int Hi> struct IntegerInRangeParser : llvm::cl::parser<int> {
  using parser::parser;
  bool parse(llvm::cl::Option &option, llvm::StringRef argName, llvm::StringRef arg,
             int &value) {
    long long parsed = 0;
    if (arg.empty() || arg.getAsInteger(10, parsed) || parsed < Lo || parsed > Hi)
      return reportOptionError(option, argName,
                               "takes an integer in [" + llvm::Twine(Lo) + ", " +
                                   llvm::Twine(Hi) + "], got '" + arg + "'");
    value = static_cast<int>(parsed);
    return false;
  }
};

/// A boolean: true or false (1, 0; no value means true).
struct FlagParser : llvm::cl::parser<bool> {
  using parser::parser;
  bool parse(llvm::cl::Option &option, llvm::StringRef argName, llvm::StringRef arg,
             bool &value);
};

/// An enumeration given by cl::values, plus hidden other spellings
/// (`aliases`); a bad value reads "takes A, B or C, got 'X'".
template <typename T> struct EnumParser : llvm::cl::parser<T> {
  using llvm::cl::parser<T>::parser;
  llvm::StringMap<T> aliases;

  /// The name cl::values gives `value` ("" if none).
  llvm::StringRef nameOf(T value) const {
    for (const auto &info : this->Values)
      if (info.V.getValue() == value)
        return info.Name;
    return "";
  }

  /// The names, "A, B or C" (`last` between the last two).
  std::string nameList(llvm::StringRef last = " or ") const {
    std::string names;
    for (size_t i = 0, e = this->Values.size(); i != e; ++i)
      names += (i == 0 ? "" : i + 1 == e ? last.str() : ", ") + this->Values[i].Name.str();
    return names;
  }

  /// The value `arg` names, if it names one.
  std::optional<T> lookup(llvm::StringRef arg) const {
    if (auto it = aliases.find(arg); it != aliases.end())
      return it->second;
    for (const auto &info : this->Values)
      if (info.Name == arg)
        return info.V.getValue();
    return std::nullopt;
  }

  bool parse(llvm::cl::Option &option, llvm::StringRef argName, llvm::StringRef arg, T &value) {
    if (std::optional<T> named = lookup(arg)) {
      value = *named;
      return false;
    }
    return reportOptionError(option, argName, "takes " + nameList() + ", got '" + arg + "'");
  }
};

/// A precision: fp32, tf32, bf16, fp16 or fp8 (the cl::values of the
/// option); f32, f16, e4m3 and f8E4M3FN are accepted as other spellings.
struct PrecisionParser : EnumParser<Precision> {
  PrecisionParser(llvm::cl::Option &option);
  bool parse(llvm::cl::Option &option, llvm::StringRef argName, llvm::StringRef arg,
             Precision &value);
  /// Prints a value as a pass pipeline option ("precision=bf16").
  static void print(llvm::raw_ostream &os, Precision value) { os << precisionName(value); }
};

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

/// The precision options: what --mp-precision-pipeline takes, under the
/// names `mixprec compile` gives its flags.
struct PrecisionPipelineOptions : public mlir::PassPipelineOptions<PrecisionPipelineOptions> {
  Option<Precision, PrecisionParser> precision{
      *this, "precision", llvm::cl::desc("The precision GEMM-class ops run in"),
      llvm::cl::init(Precision::BF16),
      llvm::cl::values(clEnumValN(Precision::FP32, "fp32", "FP32 (no mixed precision)"),
                       clEnumValN(Precision::TF32, "tf32", "TF32 GEMM operands"),
                       clEnumValN(Precision::BF16, "bf16", "BF16"),
                       clEnumValN(Precision::FP16, "fp16", "FP16"),
                       clEnumValN(Precision::FP8, "fp8",
                                  "FP8 E4M3 GEMMs with per-tensor scales, BF16 elsewhere"))};
  Option<bool, FlagParser> keepIoTypes{
      *this, "keep-io-types", llvm::cl::desc("Graph inputs and outputs keep their dtypes"),
      llvm::cl::init(true)};
  ListOption<std::string> keepFp32{
      *this, "keep-fp32",
      llvm::cl::desc("Op types (softmax, mp.matmul) or op-name globs kept in FP32 "
                     "(comma-separated, repeatable)"),
      llvm::cl::value_desc("TYPE|GLOB")};
  ListOption<std::string> force{
      *this, "force",
      llvm::cl::desc("GLOB:DTYPE: ops whose type or name matches GLOB run in DTYPE "
                     "(fp32, tf32, bf16, fp16, fp8; repeatable)"),
      llvm::cl::value_desc("GLOB:DTYPE")};
  Option<std::string> policyFile{
      *this, "policy", llvm::cl::desc("A JSON policy file with the same settings (its keys: "
                                      "these names with '_' for '-'); it wins over flags"),
      llvm::cl::value_desc("FILE.json")};
  Option<double, PositiveNumberParser> fp16Margin{
      *this, "fp16-margin",
      llvm::cl::desc("Leave FP16 when calibrated amax * margin > 65504"), llvm::cl::init(2.0)};
  Option<double, PositiveNumberParser> underflowThreshold{
      *this, "underflow-threshold",
      llvm::cl::desc("Leave FP16 when this share of calibrated non-zero values is below "
                     "6.1e-5"),
      llvm::cl::init(0.5)};
  Option<std::string> overflowFallback{
      *this, "overflow-fallback",
      llvm::cl::desc("Where ops that FP16 cannot hold go: bf16 or fp32"), llvm::cl::init("bf16")};
  Option<std::string> fp8Scaling{
      *this, "fp8-scaling",
      llvm::cl::desc("FP8 activation scales: current, delayed (amax history in module "
                     "state), static (from --calibrate) or auto (static where calibrated)"),
      llvm::cl::init("auto")};
  Option<std::string> fp8Format{
      *this, "fp8-format",
      llvm::cl::desc("FP8 formats: hybrid (gradients f8E5M2, the rest f8E4M3FN) or e4m3"),
      llvm::cl::init("hybrid")};
  Option<int, IntegerInRangeParser<1, 1 << 20>> amaxHistory{
      *this, "fp8-amax-history", llvm::cl::desc("Delayed FP8 scaling: amax history length"),
      llvm::cl::init(1024)};
  Option<std::string> amaxAlgo{
      *this, "fp8-amax-algo",
      llvm::cl::desc("Delayed FP8 scaling: scale from the history's max or the most-recent amax"),
      llvm::cl::init("max")};
  Option<int, IntegerInRangeParser<0, 64>> fp8Margin{
      *this, "fp8-margin", llvm::cl::desc("FP8 scale margin: scales are divided by 2^N"),
      llvm::cl::init(0)};

  /// Makes these options (or only those named in `only`) options of a
  /// tool's subcommand too, parsed straight into this struct.
  void addToSubCommand(llvm::cl::SubCommand &sub, llvm::ArrayRef<llvm::StringRef> only = {});
};

/// canonicalize, --mp-assign-precision, --mp-insert-casts,
/// --mp-insert-scaling, --mp-fold-casts on every function.
void buildPrecisionPipeline(mlir::OpPassManager &pm, const PrecisionPipelineOptions &options);

/// --mp-fuse, --mp-lower-to-kernels, --mp-plan-memory on every function.
void buildKernelPipeline(mlir::OpPassManager &pm);

/// Registers --mp-precision-pipeline and --mp-kernel-pipeline.
void registerMixprecPipelines();

} // namespace mixprec::passes

#endif // MIXPREC_PASSES_PIPELINES_H
