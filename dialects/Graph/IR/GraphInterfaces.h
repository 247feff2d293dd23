//===- GraphInterfaces.h - op facts of the mp dialect -----------*- C++ -*-===//
#ifndef MIXPREC_DIALECTS_GRAPH_IR_GRAPHINTERFACES_H
#define MIXPREC_DIALECTS_GRAPH_IR_GRAPHINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/StringRef.h"

#include "dialects/Graph/IR/GraphEnums.h.inc"

#include <cstdint>

namespace mixprec::graph {

/// An op's class in the default precision policy (DESIGN.md).
/// Integer: an element-wise op on i32/i64 values (computesOnIntegers), exact
/// in int64 whatever the plan: it has no precision to choose.
enum class PrecisionClass { Lowp, Fp32, Follow, Constant, Cast, Scaling, Integer };

/// "lowp", "fp32", "follow", "constant", "cast", "scaling" or "integer".
llvm::StringRef stringifyPrecisionClass(PrecisionClass c);

namespace OpTrait {
// Marker traits; GraphInterfaces.td says what each means.
#define MIXPREC_GRAPH_MARKER_TRAIT(Name)                                                           \
  template <typename ConcreteType>                                                                 \
  class Name : public mlir::OpTrait::TraitBase<ConcreteType, Name> {};
MIXPREC_GRAPH_MARKER_TRAIT(LowpClass)
MIXPREC_GRAPH_MARKER_TRAIT(Fp32Class)
MIXPREC_GRAPH_MARKER_TRAIT(CastClass)
MIXPREC_GRAPH_MARKER_TRAIT(ScalingClass)
MIXPREC_GRAPH_MARKER_TRAIT(Accumulates)
MIXPREC_GRAPH_MARKER_TRAIT(RowReductionKernel)
MIXPREC_GRAPH_MARKER_TRAIT(DataMovement)
MIXPREC_GRAPH_MARKER_TRAIT(GemmKernel)
#undef MIXPREC_GRAPH_MARKER_TRAIT
} // namespace OpTrait

namespace detail {
/// The verifier of the element-wise binary ops (see MP_BroadcastBinary).
llvm::LogicalResult verifyBroadcastBinary(mlir::Operation *op);
} // namespace detail

namespace OpTrait {
/// An element-wise binary op: one verifier for the whole class
/// (GraphInterfaces.td says what it checks).
template <typename ConcreteType>
class BroadcastBinary : public mlir::OpTrait::TraitBase<ConcreteType, BroadcastBinary> {
public:
  static llvm::LogicalResult verifyTrait(mlir::Operation *op) {
    return detail::verifyBroadcastBinary(op);
  }
};
} // namespace OpTrait

/// A GEMM's operands in the roles of one cuBLASLt call: `a @ op(b)`,
/// op(b) = b^T when `transposeB`, with an optional bias and, for FP8
/// operands, both per-tensor scales (null when absent).
struct GemmOperands {
  mlir::Value a, b, bias, aScale, bScale;
  bool transposeB = false;
  /// Block scaling (mp.scaled_linear's input_block, weight_block): the
  /// blocks of a's and b's scales; empty for per-tensor scales.
  llvm::SmallVector<int64_t, 2> aBlock, bBlock;
};

namespace detail {
/// The class an op's traits give it (Follow when none does).
PrecisionClass precisionClassFromTraits(mlir::Operation *op);
/// The default FLOP count (see getFlopCount in GraphInterfaces.td).
int64_t defaultFlopCount(mlir::Operation *op);
/// The default byte count (see getByteCount in GraphInterfaces.td).
int64_t defaultByteCount(mlir::Operation *op);
/// The gradient rule of an element-wise op (GradientOpInterface's default):
/// the derivative table of its ScalarFn, reduced to each operand's shape.
llvm::LogicalResult buildElementwiseGradients(mlir::Operation *op, mlir::OpBuilder &builder,
                                              mlir::ValueRange resultGrads,
                                              llvm::SmallVectorImpl<mlir::Value> &operandGrads);
} // namespace detail

} // namespace mixprec::graph

#include "dialects/Graph/IR/GraphInterfaces.h.inc"

namespace mixprec::graph {

/// The policy class of any op: an mp op answers for itself; anything else
/// (func.return, ops of other dialects) follows its inputs.
PrecisionClass precisionClassOf(mlir::Operation *op);

/// Whether `op` is an element-wise op on integers: it has an i32/i64
/// operand or result and no float result, and is no cast from a float.
/// Such ops run exactly in int64 (the int_elementwise routine), never in the
/// FP32 registers of a fused kernel. Bool-only logic is not one: 0 and 1 are
/// exact in any kernel.
bool computesOnIntegers(mlir::Operation *op);

/// The int_elementwise routine's op number (runtime/kernels/IntElementwise.h's
/// IntOp, the schema's IntElementwiseOptions.op) of an integer op, or -1
/// for an element-wise function with no integer form.
int64_t intElementwiseOpOf(mlir::Operation *op);

/// The row-reduction width of `op` (RowReductionOpInterface), or -1 if it
/// is no row reduction.
int64_t rowReductionDimsOf(mlir::Operation *op);

/// Whether the precision plan runs `op` in TF32 (`mp.precision = tf32`:
/// FP32 operands rounded to TF32 as tensor cores read them). The
/// interpreter, the lowering and the routines all ask this.
bool computesInTf32(mlir::Operation *op);

} // namespace mixprec::graph

#endif // MIXPREC_DIALECTS_GRAPH_IR_GRAPHINTERFACES_H
