//===- GraphAsm.h - value names in the printed mp IR ------------*- C++ -*-===//
//
// Printed mp IR names values like the model: op results after their node
// (the OpAsmOpInterface fallback in GraphDialect.cpp), and graph arguments
// after their input names (printModuleNamed). Both go through valueNameFor,
// so the same node name reads the same everywhere.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_DIALECTS_GRAPH_IR_GRAPHASM_H
#define MIXPREC_DIALECTS_GRAPH_IR_GRAPHASM_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mixprec::graph {

/// `name` as an SSA value name that MLIR's parser reads back: runs of bytes
/// outside [A-Za-z0-9_.$-] become one '_' ("/h.3/attn/MatMul" ->
/// "h.3_attn_MatMul"), leading and trailing punctuation goes, and a leading
/// digit gets a '_'. "" when nothing is left (the value stays numbered).
std::string valueNameFor(llvm::StringRef name);

/// The names printModuleNamed gives `func`'s arguments, one per argument
/// ("" for one that keeps `%argN`), given the names `taken` in the function
/// (without '%'; the printer's own `argN` among them).
llvm::SmallVector<std::string> argumentNames(mlir::func::FuncOp func,
                                             const llvm::StringSet<> &taken);

/// Prints `module` like ModuleOp::print, with each func.func's arguments
/// named after their `mp.name` input names (`%input_ids` instead of
/// `%arg0`), made valid (valueNameFor) and unique within the function (a
/// name some result already has, or two inputs that sanitize alike, get
/// "_in", then "_in<N>"). An argument without a name keeps `%argN`.
///
/// MLIR 19 names entry-block arguments only through the parent op's
/// OpAsmOpInterface, which func.func implements itself (and an attached
/// model cannot replace); MLIR 20's OpPrintingFlags::printNameLocAsPrefix is
/// the eventual replacement. Until then the printed text is renamed: the
/// printer's `%argN` of each function (a token outside string literals,
/// within that function's text) becomes the name. The text parses back to
/// the same IR: only SSA names change.
void printModuleNamed(mlir::ModuleOp module, llvm::raw_ostream &os,
                      const mlir::OpPrintingFlags &flags);

} // namespace mixprec::graph

#endif // MIXPREC_DIALECTS_GRAPH_IR_GRAPHASM_H
