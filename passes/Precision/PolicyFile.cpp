//===- PolicyFile.cpp - JSON policy files of --mp-assign-precision ---------===//
#include "passes/Precision/PolicyFile.h"
#include "passes/Pipelines.h"
#include "passes/Precision/PrecisionUtils.h"

#include "common/FileIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

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

/// What a policy file sets, as its keys are read.
struct PolicyTarget {
  MLIRContext *ctx;
  PrecisionPolicy &policy;
  std::vector<std::string> &forces, &keeps;
};

/// Reads one key's JSON value into `target`; returns what the value must
/// be when it is not that ("a boolean"), else "".
using PolicyKeyReader = std::string (*)(const llvm::json::Value &, PolicyTarget &);

/// "precision": a dtype name.
std::string readPrecision(const llvm::json::Value &value, PolicyTarget &target) {
  std::optional<StringRef> s = value.getAsString();
  std::optional<Type> t = s ? parseDType(target.ctx, *s) : std::nullopt;
  if (!t)
    return "one of " + precisionNames(", ");
  target.policy.target = *t;
  return "";
}

/// "keep_io_types": a boolean.
std::string readKeepIoTypes(const llvm::json::Value &value, PolicyTarget &target) {
  std::optional<bool> b = value.getAsBoolean();
  if (!b)
    return "a boolean";
  target.policy.keepIoTypes = *b;
  return "";
}

/// "keep_fp32": op types or name globs.
std::string readKeepFp32(const llvm::json::Value &value, PolicyTarget &target) {
  const llvm::json::Array *list = value.getAsArray();
  if (!list)
    return "an array of op types or name globs";
  for (const llvm::json::Value &v : *list) {
    std::optional<StringRef> s = v.getAsString();
    if (!s)
      return "an array of strings";
    target.keeps.push_back(s->str());
  }
  return "";
}

/// "force": glob to dtype, read as GLOB:DTYPE entries.
std::string readForce(const llvm::json::Value &value, PolicyTarget &target) {
  const llvm::json::Object *map = value.getAsObject();
  if (!map)
    return "an object mapping op types or name globs to dtypes";
  for (const auto &[glob, dtype] : *map) {
    std::optional<StringRef> s = dtype.getAsString();
    if (!s)
      return "an object of strings";
    target.forces.push_back(glob.str() + ":" + s->str());
  }
  return "";
}

/// A reader of a positive number into `field` of the policy.
template <double PrecisionPolicy::*field>
std::string readPositive(const llvm::json::Value &value, PolicyTarget &target) {
  std::optional<double> d = value.getAsNumber();
  if (!d || *d <= 0)
    return "a positive number";
  target.policy.*field = *d;
  return "";
}

/// "overflow_fallback": bf16 or fp32.
std::string readOverflowFallback(const llvm::json::Value &value, PolicyTarget &target) {
  std::optional<StringRef> s = value.getAsString();
  if (!s || (*s != "bf16" && *s != "fp32"))
    return "\"bf16\" or \"fp32\"";
  target.policy.overflowFallback = *parseDType(target.ctx, *s);
  return "";
}

/// A policy file key: the name of the precision option it sets (the key is
/// that name with '_' for '-') and how its value is read.
struct PolicyKey {
  std::string key;
  PolicyKeyReader read;
};

/// The keys a policy file may hold: the options of --mp-assign-precision
/// (PrecisionPipelineOptions declares them), --policy itself excepted.
std::vector<PolicyKey> policyKeys() {
  PrecisionPipelineOptions declared;
  auto key = [](const llvm::cl::Option &option) {
    std::string name = option.ArgStr.str();
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
  };
  return {{key(declared.precision), readPrecision},
          {key(declared.keepIoTypes), readKeepIoTypes},
          {key(declared.keepFp32), readKeepFp32},
          {key(declared.force), readForce},
          {key(declared.fp16Margin), readPositive<&PrecisionPolicy::fp16Margin>},
          {key(declared.underflowThreshold), readPositive<&PrecisionPolicy::underflowThreshold>},
          {key(declared.overflowFallback), readOverflowFallback}};
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
  static const std::vector<PolicyKey> keys = policyKeys();
  PolicyTarget target{ctx, policy, forces, keeps};
  for (const auto &[key, value] : *root) {
    StringRef keyName = key; // a structured binding cannot be captured in C++17
    auto known = llvm::find_if(keys, [&](const PolicyKey &k) { return k.key == keyName; });
    if (known == keys.end()) {
      std::string names;
      for (const PolicyKey &k : keys)
        names += (names.empty() ? "" : ", ") + k.key;
      error = "policy file '" + name.str() + "': unknown key '" + printableKey(key) +
              "' (known: " + names + ")";
      return failure();
    }
    if (std::string want = known->read(value, target); !want.empty()) {
      error = "policy file '" + name.str() + "': key '" + key.str() + "' must be " + want;
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
