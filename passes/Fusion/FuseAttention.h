//===- FuseAttention.h - forming mp.attention --------------------*- C++ -*-===//
//
// The rewrite of --mp-fuse-attention as a function: the training step
// builder fuses the forward graph before differentiating it, so the step's
// backward is mp.attention_grad (the scores recomputed) rather than the
// unfused GEMMs and softmax with the S x S probabilities kept for it.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_PASSES_FUSION_FUSEATTENTION_H
#define MIXPREC_PASSES_FUSION_FUSEATTENTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mixprec::passes {

/// Replaces every attention pattern of `func` by one mp.attention; returns
/// how many it formed.
int fuseAttention(mlir::func::FuncOp func);

} // namespace mixprec::passes

#endif // MIXPREC_PASSES_FUSION_FUSEATTENTION_H
