//===- PolicyFile.cpp - JSON policy files of --mp-assign-precision ---------===//
#include "passes/PolicyFile.h"
#include "passes/PrecisionUtils.h"

#include "common/FileIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace mixprec::passes {
namespace {

/// Whether arrays and objects in `text` nest deeper than `limit` (brackets
/// inside strings do not count; malformed text is left to the parser).
bool nestsDeeperThan(StringRef text, unsigned limit) {
  unsigned depth = 0;
  bool inString = false, escaped = false;
  for (char c : text) {
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit)
        return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

/// `key` as it can appear in a one-line message: control characters (and
/// backslashes and quotes) escaped as \XX.
std::string printableKey(StringRef key) {
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::printEscapedString(key, os);
  return out;
}

} // namespace

LogicalResult parsePolicyJson(MLIRContext *ctx, StringRef name, StringRef text,
                              PrecisionPolicy &policy, std::vector<std::string> &forces,
                              std::vector<std::string> &keeps, std::string &error) {
  if (nestsDeeperThan(text, kMaxPolicyNesting)) {
    error = "policy file '" + name.str() + "': JSON nested deeper than " +
            std::to_string(kMaxPolicyNesting) + " levels";
    return failure();
  }
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed) {
    error = "policy file '" + name.str() + "' does not parse: " +
            llvm::toString(parsed.takeError());
    return failure();
  }
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root) {
    error = "policy file '" + name.str() + "' must hold a JSON object";
    return failure();
  }
  auto bad = [&](StringRef key, StringRef want) {
    error = "policy file '" + name.str() + "': key '" + key.str() + "' must be " + want.str();
    return failure();
  };
  for (const auto &[key, value] : *root) {
    if (key == "precision") {
      std::optional<StringRef> s = value.getAsString();
      std::optional<Type> t = s ? parseDType(ctx, *s) : std::nullopt;
      if (!t)
        return bad(key, "one of fp32, tf32, bf16, fp16, fp8");
      policy.target = *t;
    } else if (key == "keep_io_types") {
      std::optional<bool> b = value.getAsBoolean();
      if (!b)
        return bad(key, "a boolean");
      policy.keepIoTypes = *b;
    } else if (key == "keep_fp32") {
      const llvm::json::Array *list = value.getAsArray();
      if (!list)
        return bad(key, "an array of op types or name globs");
      for (const llvm::json::Value &v : *list) {
        std::optional<StringRef> s = v.getAsString();
        if (!s)
          return bad(key, "an array of strings");
        keeps.push_back(s->str());
      }
    } else if (key == "force") {
      const llvm::json::Object *map = value.getAsObject();
      if (!map)
        return bad(key, "an object mapping op types or name globs to dtypes");
      for (const auto &[glob, dtype] : *map) {
        std::optional<StringRef> s = dtype.getAsString();
        if (!s)
          return bad(key, "an object of strings");
        forces.push_back(glob.str() + ":" + s->str());
      }
    } else if (key == "fp16_margin" || key == "underflow_threshold") {
      std::optional<double> d = value.getAsNumber();
      if (!d || *d <= 0)
        return bad(key, "a positive number");
      (key == "fp16_margin" ? policy.fp16Margin : policy.underflowThreshold) = *d;
    } else if (key == "overflow_fallback") {
      std::optional<StringRef> s = value.getAsString();
      if (!s || (*s != "bf16" && *s != "fp32"))
        return bad(key, "\"bf16\" or \"fp32\"");
      policy.overflowFallback = *parseDType(ctx, *s);
    } else {
      error = "policy file '" + name.str() + "': unknown key '" + printableKey(key) +
              "' (known: precision, keep_io_types, keep_fp32, force, fp16_margin, "
              "underflow_threshold, overflow_fallback)";
      return failure();
    }
  }
  return success();
}

LogicalResult readPolicyFile(MLIRContext *ctx, StringRef path, PrecisionPolicy &policy,
                             std::vector<std::string> &forces, std::vector<std::string> &keeps,
                             std::string &error) {
  // A device or a FIFO is refused before it is opened (common/FileIO.h).
  std::string text, readError;
  if (!common::readRegularFile(path.str(), text, readError)) {
    // readRegularFile says "PATH: REASON".
    error = "policy file '" + path.str() + "': " +
            StringRef(readError).drop_front(path.size() + 2).str();
    return failure();
  }
  return parsePolicyJson(ctx, path, text, policy, forces, keeps, error);
}

} // namespace mixprec::passes
