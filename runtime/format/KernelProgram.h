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
/// not an opcode of this schema version.
inline int operandCount(schema::OpCode op) {
  using O = schema::OpCode;
  switch (op) {
  case O::Load:
  case O::Const:
    return 0;
  case O::Store:
  case O::Neg:
  case O::Relu:
  case O::GeluErf:
  case O::GeluTanh:
  case O::Tanh:
  case O::Sigmoid:
  case O::Exp:
  case O::Log:
  case O::Sqrt:
  case O::Rsqrt:
  case O::Erf:
  case O::Reciprocal:
  case O::Cast:
  case O::RowSum:
  case O::RowMax:
  case O::Amax:
  case O::Not:
  case O::IsNaN:
  case O::IsInf:
  case O::IsPosInf:
  case O::IsNegInf:
  case O::Sin:
  case O::Cos:
  case O::Abs:
  case O::Sign:
  case O::Floor:
  case O::Ceil:
  case O::Round:
  case O::Softplus:
  case O::Mish:
  case O::HardSwish:
    return 1;
  case O::Add:
  case O::Sub:
  case O::Mul:
  case O::Div:
  case O::Pow:
  case O::Max:
  case O::Min:
  case O::Quantize:
  case O::Equal:
  case O::Less:
  case O::LessOrEqual:
  case O::Greater:
  case O::GreaterOrEqual:
  case O::And:
  case O::Or:
  case O::Xor:
  case O::Fmod:
  case O::Mod:
  case O::PRelu:
  case O::Elu:
    return 2;
  case O::Select:
  case O::HardSigmoid:
  case O::Selu:
    return 3;
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
