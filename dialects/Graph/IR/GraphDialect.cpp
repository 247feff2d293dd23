//===- GraphDialect.cpp - the mp dialect and its attribute checks ----------===//
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

#include "dialects/Graph/IR/GraphDialect.cpp.inc"

namespace mixprec::graph {

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Graph/IR/GraphOps.cpp.inc"
      >();
}

LogicalResult GraphDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  if (attr.getName() == kNameAttr || attr.getName() == kReasonAttr) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must be a string attribute";
    return success();
  }
  return op->emitError() << "unknown mp dialect attribute '" << attr.getName().getValue()
                         << "'";
}

} // namespace mixprec::graph
