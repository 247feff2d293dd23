//===- LowerRoutines.h - mp ops to backend routines -------------*- C++ -*-===//
#ifndef MIXPREC_PASSES_LOWERROUTINES_H
#define MIXPREC_PASSES_LOWERROUTINES_H

#include "mlir/IR/PatternMatch.h"

namespace mixprec::passes {

/// Adds one conversion pattern per routine: each turns an mp op that no
/// kernel or GEMM step runs (a convolution, a pooling, data movement, a
/// reduction over leading axes, an FP8 scale, a numpy matmul...) into an
/// mpk.call with its family's typed options. Use them with a dialect
/// conversion (they rewrite through ConversionPatternRewriter).
void populateRoutineLoweringPatterns(mlir::RewritePatternSet &patterns);

} // namespace mixprec::passes

#endif // MIXPREC_PASSES_LOWERROUTINES_H
