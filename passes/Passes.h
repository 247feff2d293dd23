//===- Passes.h - mixprec graph passes --------------------------*- C++ -*-===//
#ifndef MIXPREC_PASSES_PASSES_H
#define MIXPREC_PASSES_PASSES_H

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Kernel/IR/KernelOps.h"
#include "passes/OptionTypes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mixprec::passes {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace mixprec::passes

#endif // MIXPREC_PASSES_PASSES_H
