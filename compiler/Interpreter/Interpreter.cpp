//===- Interpreter.cpp - reference execution of mp graphs ------------------===//
#include "compiler/Interpreter/Interpreter.h"

#include "common/numerics/Rounding.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"
#include "dialects/Graph/IR/StorageFormat.h"
#include "runtime/cpu/HostMemory.h"
#include "runtime/cpu/Kernels.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>

using namespace mlir;
namespace cpu = mixprec::runtime::cpu;
namespace num = mixprec::numerics;

namespace mixprec::compiler {

int64_t HostTensor::numElements() const { return cpu::numElements(shape); }

HostTensor HostTensor::makeFloat(std::vector<int64_t> shape, std::vector<float> values) {
  HostTensor t;
  t.shape = std::move(shape);
  t.floats = std::move(values);
  return t;
}

HostTensor::Kind HostTensor::kindOf(Type elementType) {
  if (elementType.isInteger(1))
    return Kind::Bool;
  if (isa<IntegerType>(elementType))
    return Kind::Int;
  return Kind::Float;
}

namespace {

HostTensor::Kind kindOf(Type elementType) { return HostTensor::kindOf(elementType); }

RankedTensorType tensorTypeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

std::vector<int64_t> shapeOf(Value v) {
  ArrayRef<int64_t> s = tensorTypeOf(v).getShape();
  return {s.begin(), s.end()};
}

/// Names an op for diagnostics: "mp.gather 'embed'" or "mp.gather at file:1:2".
std::string describe(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName().getStringRef();
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    os << " '" << name.getName().getValue() << "'";
  else
    os << " at " << op->getLoc();
  return s;
}

/// Rounds float values in place to the storage dtype of `type`.
void roundToStorage(Type elementType, std::vector<float> &values) {
  std::optional<num::Format> format = graph::storageFormatOf(elementType);
  if (!format || *format == num::Format::F32)
    return;
  // FP8 stores saturate (DESIGN.md numerics rules); F16/BF16 overflow to inf.
  num::RoundOptions options;
  options.saturate = *format == num::Format::F8E4M3FN || *format == num::Format::F8E5M2;
  num::roundArray(*format, values.data(), values.data(), values.size(), options);
}

/// Decodes a constant attribute into a host tensor of its storage dtype.
bool decodeConstant(ElementsAttr attr, HostTensor &out, std::string &error) {
  auto type = cast<RankedTensorType>(attr.getType());
  Type et = type.getElementType();
  out.kind = kindOf(et);
  out.shape.assign(type.getShape().begin(), type.getShape().end());
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense) {
    error = "only dense constants are supported";
    return false;
  }
  switch (out.kind) {
  case HostTensor::Kind::Float:
    out.floats = graph::readFloatConstant(dense);
    return true;
  case HostTensor::Kind::Int:
    out.ints.reserve(dense.getNumElements());
    for (const APInt &v : dense.getValues<APInt>())
      out.ints.push_back(v.getSExtValue());
    return true;
  case HostTensor::Kind::Bool:
    out.bools.reserve(dense.getNumElements());
    for (bool v : dense.getValues<bool>())
      out.bools.push_back(v ? 1 : 0);
    return true;
  }
  return false;
}

/// Copies `t` as a tensor of another shape (reshape keeps row-major order).
HostTensor reshaped(const HostTensor &t, std::vector<int64_t> shape) {
  HostTensor r = t;
  r.shape = std::move(shape);
  return r;
}

/// Applies a data-movement kernel to whichever storage `in` uses.
template <typename Fn>
HostTensor moveData(const HostTensor &in, std::vector<int64_t> outShape, Fn &&fn) {
  HostTensor out;
  out.kind = in.kind;
  out.shape = std::move(outShape);
  int64_t n = cpu::numElements(out.shape);
  switch (in.kind) {
  case HostTensor::Kind::Float:
    out.floats.resize(n);
    fn(in.floats.data(), out.floats.data());
    break;
  case HostTensor::Kind::Int:
    out.ints.resize(n);
    fn(in.ints.data(), out.ints.data());
    break;
  case HostTensor::Kind::Bool:
    out.bools.resize(n);
    fn(in.bools.data(), out.bools.data());
    break;
  }
  return out;
}

/// Bytes a tensor of `type` holds in host memory (floats as float32,
/// integers as int64, bools as bytes; see HostTensor); UINT64_MAX when its
/// size does not fit in 64 bits.
uint64_t hostBytesOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  HostTensor::Kind kind = kindOf(tensor.getElementType());
  uint64_t bytes = kind == HostTensor::Kind::Float ? 4 : kind == HostTensor::Kind::Int ? 8 : 1;
  for (int64_t d : tensor.getShape())
    if (d < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
      return UINT64_MAX;
  return bytes;
}

uint64_t hostBytes(const HostTensor &t) {
  return t.floats.size() * sizeof(float) + t.ints.size() * sizeof(int64_t) + t.bools.size();
}

/// a + b, UINT64_MAX on overflow.
uint64_t addBytes(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/// What an op allocates besides its results: conv2d's im2col columns,
/// a reduction's double accumulators, TF32 copies of GEMM operands.
uint64_t scratchBytesOf(Operation *op) {
  uint64_t bytes = 0;
  if (auto conv = dyn_cast<graph::Conv2dOp>(op)) {
    ArrayRef<int64_t> w = tensorTypeOf(conv.getWeight()).getShape();
    ArrayRef<int64_t> out = tensorTypeOf(conv.getOutput()).getShape();
    bytes = 4;
    for (int64_t d : {w[1], w[2], w[3], out[2], out[3]})
      if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
        return UINT64_MAX;
  } else if (isa<graph::ReduceSumOp, graph::ReduceMeanOp, graph::ReduceMaxOp>(op)) {
    bytes = hostBytesOf(op->getResult(0).getType());
    bytes = bytes > UINT64_MAX / 2 ? UINT64_MAX : bytes * 2;
  }
  auto precision = op->getAttrOfType<TypeAttr>(graph::GraphDialect::kPrecisionAttr);
  if (precision && isa<FloatTF32Type>(precision.getValue()))
    for (Value v : op->getOperands())
      bytes = addBytes(bytes, hostBytesOf(v.getType()));
  return bytes;
}

std::array<int64_t, 2> pair(ArrayRef<int64_t> v) { return {v[0], v[1]}; }
std::array<int64_t, 4> quad(ArrayRef<int64_t> v) { return {v[0], v[1], v[2], v[3]}; }

/// Evaluates ops one by one over a value environment.
class Executor {
public:
  Executor(llvm::DenseMap<Value, HostTensor> &env,
           const llvm::DenseMap<Value, HostTensor> &constants)
      : env(env), constants(constants) {
    for (const auto &entry : constants)
      constantBytes += hostBytes(entry.second);
  }

  /// Computes the results of `op` into the environment.
  LogicalResult execute(Operation *op, std::string &error);

private:
  /// Refuses, before allocating, an op whose results and scratch do not
  /// fit beside the live tensors (cpu::fitsInMemory, the CPU backend's
  /// rule for its arena).
  LogicalResult checkMemory(Operation *op, std::string &error);

  /// Constants are read in place, never copied into the environment.
  const HostTensor &get(Value v) {
    auto it = env.find(v);
    return it != env.end() ? it->second : constants.find(v)->second;
  }
  const float *f(Value v) { return get(v).floats.data(); }

  /// Stores a float result, rounding it to the result's storage dtype.
  void setFloat(Value result, std::vector<float> values) {
    roundToStorage(tensorTypeOf(result).getElementType(), values);
    env[result] = HostTensor::makeFloat(shapeOf(result), std::move(values));
  }

  /// A GEMM operand as the GEMM reads it: TF32 GEMMs round FP32 operands
  /// to TF32 first; other dtypes were rounded when stored.
  const float *gemmOperand(Operation *op, Value v, std::vector<float> &scratch) {
    auto precision = op->getAttrOfType<TypeAttr>(graph::GraphDialect::kPrecisionAttr);
    if (!precision || !isa<FloatTF32Type>(precision.getValue()))
      return f(v);
    scratch = get(v).floats;
    for (float &x : scratch)
      x = num::roundToTf32(x);
    return scratch.data();
  }

  std::vector<float> alloc(Value result) {
    return std::vector<float>(cpu::numElements(shapeOf(result)));
  }

  void unary(Operation *op, cpu::UnaryOp kind) {
    Value in = op->getOperand(0), out = op->getResult(0);
    std::vector<float> r = alloc(out);
    cpu::unary(kind, f(in), r.data(), static_cast<int64_t>(r.size()));
    setFloat(out, std::move(r));
  }

  void binary(Operation *op, cpu::BinaryOp kind) {
    Value a = op->getOperand(0), b = op->getOperand(1), out = op->getResult(0);
    std::vector<float> r = alloc(out);
    cpu::binary(kind, f(a), shapeOf(a), f(b), shapeOf(b), r.data(), shapeOf(out));
    setFloat(out, std::move(r));
  }

  void reduce(Operation *op, cpu::ReduceOp kind, ArrayRef<int64_t> axes, bool keepDims) {
    Value in = op->getOperand(0), out = op->getResult(0);
    std::vector<float> r = alloc(out);
    cpu::reduce(kind, f(in), shapeOf(in), std::vector<int64_t>(axes.begin(), axes.end()),
                keepDims, r.data());
    setFloat(out, std::move(r));
  }

  LogicalResult cast(graph::CastOp op, std::string &error);

  /// Applies an FP8 GEMM's epilogue in FP32, as cuBLASLt does: multiply the
  /// accumulator by both dequantization scales (1/scale), then add the bias.
  void dequantizeGemm(std::vector<float> &acc, float scaleA, float scaleB, const float *bias,
                      const cpu::Shape &biasShape, const cpu::Shape &outShape) {
    float factor = (1.0f / scaleA) * (1.0f / scaleB);
    for (float &v : acc)
      v *= factor;
    if (bias)
      cpu::binary(cpu::BinaryOp::Add, acc.data(), outShape, bias, biasShape, acc.data(),
                  outShape);
  }

  llvm::DenseMap<Value, HostTensor> &env;
  const llvm::DenseMap<Value, HostTensor> &constants;
  uint64_t constantBytes = 0;
};

LogicalResult Executor::checkMemory(Operation *op, std::string &error) {
  uint64_t results = 0;
  for (Value v : op->getResults())
    results = addBytes(results, hostBytesOf(v.getType()));
  uint64_t live = constantBytes;
  for (const auto &entry : env)
    live = addBytes(live, hostBytes(entry.second));
  const uint64_t need = addBytes(results, scratchBytesOf(op));
  if (cpu::fitsInMemory(live, need))
    return success();
  std::string shapes;
  for (Value v : op->getResults()) {
    llvm::raw_string_ostream os(shapes);
    os << (shapes.empty() ? "" : ", ") << graph::formatShape(shapeOf(v)) << " "
       << tensorTypeOf(v).getElementType();
  }
  error = "needs " + (need == UINT64_MAX ? std::string("more than 2^64") : std::to_string(need)) +
          " bytes for its result (" + shapes + ")" + (need > results ? " and scratch" : "") +
          " beside " + std::to_string(live) + " bytes of live tensors, more than " +
          cpu::describeUsableMemory();
  return failure();
}

LogicalResult Executor::cast(graph::CastOp op, std::string &error) {
  const HostTensor &in = get(op.getInput());
  Type to = tensorTypeOf(op.getOutput()).getElementType();
  HostTensor out;
  out.kind = kindOf(to);
  out.shape = in.shape;
  int64_t n = in.numElements();
  // Gather every source element as double: exact for float32 and for the
  // int64 values a model casts in practice (|x| < 2^53).
  auto valueAt = [&](int64_t i) -> double {
    switch (in.kind) {
    case HostTensor::Kind::Float:
      return in.floats[i];
    case HostTensor::Kind::Int:
      return static_cast<double>(in.ints[i]);
    case HostTensor::Kind::Bool:
      return in.bools[i];
    }
    return 0;
  };
  switch (out.kind) {
  case HostTensor::Kind::Float:
    out.floats.resize(n);
    for (int64_t i = 0; i < n; ++i)
      out.floats[i] = static_cast<float>(valueAt(i));
    roundToStorage(to, out.floats);
    break;
  case HostTensor::Kind::Int:
    out.ints.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      double v = valueAt(i);
      // ONNX leaves NaN/out-of-range casts undefined; refuse to invent a value.
      if (!std::isfinite(v) || std::fabs(v) >= 9.2e18) {
        error = "cannot cast non-finite or out-of-range value " + std::to_string(v) +
                " to an integer";
        return failure();
      }
      out.ints[i] = static_cast<int64_t>(std::trunc(v));
    }
    break;
  case HostTensor::Kind::Bool:
    out.bools.resize(n);
    for (int64_t i = 0; i < n; ++i)
      out.bools[i] = valueAt(i) != 0.0;
    break;
  }
  env[op.getOutput()] = std::move(out);
  return success();
}

LogicalResult Executor::execute(Operation *op, std::string &error) {
  using namespace graph;
  if (failed(checkMemory(op, error)))
    return failure();
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<CastOp>([&](CastOp o) { return cast(o, error); })
      .Case<MatmulOp>([&](MatmulOp o) {
        std::vector<float> r = alloc(o.getOutput()), sa, sb;
        cpu::matmul(gemmOperand(o, o.getLhs(), sa), shapeOf(o.getLhs()),
                    gemmOperand(o, o.getRhs(), sb), shapeOf(o.getRhs()), r.data(),
                    shapeOf(o.getOutput()));
        setFloat(o.getOutput(), std::move(r));
        return success();
      })
      .Case<LinearOp>([&](LinearOp o) {
        std::vector<float> r = alloc(o.getOutput()), sa, sb;
        Value bias = o.getBias();
        cpu::linear(gemmOperand(o, o.getInput(), sa), shapeOf(o.getInput()),
                    gemmOperand(o, o.getWeight(), sb),
                    shapeOf(o.getWeight()), o.getTransposeWeight(), bias ? f(bias) : nullptr,
                    bias ? shapeOf(bias) : cpu::Shape{}, r.data(), shapeOf(o.getOutput()));
        setFloat(o.getOutput(), std::move(r));
        return success();
      })
      .Case<Conv2dOp>([&](Conv2dOp o) {
        std::vector<float> r = alloc(o.getOutput()), sa, sb;
        Value bias = o.getBias();
        cpu::conv2d(gemmOperand(o, o.getInput(), sa), shapeOf(o.getInput()),
                    gemmOperand(o, o.getWeight(), sb),
                    shapeOf(o.getWeight()), bias ? f(bias) : nullptr, pair(o.getStrides()),
                    quad(o.getPads()), pair(o.getDilations()), o.getGroups(), r.data(),
                    shapeOf(o.getOutput()));
        setFloat(o.getOutput(), std::move(r));
        return success();
      })
      .Case<AddOp>([&](Operation *o) { return binary(o, cpu::BinaryOp::Add), success(); })
      .Case<SubOp>([&](Operation *o) { return binary(o, cpu::BinaryOp::Sub), success(); })
      .Case<MulOp>([&](Operation *o) { return binary(o, cpu::BinaryOp::Mul), success(); })
      .Case<DivOp>([&](Operation *o) { return binary(o, cpu::BinaryOp::Div), success(); })
      .Case<PowOp>([&](Operation *o) { return binary(o, cpu::BinaryOp::Pow), success(); })
      .Case<NegOp>([&](Operation *o) { return unary(o, cpu::UnaryOp::Neg), success(); })
      .Case<ReluOp>([&](Operation *o) { return unary(o, cpu::UnaryOp::Relu), success(); })
      .Case<TanhOp>([&](Operation *o) { return unary(o, cpu::UnaryOp::Tanh), success(); })
      .Case<SigmoidOp>([&](Operation *o) { return unary(o, cpu::UnaryOp::Sigmoid), success(); })
      .Case<SiluOp>([&](Operation *o) { return unary(o, cpu::UnaryOp::Silu), success(); })
      .Case<ExpOp>([&](Operation *o) { return unary(o, cpu::UnaryOp::Exp), success(); })
      .Case<LogOp>([&](Operation *o) { return unary(o, cpu::UnaryOp::Log), success(); })
      .Case<SqrtOp>([&](Operation *o) { return unary(o, cpu::UnaryOp::Sqrt), success(); })
      .Case<RsqrtOp>([&](Operation *o) { return unary(o, cpu::UnaryOp::Rsqrt), success(); })
      .Case<ErfOp>([&](Operation *o) { return unary(o, cpu::UnaryOp::Erf), success(); })
      .Case<ReciprocalOp>(
          [&](Operation *o) { return unary(o, cpu::UnaryOp::Reciprocal), success(); })
      .Case<GeluOp>([&](GeluOp o) {
        unary(o, o.getApproximate() == GeluApproximation::tanh ? cpu::UnaryOp::GeluTanh : cpu::UnaryOp::GeluErf);
        return success();
      })
      .Case<WhereOp>([&](WhereOp o) {
        std::vector<float> r = alloc(o.getOutput());
        Value c = o.getCondition();
        cpu::where(get(c).bools.data(), shapeOf(c), f(o.getLhs()), shapeOf(o.getLhs()),
                   f(o.getRhs()), shapeOf(o.getRhs()), r.data(), shapeOf(o.getOutput()));
        setFloat(o.getOutput(), std::move(r));
        return success();
      })
      .Case<SoftmaxOp>([&](SoftmaxOp o) {
        std::vector<float> r = alloc(o.getOutput());
        cpu::softmax(f(o.getInput()), shapeOf(o.getInput()), o.getAxis(), r.data());
        setFloat(o.getOutput(), std::move(r));
        return success();
      })
      .Case<LogSoftmaxOp>([&](LogSoftmaxOp o) {
        std::vector<float> r = alloc(o.getOutput());
        cpu::logSoftmax(f(o.getInput()), shapeOf(o.getInput()), o.getAxis(), r.data());
        setFloat(o.getOutput(), std::move(r));
        return success();
      })
      .Case<LayerNormOp>([&](LayerNormOp o) {
        std::vector<float> r = alloc(o.getOutput());
        std::vector<float> ones;
        const float *scale = nullptr;
        if (Value s = o.getScale()) {
          scale = f(s);
        } else {
          // One per normalized element (the product of the dims from axis
          // on; not a quotient, which an empty leading dim makes 0/0).
          std::vector<int64_t> in = shapeOf(o.getInput());
          ones.assign(cpu::numElements(std::vector<int64_t>(in.begin() + o.getAxis(), in.end())),
                      1.0f);
          scale = ones.data();
        }
        cpu::layerNorm(f(o.getInput()), shapeOf(o.getInput()), o.getAxis(), scale,
                       o.getBias() ? f(o.getBias()) : nullptr,
                       o.getEpsilon().convertToFloat(), r.data());
        setFloat(o.getOutput(), std::move(r));
        return success();
      })
      .Case<RmsNormOp>([&](RmsNormOp o) {
        std::vector<float> r = alloc(o.getOutput());
        cpu::rmsNorm(f(o.getInput()), shapeOf(o.getInput()), o.getAxis(),
                     o.getScale() ? f(o.getScale()) : nullptr, o.getEpsilon().convertToFloat(),
                     r.data());
        setFloat(o.getOutput(), std::move(r));
        return success();
      })
      .Case<BatchNormOp>([&](BatchNormOp o) {
        std::vector<float> r = alloc(o.getOutput());
        cpu::batchNormInference(f(o.getInput()), shapeOf(o.getInput()), f(o.getScale()),
                                f(o.getBias()), f(o.getMean()), f(o.getVariance()),
                                o.getEpsilon().convertToFloat(), r.data());
        setFloat(o.getOutput(), std::move(r));
        return success();
      })
      .Case<ReduceSumOp>([&](ReduceSumOp o) {
        return reduce(o, cpu::ReduceOp::Sum, o.getAxes(), o.getKeepdims()), success();
      })
      .Case<ReduceMeanOp>([&](ReduceMeanOp o) {
        return reduce(o, cpu::ReduceOp::Mean, o.getAxes(), o.getKeepdims()), success();
      })
      .Case<ReduceMaxOp>([&](ReduceMaxOp o) {
        return reduce(o, cpu::ReduceOp::Max, o.getAxes(), o.getKeepdims()), success();
      })
      .Case<ReshapeOp>([&](ReshapeOp o) {
        env[o.getOutput()] = reshaped(get(o.getInput()), shapeOf(o.getOutput()));
        return success();
      })
      .Case<TransposeOp>([&](TransposeOp o) {
        std::vector<int64_t> perm(o.getPerm().begin(), o.getPerm().end());
        std::vector<int64_t> inShape = shapeOf(o.getInput());
        env[o.getOutput()] = moveData(get(o.getInput()), shapeOf(o.getOutput()),
                                      [&](const auto *in, auto *out) {
                                        cpu::transpose(in, inShape, perm, out);
                                      });
        return success();
      })
      .Case<SliceOp>([&](SliceOp o) {
        std::vector<int64_t> starts(o.getStarts().begin(), o.getStarts().end());
        std::vector<int64_t> steps(o.getSteps().begin(), o.getSteps().end());
        std::vector<int64_t> inShape = shapeOf(o.getInput()), outShape = shapeOf(o.getOutput());
        env[o.getOutput()] =
            moveData(get(o.getInput()), outShape, [&](const auto *in, auto *out) {
              cpu::slice(in, inShape, starts, steps, outShape, out);
            });
        return success();
      })
      .Case<ConcatOp>([&](ConcatOp o) -> LogicalResult {
        HostTensor out;
        out.kind = get(o.getInputs().front()).kind;
        out.shape = shapeOf(o.getOutput());
        std::vector<cpu::Shape> shapes;
        for (Value v : o.getInputs())
          shapes.push_back(shapeOf(v));
        int64_t n = cpu::numElements(out.shape);
        auto join = [&](auto member, auto &dest) {
          using T = typename std::decay_t<decltype(dest)>::value_type;
          std::vector<const T *> ins;
          for (Value v : o.getInputs())
            ins.push_back((get(v).*member).data());
          dest.resize(n);
          cpu::concat(ins, shapes, o.getAxis(), dest.data());
        };
        switch (out.kind) {
        case HostTensor::Kind::Float:
          join(&HostTensor::floats, out.floats);
          break;
        case HostTensor::Kind::Int:
          join(&HostTensor::ints, out.ints);
          break;
        case HostTensor::Kind::Bool:
          join(&HostTensor::bools, out.bools);
          break;
        }
        env[o.getOutput()] = std::move(out);
        return success();
      })
      .Case<GatherOp>([&](GatherOp o) -> LogicalResult {
        const HostTensor &indices = get(o.getIndices());
        std::vector<int64_t> dataShape = shapeOf(o.getData());
        bool inRange = true;
        env[o.getOutput()] =
            moveData(get(o.getData()), shapeOf(o.getOutput()), [&](const auto *in, auto *out) {
              inRange = cpu::gather(in, dataShape, indices.ints.data(), indices.shape,
                                    o.getAxis(), out);
            });
        if (!inRange) {
          error = "an index is out of range for dimension " + std::to_string(o.getAxis()) +
                  " of size " + std::to_string(dataShape[o.getAxis()]);
          return failure();
        }
        return success();
      })
      .Case<MaxPool2dOp>([&](MaxPool2dOp o) {
        std::vector<float> r = alloc(o.getOutput());
        std::array<int64_t, 2> dilations{1, 1};
        if (auto d = o.getDilations())
          dilations = pair(*d);
        cpu::maxPool2d(f(o.getInput()), shapeOf(o.getInput()), pair(o.getKernelShape()),
                       pair(o.getStrides()), quad(o.getPads()), dilations, r.data(),
                       shapeOf(o.getOutput()));
        setFloat(o.getOutput(), std::move(r));
        return success();
      })
      .Case<AvgPool2dOp>([&](AvgPool2dOp o) {
        std::vector<float> r = alloc(o.getOutput());
        cpu::avgPool2d(f(o.getInput()), shapeOf(o.getInput()), pair(o.getKernelShape()),
                       pair(o.getStrides()), quad(o.getPads()), o.getCountIncludePad(),
                       r.data(), shapeOf(o.getOutput()));
        setFloat(o.getOutput(), std::move(r));
        return success();
      })
      .Case<QuantizeOp>([&](QuantizeOp o) {
        // Saturates finite values; an inf or NaN (or a NaN scale) is NaN.
        float scale = f(o.getScale())[0];
        std::vector<float> r(get(o.getInput()).floats);
        num::quantizeFp8Array(*graph::storageFormatOf(tensorTypeOf(o.getOutput()).getElementType()),
                              r.data(), scale, r.data(), r.size());
        setFloat(o.getOutput(), std::move(r)); // exact: already FP8 values
        return success();
      })
      .Case<DequantizeOp>([&](DequantizeOp o) {
        float scale = f(o.getScale())[0];
        std::vector<float> r(get(o.getInput()).floats);
        for (float &v : r)
          v /= scale;
        setFloat(o.getOutput(), std::move(r));
        return success();
      })
      .Case<Fp8ScaleOp>([&](Fp8ScaleOp o) {
        auto format = o.getFormat().isFloat8E5M2() ? num::Format::F8E5M2 : num::Format::F8E4M3FN;
        setFloat(o.getScale(), {num::fp8Scale(format, f(o.getAmax())[0],
                                              static_cast<int64_t>(o.getMargin()))});
        return success();
      })
      .Case<ScaledMatmulOp>([&](ScaledMatmulOp o) {
        std::vector<float> r = alloc(o.getOutput());
        cpu::matmul(f(o.getLhs()), shapeOf(o.getLhs()), f(o.getRhs()), shapeOf(o.getRhs()),
                    r.data(), shapeOf(o.getOutput()));
        dequantizeGemm(r, f(o.getLhsScale())[0], f(o.getRhsScale())[0], nullptr, {},
                       shapeOf(o.getOutput()));
        setFloat(o.getOutput(), std::move(r));
        return success();
      })
      .Case<ScaledLinearOp>([&](ScaledLinearOp o) {
        std::vector<float> r = alloc(o.getOutput());
        cpu::linear(f(o.getInput()), shapeOf(o.getInput()), f(o.getWeight()),
                    shapeOf(o.getWeight()), o.getTransposeWeight(), nullptr, {}, r.data(),
                    shapeOf(o.getOutput()));
        Value bias = o.getBias();
        dequantizeGemm(r, f(o.getInputScale())[0], f(o.getWeightScale())[0],
                       bias ? f(bias) : nullptr, bias ? shapeOf(bias) : cpu::Shape{},
                       shapeOf(o.getOutput()));
        setFloat(o.getOutput(), std::move(r));
        return success();
      })
      .Case<FusionOp>([&](FusionOp o) -> LogicalResult {
        // A fused kernel computes exactly what its ops compute, rounding
        // every intermediate to its IR dtype; only the memory traffic differs.
        Block &body = o.getBody().front();
        // Copy before inserting: get() refers into `env`, which may rehash.
        for (auto [arg, input] : llvm::zip(body.getArguments(), o.getInputs())) {
          HostTensor value = get(input);
          env[arg] = std::move(value);
        }
        for (Operation &inner : body.without_terminator()) {
          if (auto constant = dyn_cast<ConstantOp>(inner)) {
            HostTensor t;
            if (!decodeConstant(constant.getValue(), t, error))
              return failure();
            env[constant.getOutput()] = std::move(t);
            continue;
          }
          if (failed(execute(&inner, error))) {
            error = describe(&inner) + ": " + error;
            return failure();
          }
        }
        auto yield = llvm::cast<YieldOp>(body.getTerminator());
        for (auto [result, yielded] : llvm::zip(o.getResults(), yield.getValues())) {
          HostTensor value = get(yielded);
          env[result] = std::move(value);
        }
        for (Operation &inner : body.without_terminator())
          for (Value v : inner.getResults())
            env.erase(v);
        for (BlockArgument arg : body.getArguments())
          env.erase(arg);
        return success();
      })
      .Case<AmaxOp>([&](AmaxOp o) {
        float amax = 0.0f;
        for (float v : get(o.getInput()).floats)
          amax = std::isnan(v) || std::isnan(amax) ? NAN : std::max(amax, std::fabs(v));
        setFloat(o.getOutput(), {amax});
        return success();
      })
      .Default([&](Operation *o) {
        error = "unsupported op";
        return failure();
      });
}

/// Checks one runtime input against its declared type.
bool checkInput(const TensorSpec &spec, const HostTensor &t, std::string &error) {
  if (t.shape != spec.shape) {
    error = "input '" + spec.name + "' has shape " + graph::formatShape(t.shape) +
            ", the graph expects " + graph::formatShape(spec.shape);
    return false;
  }
  HostTensor::Kind want = kindOf(spec.elementType);
  if (t.kind != want) {
    std::string expected;
    llvm::raw_string_ostream os(expected);
    os << spec.elementType;
    error = "input '" + spec.name + "' has the wrong element kind, the graph expects " +
            expected;
    return false;
  }
  size_t stored = t.kind == HostTensor::Kind::Float ? t.floats.size()
                  : t.kind == HostTensor::Kind::Int ? t.ints.size()
                                                    : t.bools.size();
  if (static_cast<int64_t>(stored) != t.numElements()) {
    error = "input '" + spec.name + "' holds " + std::to_string(stored) +
            " values for shape " + graph::formatShape(t.shape);
    return false;
  }
  return true;
}

} // namespace

