//===- OptionTypes.cpp - the values of the precision options --------------===//
//
// The names, parsers and error reporting of the option types in OptionTypes.h.
// They live below the passes (mixprec_pass_options) because the passes and
// the policy-file reader parse these values too; the pipelines only build.
//
//===----------------------------------------------------------------------===//
#include "passes/OptionTypes.h"
#include "passes/Pipelines.h"

#include <cstdlib>

namespace mixprec::passes {

#define GEN_PIPELINE_OPTIONS_DEF
#include "passes/Pipelines.h.inc"

namespace {
/// The options as declared, whose parsers hold the values' names.
PrecisionPipelineOptions &declared() {
  static PrecisionPipelineOptions options;
  return options;
}
} // namespace

llvm::StringRef optionValueName(Precision value) {
  return declared().precision.getParser().nameOf(value);
}
llvm::StringRef optionValueName(Fp8Scaling value) {
  return declared().fp8Scaling.getParser().nameOf(value);
}
llvm::StringRef optionValueName(Fp8Format value) {
  return declared().fp8Format.getParser().nameOf(value);
}
llvm::StringRef optionValueName(AmaxAlgo value) {
  return declared().fp8AmaxAlgo.getParser().nameOf(value);
}

llvm::StringRef precisionName(Precision precision) { return optionValueName(precision); }

std::string precisionNames(llvm::StringRef last) {
  return declared().precision.getParser().nameList(last);
}

//===----------------------------------------------------------------------===//
// Option values
//===----------------------------------------------------------------------===//

namespace {
/// The handler of the innermost ScopedOptionErrorHandler, or null.
ScopedOptionErrorHandler::Handler *&currentOptionErrorHandler() {
  static ScopedOptionErrorHandler::Handler *handler = nullptr;
  return handler;
}
} // namespace

bool reportOptionError(const llvm::cl::Option &option, llvm::StringRef argName,
                       const llvm::Twine &message) {
  if (ScopedOptionErrorHandler::Handler *handler = currentOptionErrorHandler()) {
    (*handler)(option, argName, message.str());
    return true;
  }
  return const_cast<llvm::cl::Option &>(option).error(message, argName);
}

ScopedOptionErrorHandler::ScopedOptionErrorHandler(Handler handler)
    : handler(std::move(handler)), previous(currentOptionErrorHandler()) {
  currentOptionErrorHandler() = &this->handler;
}

ScopedOptionErrorHandler::~ScopedOptionErrorHandler() { currentOptionErrorHandler() = previous; }

PrecisionParser::PrecisionParser(llvm::cl::Option &option) : EnumParser(option) {
  aliases = {{"f32", Precision::FP32},
             {"f16", Precision::FP16},
             {"e4m3", Precision::FP8},
             {"f8E4M3FN", Precision::FP8}};
}

bool PrecisionParser::parse(llvm::cl::Option &option, llvm::StringRef argName,
                            llvm::StringRef arg, Precision &value) {
  if (std::optional<Precision> named = lookup(arg)) {
    value = *named;
    return false;
  }
  return reportOptionError(option, argName,
                           "unknown precision '" + arg + "' (use " + nameList() + ")");
}

std::optional<double> parseNumber(llvm::StringRef text) {
  std::string copy = text.str(); // strtod needs the terminating NUL
  char *end = nullptr;
  double number = std::strtod(copy.c_str(), &end);
  if (copy.empty() || *end != '\0')
    return std::nullopt;
  return number;
}

bool FlagParser::parse(llvm::cl::Option &option, llvm::StringRef argName, llvm::StringRef arg,
                       bool &value) {
  if (arg.empty() || arg == "true" || arg == "1") {
    value = true;
    return false;
  }
  if (arg == "false" || arg == "0") {
    value = false;
    return false;
  }
  return reportOptionError(option, argName, "takes true or false, got '" + arg + "'");
}

} // namespace mixprec::passes
