//===- OptionTypes.h - the value types and parsers of pass options -*- C++ -*-===//
//
// The enums the passes' options take (Passes.td declares each option once,
// on its pass, with its llvm::cl::values) and the llvm::cl parsers that
// check a value where a tool shows the option as a flag: a bad value reads
// "takes A, B or C, got 'X'" (or the option's own words), through
// reportOptionError, which a tool that prints its own error lines routes
// with a ScopedOptionErrorHandler.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_PASSES_OPTIONTYPES_H
#define MIXPREC_PASSES_OPTIONTYPES_H

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace mixprec::passes {

/// The precisions a graph is compiled at.
enum class Precision { FP32, TF32, BF16, FP16, FP8 };

/// The name of a precision in options, policy files and reports ("bf16"),
/// as the cl::values of its option give it (Pipelines.cpp).
llvm::StringRef precisionName(Precision precision);

/// Every precision's name, "fp32, tf32, bf16, fp16 or fp8" (`last` between
/// the last two).
std::string precisionNames(llvm::StringRef last = " or ");

/// How FP8 activation scales are found (--mp-insert-scaling scaling=).
enum class Fp8Scaling {
  Current, ///< from the tensor's amax in this run
  Delayed, ///< from an amax history kept as module state (Transformer Engine)
  Static,  ///< from calibration (mp.calib_amax)
  Auto,    ///< static where calibrated, else current
  Block,   ///< per block: 1 x 128 activations and gradients, 128 x 128 weights
  Mxfp8    ///< per block of 1 x 32 with E8M0 (power-of-two) scales
};

/// Which FP8 formats operands take (--mp-insert-scaling format=).
enum class Fp8Format {
  Hybrid, ///< gradient operands f8E5M2, the rest the GEMM's FP8 type
  E4M3    ///< every operand in the GEMM's type
};

/// The amax a delayed scale is computed from (--mp-insert-scaling amax-algo=).
enum class AmaxAlgo { Max, MostRecent };

/// The names the options' cl::values give these enums' values
/// ("most-recent"), for printing an option as a pass pipeline option
/// (Pipelines.cpp reads them from the declared options).
llvm::StringRef optionValueName(Precision value);
llvm::StringRef optionValueName(Fp8Scaling value);
llvm::StringRef optionValueName(Fp8Format value);
llvm::StringRef optionValueName(AmaxAlgo value);


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

  /// Prints a value as a pass pipeline option ("fp8-amax-algo=most-recent");
  /// only for the enums above.
  static void print(llvm::raw_ostream &os, T value) { os << optionValueName(value); }
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

} // namespace mixprec::passes

#endif // MIXPREC_PASSES_OPTIONTYPES_H