GraphSignature getSignature(func::FuncOp func) {
  GraphSignature sig;
  FunctionType type = func.getFunctionType();
  auto spec = [](Type t, StringAttr name, std::string fallback) {
    auto tensor = cast<RankedTensorType>(t);
    return TensorSpec{name ? name.getValue().str() : std::move(fallback),
                      {tensor.getShape().begin(), tensor.getShape().end()},
                      tensor.getElementType()};
  };
  for (unsigned i = 0; i < type.getNumInputs(); ++i)
    sig.inputs.push_back(spec(type.getInput(i),
                              func.getArgAttrOfType<StringAttr>(i, graph::GraphDialect::kNameAttr),
                              "input_" + std::to_string(i)));
  for (unsigned i = 0; i < type.getNumResults(); ++i)
    sig.outputs.push_back(
        spec(type.getResult(i),
             func.getResultAttrOfType<StringAttr>(i, graph::GraphDialect::kNameAttr),
             "output_" + std::to_string(i)));
  return sig;
}

func::FuncOp findEntryFunction(ModuleOp module, std::string &error) {
  auto funcs = llvm::to_vector(module.getOps<func::FuncOp>());
  for (func::FuncOp f : funcs)
    if (f.getSymName() == "main")
      return f;
  if (funcs.size() == 1)
    return funcs.front();
  error = funcs.empty() ? "the module has no function"
                        : "the module has several functions and none is named @main";
  return nullptr;
}

