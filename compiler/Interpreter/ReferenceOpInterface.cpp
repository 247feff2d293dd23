//===- ReferenceOpInterface.cpp - reference semantics of mp ops -----------===//
#include "compiler/Interpreter/ReferenceOpInterface.h"

#include "compiler/Interpreter/ReferenceOpInterface.cpp.inc"
