//===- GraphDialect.cpp - the mp dialect and its attribute checks ----------===//
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

#include "dialects/Graph/IR/GraphDialect.cpp.inc"
#include "dialects/Graph/IR/GraphEnums.cpp.inc"

namespace mixprec::graph {

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Graph/IR/GraphOps.cpp.inc"
      >();
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
