//===- LowerToKernels.h - the patterns of --mp-lower-to-kernels -*- C++ -*-===//
//
// --mp-lower-to-kernels is a dialect conversion: at function level every mp
// op but weight constants becomes an mpk step, and inside mpk.kernel bodies
// only expression-program instructions stay (kernel::isKernelInstruction).
// The pattern sets are public so that other drivers (the CUDA emitter's
// tests, a routine lowering) can combine them with the same target.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_PASSES_LOWERTOKERNELS_H
#define MIXPREC_PASSES_LOWERTOKERNELS_H

#include "mlir/Transforms/DialectConversion.h"

namespace mixprec::passes {

/// Marks what the lowering leaves legal: mpk and func ops, mp constants at
/// function level (weights) and kernel instructions inside kernel bodies.
/// Other mp ops are illegal; with `routinesLater`, those at function level
/// are left undecided, so that a partial conversion may leave them to the
/// routine patterns.
void configureKernelTarget(mlir::ConversionTarget &target, bool routinesLater = false);

/// Fusions, GEMMs, lone element-wise and row-reduction ops and reshapes,
/// each into its mpk step.
void populateStepLoweringPatterns(mlir::RewritePatternSet &patterns);

/// Every other mp op at function level (a matmul no GEMM step expresses
/// too) into an mpk.call of its backend routine with its family's typed
/// options (populateRoutineLoweringPatterns, conversion/GraphToKernel/LowerRoutines.cpp).
void populateRoutineFallbackPatterns(mlir::RewritePatternSet &patterns);

/// Softmax, log-softmax, layer and RMS norms, row reductions, silu and amax
/// inside kernel bodies into element-wise instructions and mpk row
/// primitives, with the dtypes and rounding points of the expression program.
void populateKernelBodyPatterns(mlir::RewritePatternSet &patterns);

} // namespace mixprec::passes

#endif // MIXPREC_PASSES_LOWERTOKERNELS_H
