//===- GraphDialect.cpp - the mp dialect and its attribute checks ----------===//
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/GraphAsm.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

#include "dialects/Graph/IR/GraphDialect.cpp.inc"
#include "dialects/Graph/IR/GraphEnums.cpp.inc"

namespace mixprec::graph {
namespace {

/// The node (or initializer) name the importer put in an op's location: a
/// NameLoc, or the first NameLoc of a FusedLoc (a fusion of several ops);
/// "" for other locations (a hand-written .mlir file's FILE:LINE:COL).
StringRef nodeNameOf(Location loc) {
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(inner))
        return name.getName().getValue();
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().getValue();
  return "";
}

/// OpAsmOpInterface for every mp op: its results print named after the
/// model's node (`%fc1 = mp.linear ...`, `%topk:2 = ...` for several
/// results) instead of numbered. Attached to each op of the dialect when it
/// loads, so an op added to GraphOps.td gets it with no edit of its own.
/// Names come from the location, which every pass already keeps (and the
/// bytecode and text formats store), so no attribute has to be carried.
struct NamedResults : OpAsmOpInterface::FallbackModel<NamedResults> {
  void getAsmResultNames(Operation *op, OpAsmSetValueNameFn setNameFn) const {
    if (op->getNumResults() == 0)
      return;
    std::string name = valueNameFor(nodeNameOf(op->getLoc()));
    if (!name.empty())
      setNameFn(op->getResult(0), name);
  }
  void getAsmBlockArgumentNames(Operation *, Region &, OpAsmSetValueNameFn) const {}
  void getAsmBlockNames(Operation *, OpAsmSetBlockNameFn) const {}
  static StringRef getDefaultDialect() { return ""; }
};

} // namespace

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Graph/IR/GraphOps.cpp.inc"
      >();
  for (RegisteredOperationName name : getContext()->getRegisteredOperations())
    if (&name.getDialect() == this)
      name.attachInterface<NamedResults>();
}

LogicalResult GraphDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  auto expect = [&](bool ok, StringRef what) -> LogicalResult {
    if (ok)
      return success();
    return op->emitError() << "'" << name << "' must be " << what;
  };
  if (name == kNameAttr || name == kReasonAttr)
    return expect(isa<StringAttr>(attr.getValue()), "a string attribute");
  if (name == kPrecisionAttr) {
    auto type = dyn_cast<TypeAttr>(attr.getValue());
    return expect(type && isa<FloatType>(type.getValue()), "a float type attribute");
  }
  if (name == kPinnedPrecisionAttr) {
    auto type = dyn_cast<TypeAttr>(attr.getValue());
    return expect(type && isa<Float32Type, BFloat16Type, Float16Type>(type.getValue()),
                  "f32, bf16 or f16 (a type attribute)");
  }
  if (name == kCalibAmaxAttr || name == kCalibUnderflowAttr)
    return expect(isa<FloatAttr>(attr.getValue()), "a float attribute");
  if (name == kKeepIoTypesAttr)
    return expect(isa<UnitAttr>(attr.getValue()), "a unit attribute");
  if (name == kFp32OutputAttr)
    return expect(isa<UnitAttr>(attr.getValue()) && isa<GemmOpInterface>(op),
                  "a unit attribute on a GEMM");
  if (name == kGradOperandsAttr) {
    auto indices = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    return expect(indices && llvm::all_of(indices.asArrayRef(),
                                          [&](int64_t i) {
                                            return i >= 0 && i < int64_t(op->getNumOperands());
                                          }),
                  "an array of operand indices");
  }
  return op->emitError() << "unknown mp dialect attribute '" << attr.getName().getValue()
                         << "'";
}

/// The state convention (GraphBase.td, kStateAttr) on argument `argIndex`
/// of `fn`, which carries `mp.state` or `mp.state_init`: a string name, an
/// initial value of the argument's type, a name no other argument has,
/// exactly one result that updates it, of its type.
static LogicalResult verifyStateArgument(FunctionOpInterface fn, unsigned argIndex,
                                         NamedAttribute attr) {
  Type type = fn.getArgumentTypes()[argIndex];
  auto name = fn.getArgAttrOfType<StringAttr>(argIndex, GraphDialect::kStateAttr);
  if (attr.getName() == GraphDialect::kStateInitAttr) {
    auto init = dyn_cast<ElementsAttr>(attr.getValue());
    if (!init)
      return fn->emitError() << "argument #" << argIndex << ": '" << attr.getName().getValue()
                             << "' must be an elements attribute (the state's initial value)";
    if (!name)
      return fn->emitError() << "argument #" << argIndex << " has '" << attr.getName().getValue()
                             << "' but no '" << GraphDialect::kStateAttr << "' name";
    if (init.getType() != type)
      return fn->emitError() << "state '" << name.getValue() << "': initial value is "
                             << init.getType() << ", the argument is " << type;
    return success();
  }
  if (!name || name.getValue().empty())
    return fn->emitError() << "argument #" << argIndex << ": '" << attr.getName().getValue()
                           << "' must be a non-empty string attribute (the state's name)";
  auto diag = [&]() {
    return fn->emitError() << "state '" << name.getValue() << "' (argument #" << argIndex
                           << "): ";
  };
  if (!fn.getArgAttr(argIndex, GraphDialect::kStateInitAttr))
    return diag() << "no '" << GraphDialect::kStateInitAttr << "' initial value";
  for (unsigned j = 0; j < fn.getNumArguments(); ++j)
    if (j != argIndex && fn.getArgAttr(j, GraphDialect::kStateAttr) == name)
      return diag() << "argument #" << j << " has the same name";
  int updates = 0;
  for (unsigned r = 0; r < fn.getNumResults(); ++r) {
    if (fn.getResultAttr(r, GraphDialect::kStateUpdateAttr) != name)
      continue;
    if (++updates > 1)
      return diag() << "updated by more than one result (#" << r << " again)";
    if (fn.getResultTypes()[r] != type)
      return diag() << "its update (result #" << r << ") is " << fn.getResultTypes()[r]
                    << ", the state is " << type;
  }
  if (updates == 0)
    return diag() << "no result carries '" << GraphDialect::kStateUpdateAttr << " = \""
                  << name.getValue() << "\"' (its next value)";
  return success();
}

LogicalResult GraphDialect::verifyRegionArgAttribute(Operation *op, unsigned, unsigned argIndex,
                                                     NamedAttribute attr) {
  if (attr.getName() != kStateAttr && attr.getName() != kStateInitAttr)
    return verifyOperationAttribute(op, attr);
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' belongs on a graph function's argument";
  return verifyStateArgument(fn, argIndex, attr);
}

LogicalResult GraphDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                        unsigned resultIndex,
                                                        NamedAttribute attr) {
  if (attr.getName() != kStateUpdateAttr)
    return verifyOperationAttribute(op, attr);
  auto fn = dyn_cast<FunctionOpInterface>(op);
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!fn || !name)
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' must be a string on a graph function's result";
  for (unsigned j = 0; j < fn.getNumArguments(); ++j)
    if (fn.getArgAttr(j, kStateAttr) == name)
      return success(); // the argument's check covers the rest
  return op->emitError() << "result #" << resultIndex << " updates state '" << name.getValue()
                         << "', which no argument is (no argument has mp.state = \""
                         << name.getValue() << "\")";
}

} // namespace mixprec::graph