bool Interpreter::prepare(std::string &error) {
  for (Type t : func.getFunctionType().getInputs())
    if (!isa<RankedTensorType>(t) || !cast<RankedTensorType>(t).hasStaticShape()) {
      error = "graph inputs must be statically shaped tensors";
      return false;
    }
  for (Type t : func.getFunctionType().getResults())
    if (!isa<RankedTensorType>(t)) {
      error = "graph outputs must be ranked tensors";
      return false;
    }
  if (!func.getBody().hasOneBlock()) {
    error = "graph function must have one block";
    return false;
  }
  for (Operation &op : func.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    if (auto constant = dyn_cast<graph::ConstantOp>(op)) {
      HostTensor t;
      if (!decodeConstant(constant.getValue(), t, error)) {
        error = describe(&op) + ": " + error;
        return false;
      }
      constants[constant.getOutput()] = std::move(t);
      continue;
    }
    if (op.getDialect() == nullptr || !isa<graph::GraphDialect>(op.getDialect())) {
      error = describe(&op) + ": unsupported op (the interpreter runs mp ops only)";
      return false;
    }
  }
  prepared = true;
  return true;
}

bool Interpreter::run(const std::vector<HostTensor> &inputs, std::vector<HostTensor> &outputs,
                      std::string &error) {
  if (!prepared && !prepare(error))
    return false;
  GraphSignature sig = getSignature(func);
  if (inputs.size() != sig.inputs.size()) {
    error = "expected " + std::to_string(sig.inputs.size()) + " inputs, got " +
            std::to_string(inputs.size());
    return false;
  }
  Block &body = func.getBody().front();

  // Free each intermediate after its last use so peak memory stays near the
  // largest live set, not the sum of all tensors.
  llvm::DenseMap<Operation *, unsigned> position;
  unsigned index = 0;
  for (Operation &op : body)
    position[&op] = index++;
  llvm::DenseMap<Operation *, SmallVector<Value>> dyingAfter;
  auto noteLastUse = [&](Value v) {
    Operation *last = nullptr;
    for (Operation *user : v.getUsers())
      if (!last || position[user] > position[last])
        last = user;
    if (last && !isa<func::ReturnOp>(last))
      dyingAfter[last].push_back(v);
  };

  llvm::DenseMap<Value, HostTensor> env;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (!checkInput(sig.inputs[i], inputs[i], error))
      return false;
    HostTensor t = inputs[i];
    if (t.kind == HostTensor::Kind::Float)
      roundToStorage(sig.inputs[i].elementType, t.floats);
    env[arg] = std::move(t);
    noteLastUse(arg);
  }

  Executor executor(env, constants);
  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      outputs.clear();
      for (Value v : ret.getOperands()) {
        auto it = env.find(v);
        outputs.push_back(it != env.end() ? it->second : constants.find(v)->second);
      }
      return true;
    }
    if (!isa<graph::ConstantOp>(op)) {
      std::string why;
      if (failed(executor.execute(&op, why))) {
        error = describe(&op) + ": " + why;
        return false;
      }
    }
    if (observer) {
      SmallVector<const HostTensor *> results;
      for (Value result : op.getResults()) {
        auto it = env.find(result);
        results.push_back(it != env.end() ? &it->second : &constants.find(result)->second);
      }
      observer(&op, results);
    }
    for (Value result : op.getResults())
      noteLastUse(result);
    auto dying = dyingAfter.find(&op);
    if (dying != dyingAfter.end())
      for (Value v : dying->second)
        env.erase(v);
  }
  error = "graph function has no return";
  return false;
}

} // namespace mixprec::compiler
