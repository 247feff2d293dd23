//===- IntElementwise.cpp - exact integer element-wise ops ----------------===//
//
// Every function computes on int64 (wrapping arithmetic in uint64, so that
// an overflow is two's complement and never undefined behaviour); see
// IntElementwise.h for the rules.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/IntElementwise.h"

#include <cassert>
#include <cmath>
#include <limits>

namespace mixprec::runtime::cpu {

namespace intscalar {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

/// The uint64 bits back as int64 (two's complement, defined since C++20 and
/// by every compiler mixprec supports before).
static int64_t fromBits(uint64_t v) { return static_cast<int64_t>(v); }

int64_t add(int64_t a, int64_t b) {
  return fromBits(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t sub(int64_t a, int64_t b) {
  return fromBits(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t mul(int64_t a, int64_t b) {
  return fromBits(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t neg(int64_t a) { return fromBits(0 - static_cast<uint64_t>(a)); }
int64_t abs(int64_t a) { return a < 0 ? neg(a) : a; }

int64_t div(int64_t a, int64_t b) {
  if (b == 0)
    return 0;
  if (b == -1)
    return neg(a); // INT64_MIN / -1 overflows in C: wrap instead
  return a / b;    // C truncates toward zero
}

int64_t fmod(int64_t a, int64_t b) {
  if (b == 0 || b == -1)
    return 0; // INT64_MIN % -1 overflows in C; every x % -1 is 0
  return a % b;
}

int64_t mod(int64_t a, int64_t b) {
  int64_t r = fmod(a, b);
  // The floor remainder has the divisor's sign: |r| < |b| and opposite
  // signs, so r + b cannot overflow.
  if (r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

int64_t pow(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1)
      return 1;
    if (base == -1)
      return (exponent & 1) ? -1 : 1;
    return 0;
  }
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  for (uint64_t e = static_cast<uint64_t>(exponent); e; e >>= 1) {
    if (e & 1)
      result *= b;
    b *= b;
  }
  return fromBits(result);
}

int64_t powFloat(int64_t base, double exponent) {
  double r = std::pow(static_cast<double>(base), exponent);
  if (std::isnan(r))
    return 0;
  // 2^63 is exactly representable; anything at or past it saturates.
  if (r >= 9223372036854775808.0)
    return kMax;
  if (r < -9223372036854775808.0)
    return kMin;
  return static_cast<int64_t>(std::trunc(r));
}

} // namespace intscalar

int intOpArity(IntOp op) {
  switch (op) {
  case IntOp::Neg:
  case IntOp::Abs:
  case IntOp::Cast:
    return 1;
  case IntOp::Select:
    return 3;
  default:
    return 2;
  }
}

const char *intOpName(IntOp op) {
  static const char *const names[] = {
      "add",  "sub", "mul", "div",    "mod",   "fmod",          "pow",  "max",
      "min",  "neg", "abs", "select", "equal", "less", "less_or_equal", "greater",
      "greater_or_equal", "cast"};
  static_assert(sizeof(names) / sizeof(names[0]) == kLastIntOp + 1, "one name per IntOp");
  auto i = static_cast<int64_t>(op);
  return i >= 0 && i <= kLastIntOp ? names[i] : "?";
}

namespace {

/// Element strides of `s` over `outShape` (0 on broadcast dims).
std::vector<int64_t> broadcastStrides(const Shape &s, const Shape &outShape) {
  const size_t rank = outShape.size();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    size_t d = s.size() - 1 - i;
    if (s[d] != 1)
      strides[rank - 1 - i] = stride;
    stride *= s[d];
  }
  return strides;
}

/// Calls f(point, offsets) at every point of `outShape` in row-major order,
/// with each operand's element offset.
template <typename F>
void forEachPoint(const Shape &outShape, const std::vector<std::vector<int64_t>> &strides,
                  F f) {
  const int64_t n = numElements(outShape);
  const size_t rank = outShape.size();
  std::vector<int64_t> index(rank, 0), offset(strides.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, offset);
    for (size_t d = rank; d-- > 0;) {
      for (size_t a = 0; a < strides.size(); ++a)
        offset[a] += strides[a][d];
      if (++index[d] < outShape[d])
        break;
      for (size_t a = 0; a < strides.size(); ++a)
        offset[a] -= strides[a][d] * outShape[d];
      index[d] = 0;
    }
  }
}

/// The two-operand function of `op`.
int64_t binaryValue(IntOp op, int64_t a, int64_t b) {
  namespace s = intscalar;
  switch (op) {
  case IntOp::Add:
    return s::add(a, b);
  case IntOp::Sub:
    return s::sub(a, b);
  case IntOp::Mul:
    return s::mul(a, b);
  case IntOp::Div:
    return s::div(a, b);
  case IntOp::Mod:
    return s::mod(a, b);
  case IntOp::Fmod:
    return s::fmod(a, b);
  case IntOp::Pow:
    return s::pow(a, b);
  case IntOp::Max:
    return a > b ? a : b;
  case IntOp::Min:
    return a < b ? a : b;
  case IntOp::Equal:
    return a == b;
  case IntOp::Less:
    return a < b;
  case IntOp::LessOrEqual:
    return a <= b;
  case IntOp::Greater:
    return a > b;
  case IntOp::GreaterOrEqual:
    return a >= b;
  default:
    return 0;
  }
}

} // namespace

void intElementwise(IntOp op, const IntOperand *operands, int count, int64_t *out,
                    const Shape &outShape) {
  assert(count == intOpArity(op));
  std::vector<std::vector<int64_t>> strides;
  for (int i = 0; i < count; ++i)
    strides.push_back(broadcastStrides(operands[i].shape, outShape));
  const IntOperand &a = operands[0];
  switch (intOpArity(op)) {
  case 1:
    forEachPoint(outShape, strides, [&](int64_t i, const std::vector<int64_t> &o) {
      int64_t x = a.ints[o[0]];
      out[i] = op == IntOp::Neg ? intscalar::neg(x) : op == IntOp::Abs ? intscalar::abs(x) : x;
    });
    return;
  case 3: {
    const IntOperand &b = operands[1], &c = operands[2];
    forEachPoint(outShape, strides, [&](int64_t i, const std::vector<int64_t> &o) {
      out[i] = a.ints[o[0]] != 0 ? b.ints[o[1]] : c.ints[o[2]];
    });
    return;
  }
  default: {
    const IntOperand &b = operands[1];
    if (op == IntOp::Pow && b.floats) {
      forEachPoint(outShape, strides, [&](int64_t i, const std::vector<int64_t> &o) {
        out[i] = intscalar::powFloat(a.ints[o[0]], static_cast<double>(b.floats[o[1]]));
      });
      return;
    }
    forEachPoint(outShape, strides, [&](int64_t i, const std::vector<int64_t> &o) {
      out[i] = binaryValue(op, a.ints[o[0]], b.ints[o[1]]);
    });
    return;
  }
  }
}

} // namespace mixprec::runtime::cpu
