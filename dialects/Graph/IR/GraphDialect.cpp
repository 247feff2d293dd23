//===- GraphDialect.cpp - the mp dialect and its attribute checks ----------===//
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/GraphAsm.h"

#include "mlir/IR/BuiltinAttributes.h"
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
  if (name == kCalibAmaxAttr || name == kCalibUnderflowAttr)
    return expect(isa<FloatAttr>(attr.getValue()), "a float attribute");
  if (name == kKeepIoTypesAttr)
    return expect(isa<UnitAttr>(attr.getValue()), "a unit attribute");
  return op->emitError() << "unknown mp dialect attribute '" << attr.getName().getValue()
                         << "'";
}

} // namespace mixprec::graph
