//===- GraphAsm.cpp - value names in the printed mp IR --------------------===//
#include "dialects/Graph/IR/GraphAsm.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace mixprec::graph {

std::string valueNameFor(llvm::StringRef name) {
  std::string out;
  for (char c : name) {
    bool keep = llvm::isAlnum(c) || c == '_' || c == '.' || c == '$' || c == '-';
    char put = keep ? c : '_';
    if (put == '_' && !out.empty() && out.back() == '_')
      continue;
    out.push_back(put);
  }
  auto isPunct = [](char c) { return !llvm::isAlnum(c); };
  while (!out.empty() && isPunct(out.back()))
    out.pop_back();
  size_t first = 0;
  while (first < out.size() && isPunct(out[first]))
    ++first;
  out.erase(0, first);
  if (!out.empty() && llvm::isDigit(out.front()))
    out.insert(out.begin(), '_');
  return out;
}

SmallVector<std::string> argumentNames(func::FuncOp func, const llvm::StringSet<> &taken) {
  llvm::StringSet<> used;
  for (const auto &entry : taken)
    used.insert(entry.getKey());
  SmallVector<std::string> names;
  for (unsigned a = 0; a < func.getNumArguments(); ++a) {
    auto attr = func.getArgAttrOfType<StringAttr>(a, GraphDialect::kNameAttr);
    std::string base = attr ? valueNameFor(attr.getValue()) : "";
    std::string name = base;
    for (int n = 1; !base.empty() && used.contains(name); ++n)
      name = base + "_in" + (n == 1 ? "" : std::to_string(n));
    if (!name.empty())
      used.insert(name);
    names.push_back(name);
  }
  return names;
}

namespace {

bool isIdChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '.' || c == '$' || c == '-';
}

/// Calls `onCode(begin, end)` for the runs of `text` outside string literals
/// ("...", with backslash escapes), in order; the literals themselves are
/// left to the caller through the gaps between runs.
template <typename Fn>
void forEachCodeRun(llvm::StringRef text, Fn onCode) {
  size_t i = 0, runStart = 0;
  while (i < text.size()) {
    if (text[i] != '"') {
      ++i;
      continue;
    }
    onCode(runStart, i);
    ++i;
    while (i < text.size() && text[i] != '"')
      i += text[i] == '\\' ? 2 : 1;
    i = std::min(i + 1, text.size());
    runStart = i;
  }
  onCode(runStart, text.size());
}

/// The `%name` tokens of `code` (outside literals), as (offset, length of
/// the name without '%').
template <typename Fn>
void forEachValueToken(llvm::StringRef text, size_t begin, size_t end, Fn onToken) {
  for (size_t i = begin; i < end; ++i) {
    if (text[i] != '%')
      continue;
    size_t j = i + 1;
    while (j < end && isIdChar(text[j]))
      ++j;
    if (j > i + 1)
      onToken(i + 1, j - i - 1);
    i = j - 1;
  }
}

} // namespace

void printModuleNamed(ModuleOp module, llvm::raw_ostream &os, const OpPrintingFlags &flags) {
  std::string text;
  {
    llvm::raw_string_ostream s(text);
    module.print(s, flags);
  }
  SmallVector<func::FuncOp> funcs;
  bool nested = false;
  module.walk([&](func::FuncOp f) {
    funcs.push_back(f);
    nested |= f->getParentOp() != module.getOperation();
  });
  // Where each function's text starts: "func.func" outside literals, one per
  // function in print order. The generic form (asked for, or the printer's
  // fallback for an op that does not verify) has none: printed as is.
  SmallVector<size_t> starts;
  forEachCodeRun(text, [&](size_t b, size_t e) {
    llvm::StringRef run = llvm::StringRef(text).slice(b, e);
    for (size_t at = run.find("func.func "); at != llvm::StringRef::npos;
         at = run.find("func.func ", at + 1))
      if (at == 0 || !isIdChar(run[at - 1]))
        starts.push_back(b + at);
  });
  if (nested || flags.shouldPrintGenericOpForm() || starts.size() != funcs.size()) {
    os << text;
    return;
  }
  starts.push_back(text.size());

  // Streamed piece by piece: a runnable file's text holds every weight as
  // hex (hundreds of MB), so it is not copied a second time.
  os << llvm::StringRef(text).take_front(starts[0]);
  for (auto [i, func] : llvm::enumerate(funcs)) {
    llvm::StringRef segment = llvm::StringRef(text).slice(starts[i], starts[i + 1]);
    // Names already in the function (results named after nodes, numbered
    // values, the printer's own %argN).
    llvm::StringSet<> used;
    forEachCodeRun(segment, [&](size_t b, size_t e) {
      forEachValueToken(segment, b, e,
                        [&](size_t at, size_t len) { used.insert(segment.substr(at, len)); });
    });
    SmallVector<std::string> names = argumentNames(func, used);
    size_t copied = 0; // segment offset up to which `os` has the text
    forEachCodeRun(segment, [&](size_t b, size_t e) {
      forEachValueToken(segment, b, e, [&](size_t at, size_t len) {
        llvm::StringRef token = segment.substr(at, len);
        unsigned number;
        if (!token.consume_front("arg") || token.getAsInteger(10, number) ||
            number >= names.size() || names[number].empty() ||
            std::to_string(number) != token)
          return;
        os << segment.slice(copied, at) << names[number];
        copied = at + len;
      });
    });
    os << segment.drop_front(copied);
  }
}

} // namespace mixprec::graph
