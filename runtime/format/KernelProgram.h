//===- KernelProgram.h - facts about expression-program opcodes -*- C++ -*-===//
//
// Shared by the module verifier, the backends and the module writer so that
// all agree on what an instruction reads and produces and how long a
// program may be.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_FORMAT_KERNELPROGRAM_H
#define MIXPREC_RUNTIME_FORMAT_KERNELPROGRAM_H

#include "runtime/schema/module_generated.h"

namespace mixprec::runtime {

/// The most instructions a kernel's program may have: the verifier refuses
/// longer ones (so that a forged count cannot make verification run for
/// hours), and the module writer refuses to write them.
constexpr size_t kMaxProgramLength = 1 << 16;

/// Number of register operands the opcode reads, or -1 for a value that is
/// not an opcode of this schema version. A scalar function's instruction
/// reads its arity (runtime/format/ScalarFns.def).
inline int operandCount(schema::OpCode op) {
  using O = schema::OpCode;
  switch (op) {
  case O::Load:
  case O::Const:
    return 0;
  case O::Store:
  case O::RowSum:
  case O::RowMax:
  case O::Amax:
    return 1;
#define MP_SCALAR_FN(Name, mnemonic, value, arity, ...)                                            \
  case O::Name:                                                                                    \
    return arity;
#define MP_SCALAR_FN_SHARED(...)
#include "runtime/format/ScalarFns.def"
  }
  return -1;
}

/// The schema's name of an opcode ("Load", "RowSum"...), "?" if unknown.
inline const char *opcodeName(schema::OpCode op) {
  int count = operandCount(op);
  return count < 0 ? "?" : schema::EnumNameOpCode(op);
}

inline bool isRowReduction(schema::OpCode op) {
  return op == schema::OpCode::RowSum || op == schema::OpCode::RowMax;
}

} // namespace mixprec::runtime

#endif // MIXPREC_RUNTIME_FORMAT_KERNELPROGRAM_H
