//===- Autodiff.h - reverse-mode gradients of mp graphs ---------*- C++ -*-===//
//
// buildGradientFunction appends to a function's module the function that
// computes its loss and the gradients of that loss with respect to chosen
// inputs, by a reverse sweep over the ops' gradient rules
// (graph::GradientOpInterface). --mp-autodiff runs it; the training-step
// builder and the gradient checks call it directly.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_PASSES_AUTODIFF_H
#define MIXPREC_PASSES_AUTODIFF_H

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <string>
#include <vector>

namespace mixprec::passes {

/// The `mp.name` of argument or result attributes, or "".
llvm::StringRef mpNameIn(mlir::DictionaryAttr attrs);

/// `{mp.name = name}`, the attributes of a named argument or result.
mlir::DictionaryAttr mpNameAttrs(mlir::Builder &b, llvm::StringRef name);

/// The name a constant goes by: its `mp.name` attribute, else its node name
/// (the NameLoc the ONNX importer gives an initializer).
std::string constantName(graph::ConstantOp op);

/// What to differentiate.
struct GradientOptions {
  /// The inputs to differentiate with respect to, by name: function
  /// arguments (their `mp.name`) or float constants (their node name, the
  /// NameLoc the importer gives initializers, or an `mp.name` attribute).
  /// "params" stands for every named float constant of rank >= 1 (rank-0
  /// constants are hyper-parameters: epsilons, exponents). Constants become
  /// arguments of the gradient function.
  std::vector<std::string> wrt;
  /// The result to differentiate (its `mp.name`, or its index as a number);
  /// empty: the function's only result.
  std::string loss;
  /// The gradient function's name; empty: `<function>_grad`.
  std::string name;
};

/// Appends `@<f>_grad` after `f` in its module and returns it.
///
/// Arguments: f's arguments, then one per constant named in `wrt`, in the
/// order wrt names them (named after the constant). Results, in this order:
/// the loss (its own `mp.name`, "loss" if none), then one gradient per wrt
/// input in wrt's order, named `grad:<input name>`, each of that input's
/// type. A gradient is zeros where the loss does not depend on the input
/// through float values (only through an index, a mask, a comparison).
/// Adjoints of a value used several times are summed in FP32.
///
/// Fails with an error on `f` (or the op at fault) when: the loss does not
/// hold exactly one float element; a wrt name matches no argument or
/// constant, or several constants; an op on the path from a wrt input to
/// the loss has no gradient rule or its rule does not cover it.
mlir::FailureOr<mlir::func::FuncOp> buildGradientFunction(mlir::func::FuncOp f,
                                                         const GradientOptions &options);

} // namespace mixprec::passes

#endif // MIXPREC_PASSES_AUTODIFF_H
