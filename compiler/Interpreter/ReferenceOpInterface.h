//===- ReferenceOpInterface.h - reference semantics of mp ops ---*- C++ -*-===//
#ifndef MIXPREC_COMPILER_INTERPRETER_REFERENCEOPINTERFACE_H
#define MIXPREC_COMPILER_INTERPRETER_REFERENCEOPINTERFACE_H

#include "mlir/IR/OpDefinition.h"

#include <cstdint>

namespace mixprec::compiler {
class Evaluator;
} // namespace mixprec::compiler

#include "compiler/Interpreter/ReferenceOpInterface.h.inc"

#endif // MIXPREC_COMPILER_INTERPRETER_REFERENCEOPINTERFACE_H
