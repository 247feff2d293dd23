//===- ReferenceOpInterface.td - reference semantics of mp ops ------------===//
//
// What an op computes, as the CPU reference interpreter runs it. The
// interpreter library attaches the implementations to the mp ops as
// external models (registerReferenceExternalModels), so the dialect does
// not depend on the CPU kernels. Element-wise ops need none: the
// interpreter maps their ScalarFn (ElementwiseOpInterface).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_INTERPRETER_REFERENCE_OP_INTERFACE
#define MIXPREC_INTERPRETER_REFERENCE_OP_INTERFACE

include "mlir/IR/OpBase.td"

def ReferenceOpInterface : OpInterface<"ReferenceOpInterface"> {
  let cppNamespace = "::mixprec::compiler";
  let description = [{
    The reference semantics of a non-element-wise op: compute its results
    from its operands in the evaluator's environment, rounding each float
    result to its storage dtype.
  }];
  let methods = [
    InterfaceMethod<[{
        Computes the op's results into `evaluator` (Evaluator::setFloat and
        Evaluator::set). On a run-time error (an index out of range) returns
        Evaluator::fail with the reason.
      }],
      "::mlir::LogicalResult", "evaluate",
      (ins "::mixprec::compiler::Evaluator &":$evaluator)>,
    InterfaceMethod<[{
        Host bytes the reference kernel allocates besides the results (a
        reduction's double accumulators, a convolution's im2col columns);
        UINT64_MAX when that does not fit in 64 bits.
      }],
      "uint64_t", "getScratchBytes", (ins), [{}], [{ return 0; }]>,
  ];
}

#endif // MIXPREC_INTERPRETER_REFERENCE_OP_INTERFACE
