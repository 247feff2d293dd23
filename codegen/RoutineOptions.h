//===- RoutineOptions.h - typed routine options to the schema ---*- C++ -*-===//
#ifndef MIXPREC_CODEGEN_ROUTINEOPTIONS_H
#define MIXPREC_CODEGEN_ROUTINEOPTIONS_H

#include "dialects/Kernel/IR/KernelOps.h"
#include "runtime/schema/module_generated.h"

namespace mixprec::codegen {

/// The schema's RoutineOptions table for the options of an mpk.call, field
/// for field (Pack it into the module's builder).
schema::RoutineOptionsUnion serializeRoutineOptions(kernel::RoutineOptionsInterface options);

} // namespace mixprec::codegen

#endif // MIXPREC_CODEGEN_ROUTINEOPTIONS_H
