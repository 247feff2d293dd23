//===- InsertScaling.cpp - --mp-insert-scaling -----------------------------===//
#include "passes/Passes.h"

#include "common/numerics/BlockScaling.h"
#include "common/numerics/Rounding.h"
#include "dialects/Graph/IR/GraphBuilder.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/StorageFormat.h"
#include "passes/Precision/PrecisionUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <tuple>

#include <cmath>

namespace mixprec::passes {
#define GEN_PASS_DEF_INSERTSCALINGPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;
using mixprec::graph::GraphDialect;
namespace num = mixprec::numerics;

namespace mixprec::passes {
namespace {

/// The rounding format of an FP8 type (the pass only sees FP8 precisions).
num::Format fp8Format(Type t) { return *graph::storageFormatOf(t); }

/// The Transformer Engine rule (numerics::fp8Scale) for an FP8 type.
float scaleFor(double amax, Type format, int64_t margin) {
  return num::fp8Scale(fp8Format(format), amax, margin);
}

/// A rank-0 f32 constant.
Value scalarConstant(OpBuilder &b, Location loc, float v) {
  auto type = RankedTensorType::get({}, b.getF32Type());
  return b.create<graph::ConstantOp>(loc, DenseElementsAttr::get(type, v));
}

/// An FP8 tensor and the scale it was quantized with.
struct Quantized {
  Value value;
  Value scale;
};

/// Quantizes a constant at compile time with a scale from its own amax.
std::optional<Quantized> quantizeConstant(OpBuilder &b, graph::ConstantOp constant,
                                          Type format, int64_t margin) {
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense)
    return std::nullopt;
  std::vector<float> values = graph::readFloatConstant(dense);
  // NaN propagates, as mp.amax does at run time: an inf or NaN weight makes
  // the scale NaN and every quantized weight NaN (numerics::fp8Scale).
  double amax = 0;
  for (float v : values)
    amax = std::isnan(v) || std::isnan(amax) ? NAN : std::max(amax, std::fabs(double(v)));
  float scale = scaleFor(amax, format, margin);
  num::quantizeFp8Array(fp8Format(format), values.data(), scale, values.data(), values.size());
  // Exact: the values are FP8 already (NaN included).
  auto type = cast<RankedTensorType>(dense.getType()).clone(format);
  Location loc = constant.getLoc();
  Value q = b.create<graph::ConstantOp>(loc, graph::storeFloatConstant(type, values));
  return Quantized{q, scalarConstant(b, loc, scale)};
}

/// The FP8 type an op's assigned precision (`mp.precision`) names when the
/// op has an FP8 GEMM form; null for every other op.
Type fp8GemmFormat(Operation *op) {
  auto precision = op->getAttrOfType<TypeAttr>(GraphDialect::kPrecisionAttr);
  auto policy = dyn_cast<graph::PrecisionPolicyOpInterface>(op);
  if (!precision || !isa<Float8E4M3FNType, Float8E5M2Type>(precision.getValue()) || !policy ||
      !policy.hasFp8GemmForm())
    return nullptr;
  return precision.getValue();
}

/// The static shape of a ranked tensor value.
std::vector<int64_t> shapeOf(Value v) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
  return std::vector<int64_t>(shape.begin(), shape.end());
}

/// Whether `scaling` scales per block.
bool isBlockScaling(Fp8Scaling scaling) {
  return scaling == Fp8Scaling::Block || scaling == Fp8Scaling::Mxfp8;
}

/// Whether FP8 GEMM `op` takes block scales: an mp.linear or mp.matmul of an
/// input of rank >= 2 by a 2-D matrix (a vector input keeps per-tensor
/// scaling).
bool blockScalable(Operation *op) {
  if (auto linear = dyn_cast<graph::LinearOp>(op))
    return shapeOf(linear.getWeight()).size() == 2 && shapeOf(linear.getInput()).size() >= 2;
  if (auto matmul = dyn_cast<graph::MatmulOp>(op))
    return shapeOf(matmul.getRhs()).size() == 2 && shapeOf(matmul.getLhs()).size() >= 2;
  return false;
}

/// The 2-D transpose of row-major `values` [rows, cols].
std::vector<float> transposed2d(const std::vector<float> &values, int64_t rows, int64_t cols) {
  std::vector<float> out(values.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[static_cast<size_t>(c * rows + r)] = values[static_cast<size_t>(r * cols + c)];
  return out;
}

/// How activations are scaled (the pass options).
struct ScalingOptions {
  Fp8Scaling scaling; ///< delayed scales are made current, then state
  int64_t margin;
  bool hybrid; ///< gradient operands in f8E5M2
};

/// A run-time scale the pattern made (mp.amax, mp.fp8_scale), and the site
/// it scales ("fc1.input"): delayed scaling turns it into module state.
struct ScaleSite {
  graph::Fp8ScaleOp scale;
  std::string name;
};

/// The FP8 copies made at run time, by the value quantized and the format:
/// every GEMM that reads the same value in the same format reads one copy
/// (quantize is element-wise and the scale comes from the value's amax, so
/// a second copy would hold the same bytes). A training step's weight is
/// quantized once for its forward GEMM and its dX GEMM, an activation once
/// for its forward GEMM and its weight-gradient GEMM (Transformer Engine's
/// one FP8 copy and its transpose), with one scaling site each.
struct QuantizedCopies {
  llvm::DenseMap<std::pair<Value, Type>, Quantized> bySource;
  /// Block-scaled copies: by the value, the format, whether the copy is of
  /// its transpose, and the block (rows, cols).
  std::map<std::tuple<const void *, const void *, bool, int64_t, int64_t>, Quantized> blocks;
  /// The last op made for a copy of a block argument, per block: the next
  /// such copy goes after it, so that copies keep the order they were made in.
  llvm::DenseMap<Block *, Operation *> argumentCopiesEnd;
};

/// What a GEMM operand `v` quantizes: the value under its exact widenings
/// (quantize and amax read the narrow value the same: mp.quantize's folder)
/// and 2-D transposes (the copy of x, transposed, is the copy of x^T), and
/// whether an odd number of transposes lay between. A training step's
/// forward GEMM reads cast(h) and its weight-gradient GEMM
/// cast(transpose(h)): both are copies of h.
struct QuantizedSource {
  Value value;
  bool transposed = false;
};
QuantizedSource quantizedSource(Value v) {
  QuantizedSource source{v, false};
  while (true) {
    if (auto cast = source.value.getDefiningOp<graph::CastOp>()) {
      Type narrow = cast.getInput().getType().getElementType();
      if (!isa<Float8E4M3FNType, Float8E5M2Type>(narrow) &&
          graph::isExactWidening(narrow, cast.getType().getElementType())) {
        source.value = cast.getInput();
        continue;
      }
    }
    if (auto t = source.value.getDefiningOp<graph::TransposeOp>())
      if (cast<RankedTensorType>(t.getType()).getRank() == 2 &&
          llvm::equal(t.getPerm(), ArrayRef<int64_t>{1, 0})) {
        source.value = t.getInput();
        source.transposed = !source.transposed;
        continue;
      }
    return source;
  }
}

/// The calibrated amax of `v` (an op's result, or a graph input), or null.
FloatAttr calibratedAmax(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    // A graph input: calibrate() puts its amax on the argument.
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    return func && arg.getOwner()->isEntryBlock()
               ? func.getArgAttrOfType<FloatAttr>(arg.getArgNumber(), GraphDialect::kCalibAmaxAttr)
               : nullptr;
  }
  return v.getDefiningOp()->getAttrOfType<FloatAttr>(GraphDialect::kCalibAmaxAttr);
}

bool isCalibrated(Value v) { return static_cast<bool>(calibratedAmax(v)); }

/// A calibrated value's per-tensor FP8 copy is made before the reshapes
/// between it and the GEMM (each past exact widenings, no transposes):
/// amax and quantize commute with a reshape, and the quantize then fuses
/// into the value's producer, where a reshape between them would end the
/// kernel (GPT-2's ln_2 -> reshape -> c_fc: a kernel of its own that read
/// the LayerNorm's output back, 0.1-0.35 ms a GEMM per layer on the CPU).
/// Returns the value to quantize, `source` itself when it is not such a
/// reshape, and appends the reshapes passed (outermost first) to replay
/// on the copy.
Value pastCalibratedReshapes(Value source, SmallVectorImpl<graph::ReshapeOp> &reshapes) {
  while (auto reshape = source.getDefiningOp<graph::ReshapeOp>()) {
    QuantizedSource inner = quantizedSource(reshape.getInput());
    if (inner.transposed || !isCalibrated(inner.value))
      break;
    reshapes.push_back(reshape);
    source = inner.value;
  }
  return source;
}

/// Whether a GEMM operand gets its scale at compile time under static
/// scaling: a dense constant (quantized from its own amax) or a value
/// whose quantized source (where quantize reads the calibration: past
/// exact widenings and 2-D transposes, and calibrated values' reshapes) is
/// the result of an op with calibration evidence. (Checking the operand
/// itself refused GPT-2's c_proj, whose FP8 input is a widening cast of a
/// calibrated reshape: the cast came after calibration.)
bool hasStaticScale(Value v) {
  if (auto constant = v.getDefiningOp<graph::ConstantOp>())
    if (isa<DenseElementsAttr>(constant.getValue()))
      return true;
  QuantizedSource source = quantizedSource(v);
  SmallVector<graph::ReshapeOp> reshapes;
  return isCalibrated(source.transposed ? source.value
                                        : pastCalibratedReshapes(source.value, reshapes));
}

/// Whether FP8 GEMM `gemm` cannot be scaled as `scaling` asks: under
/// static scaling, an operand without a compile-time scale.
bool needsMissingCalibration(Operation *gemm, Fp8Scaling scaling) {
  return scaling == Fp8Scaling::Static &&
         !(hasStaticScale(gemm->getOperand(0)) && hasStaticScale(gemm->getOperand(1)));
}

/// The name of operand `index` of a GEMM, for state names: the op's name
/// (or "gemm") and the operand's role.
std::string siteName(Operation *gemm, unsigned index) {
  std::string name = opName(gemm);
  if (name.empty())
    name = "gemm";
  bool linear = isa<graph::LinearOp>(gemm);
  return name + "." + (index == 0 ? (linear ? "input" : "lhs") : (linear ? "weight" : "rhs"));
}

/// Whether operand `index` of `gemm` carries a gradient (mp.grad_operands).
bool isGradOperand(Operation *gemm, unsigned index) {
  auto indices = gemm->getAttrOfType<DenseI64ArrayAttr>(GraphDialect::kGradOperandsAttr);
  return indices && llvm::is_contained(indices.asArrayRef(), int64_t(index));
}

/// An FP8 matmul or linear becomes its scaled form: both operands quantized
/// (constants now, activations at run time) and the GEMM dequantizing in
/// its epilogue. Under scaling=static an activation without calibration
/// evidence does not match (the pass reports it before the rewrite).
struct ScaleFp8Gemm : OpInterfaceRewritePattern<graph::PrecisionPolicyOpInterface> {
  ScaleFp8Gemm(MLIRContext *ctx, ScalingOptions options, std::vector<ScaleSite> &sites,
               QuantizedCopies &copies)
      : OpInterfaceRewritePattern(ctx), options(std::move(options)), sites(sites), copies(copies) {}

  LogicalResult matchAndRewrite(graph::PrecisionPolicyOpInterface gemm,
                                PatternRewriter &rewriter) const override {
    Operation *op = gemm.getOperation();
    Type format = fp8GemmFormat(op);
    if (!format)
      return rewriter.notifyMatchFailure(op, "not an FP8 GEMM");
    if (isBlockScaling(options.scaling) && blockScalable(op))
      return rewriteBlockScaled(rewriter, op);
    if (needsMissingCalibration(op, options.scaling))
      return rewriter.notifyMatchFailure(op, "scaling=static without calibration");
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    Quantized qa = quantize(rewriter, op, 0, lhs, operandFormat(op, 0));
    Quantized qb = quantize(rewriter, op, 1, rhs, operandFormat(op, 1));
    Operation *scaled = createScaledGemm(rewriter, op, qa, qb);
    for (StringRef name : {GraphDialect::kPrecisionAttr, GraphDialect::kReasonAttr,
                           GraphDialect::kCalibAmaxAttr, GraphDialect::kCalibUnderflowAttr,
                           GraphDialect::kGradOperandsAttr})
      if (Attribute a = op->getAttr(name))
        scaled->setAttr(name, a);
    rewriter.replaceOp(op, scaled->getResults());
    // A weight now stored in FP8 leaves its wide original dead, and so
    // does a transpose that createScaledGemm read past.
    for (Value operand : {lhs, rhs})
      if (Operation *producer = operand.getDefiningOp();
          producer && isa<graph::ConstantOp, graph::TransposeOp>(producer) &&
          producer->use_empty())
        rewriter.eraseOp(producer);
    return success();
  }

private:
  /// The block-scaled form of an FP8 mp.linear / mp.matmul (blockScalable):
  /// a (contraction last) and b as [n, k], each quantized per block, one
  /// block-scaled mp.scaled_linear.
  LogicalResult rewriteBlockScaled(PatternRewriter &b, Operation *op) const {
    Value lhs = op->getOperand(0), rhs = op->getOperand(1), bias;
    bool rhsIsNk = false;
    if (auto linear = dyn_cast<graph::LinearOp>(op)) {
      bias = linear.getBias();
      rhsIsNk = linear.getTransposeWeight();
    }
    const bool mx = options.scaling == Fp8Scaling::Mxfp8;
    auto blockOf = [&](Value v) -> std::pair<int64_t, int64_t> {
      if (mx)
        return {1, 32};
      // A weight (graph::isWeightLike: a constant or an mp.state argument,
      // through casts, transposes and reshapes) gets 128 x 128 blocks.
      return {graph::isWeightLike(v) && shapeOf(v).size() == 2 ? 128 : 1, 128};
    };
    auto [aRows, aCols] = blockOf(lhs);
    auto [bRows, bCols] = blockOf(rhs);
    auto [aSource, aTransposed] = quantizedSource(lhs);
    auto [bSource, bTransposed] = quantizedSource(rhs);
    Quantized qa = blockCopy(b, op, aSource, aTransposed, operandFormat(op, 0), aRows, aCols);
    // b as [n, k]: the operand itself, or its transpose.
    Quantized qb =
        blockCopy(b, op, bSource, bTransposed != !rhsIsNk, operandFormat(op, 1), bRows, bCols);
    auto accType = op->getAttrOfType<TypeAttr>("acc_type");
    auto scaled = b.create<graph::ScaledLinearOp>(
        op->getLoc(), op->getResult(0).getType(), qa.value, qb.value, qa.scale, qb.scale, bias,
        b.getBoolAttr(true), accType, b.getDenseI64ArrayAttr({aRows, aCols}),
        b.getDenseI64ArrayAttr({bRows, bCols}));
    for (StringRef name : {GraphDialect::kPrecisionAttr, GraphDialect::kReasonAttr,
                           GraphDialect::kCalibAmaxAttr, GraphDialect::kCalibUnderflowAttr,
                           GraphDialect::kGradOperandsAttr, GraphDialect::kNameAttr})
      if (Attribute a = op->getAttr(name))
        scaled->setAttr(name, a);
    b.replaceOp(op, scaled->getResults());
    for (Value operand : {lhs, rhs})
      if (Operation *producer = operand.getDefiningOp();
          producer && isa<graph::ConstantOp, graph::TransposeOp>(producer) && producer->use_empty())
        b.eraseOp(producer);
    return success();
  }

  /// The block-scaled FP8 copy of `source` (transposed when `transposed`,
  /// 2-D) in `format` with blocks rows x cols: made once per value,
  /// orientation and block. A 128 x 128 copy is made of `source` itself
  /// and transposed (data and scales) where the transpose is read: the
  /// blocks are square, so that is the copy of the transpose (a constant's
  /// copy is made in the orientation read instead).
  Quantized blockCopy(PatternRewriter &b, Operation *user, Value source, bool transposed,
                      Type format, int64_t rows, int64_t cols) const {
    // (A constant is quantized now in the orientation read: no transposes
    // at run time.)
    const bool square = rows == cols && rows > 1 && !source.getDefiningOp<graph::ConstantOp>();
    auto key = std::make_tuple(source.getAsOpaquePointer(), format.getAsOpaquePointer(),
                               transposed && !square, rows, cols);
    Quantized copy;
    if (auto it = copies.blocks.find(key); it != copies.blocks.end())
      copy = it->second;
    else
      copies.blocks[key] = copy =
          makeBlockCopy(b, user, source, transposed && !square, format, rows, cols);
    if (!(transposed && square))
      return copy;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(user);
    graph::GraphBuilder g(b, user->getLoc());
    return Quantized{g.transpose(copy.value, {1, 0}), g.transpose(copy.scale, {1, 0})};
  }

  Quantized makeBlockCopy(PatternRewriter &b, Operation *user, Value source, bool transposed,
                          Type format, int64_t rows, int64_t cols) const {
    const bool mx = options.scaling == Fp8Scaling::Mxfp8;
    const num::BlockRecipe recipe = mx ? num::BlockRecipe::Mx : num::BlockRecipe::Block;
    Location loc = user->getLoc();
    std::vector<int64_t> shape = shapeOf(source);
    if (transposed)
      std::swap(shape[0], shape[1]);
    auto fp8Type = RankedTensorType::get(shape, format);
    std::vector<int64_t> scaleShape = num::blockScaleShape(shape, rows, cols);
    auto scaleType = RankedTensorType::get(scaleShape, b.getF32Type());
    // A constant weight: quantized now.
    if (auto constant = source.getDefiningOp<graph::ConstantOp>())
      if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue())) {
        std::vector<float> values = graph::readFloatConstant(dense);
        if (transposed)
          values = transposed2d(values, shape[1], shape[0]);
        num::BlockLayout layout = num::BlockLayout::of(shape, rows, cols);
        std::vector<float> scales(static_cast<size_t>(layout.scaleCount()));
        num::computeBlockScales(fp8Format(format), recipe, options.margin, layout, values.data(),
                                scales.data());
        num::blockQuantize(fp8Format(format), layout, values.data(), scales.data(), values.data());
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(constant);
        Value q = b.create<graph::ConstantOp>(loc, graph::storeFloatConstant(fp8Type, values));
        Value s = b.create<graph::ConstantOp>(
            loc, DenseElementsAttr::get(scaleType, ArrayRef<float>(scales)));
        return Quantized{q, s};
      }
    OpBuilder::InsertionGuard guard(b);
    Block *argumentBlock = insertAfterSource(b, source);
    graph::GraphBuilder g(b, loc);
    Value wide = transposed ? g.transpose(source, {1, 0}) : source;
    auto block = b.getDenseI64ArrayAttr({rows, cols});
    Value scales = b.create<graph::BlockScaleOp>(loc, scaleType, wide, TypeAttr::get(format), block,
                                                 b.getStringAttr(num::blockRecipeName(recipe)),
                                                 b.getI64IntegerAttr(options.margin));
    auto q = b.create<graph::BlockQuantizeOp>(loc, fp8Type, wide, scales, block);
    if (argumentBlock)
      copies.argumentCopiesEnd[argumentBlock] = q;
    return Quantized{q, scales};
  }

  /// The format operand `index` of FP8 GEMM `gemm` is quantized to. The
  /// hybrid format: the operand that carries a gradient in E5M2 (range),
  /// the other in the GEMM's type (precision).
  Type operandFormat(Operation *gemm, unsigned index) const {
    if (options.hybrid && isGradOperand(gemm, index))
      return Float8E5M2Type::get(gemm->getContext());
    return fp8GemmFormat(gemm);
  }

  /// The GEMM and operand a copy of `source` in `format` names its scaling
  /// site after: of the FP8 GEMMs that read `source` in `format` (directly
  /// or through the widenings and transposes quantizedSource looks past),
  /// the first in the block (a training step's forward GEMM: "fc2.weight"),
  /// whatever order the rewrites run in.
  std::pair<Operation *, unsigned> namingUse(Value source, Type format, Operation *user,
                                             unsigned index) const {
    std::pair<Operation *, unsigned> best{user, index};
    SmallVector<Value> reads{source};
    while (!reads.empty()) {
      Value read = reads.pop_back_val();
      for (OpOperand &use : read.getUses()) {
        Operation *reader = use.getOwner();
        if (isa<graph::CastOp, graph::TransposeOp>(reader)) {
          if (quantizedSource(reader->getResult(0)).value == source)
            reads.push_back(reader->getResult(0));
          continue;
        }
        unsigned i = use.getOperandNumber();
        if (i <= 1 && fp8GemmFormat(reader) && operandFormat(reader, i) == format &&
            reader->getBlock() == best.first->getBlock() && reader->isBeforeInBlock(best.first))
          best = {reader, i};
      }
    }
    return best;
  }

  /// Quantizes operand `v` of `user`: constants now, activations with a
  /// calibrated static scale or, failing that, current scaling (mp.amax,
  /// mp.fp8_scale) at run time. A value already quantized in `format` for
  /// another GEMM is read from that copy (transposed where `v` is the
  /// transpose of what was quantized).
  Quantized quantize(PatternRewriter &b, Operation *user, unsigned index, Value v,
                     Type format) const {
    if (auto constant = v.getDefiningOp<graph::ConstantOp>())
      if (std::optional<Quantized> q = quantizeConstant(b, constant, format, options.margin))
        return *q;
    auto [source, transposed] = quantizedSource(v);
    // A calibrated value is quantized before its reshapes (a static scale:
    // no scaling site to name).
    SmallVector<graph::ReshapeOp> reshapes;
    if (!transposed && options.scaling != Fp8Scaling::Current)
      source = pastCalibratedReshapes(source, reshapes);
    Quantized copy;
    if (auto it = copies.bySource.find({source, format}); it != copies.bySource.end()) {
      copy = it->second;
    } else {
      copy = quantizeSource(b, user, index, source, format);
      copies.bySource[{source, format}] = copy;
    }
    graph::GraphBuilder g(b, user->getLoc());
    for (graph::ReshapeOp reshape : llvm::reverse(reshapes))
      copy.value = g.reshape(copy.value, shapeOf(reshape.getResult()));
    if (!transposed)
      return copy;
    return Quantized{g.transpose(copy.value, {1, 0}), copy.scale};
  }

  /// Sets `b` to insert a copy of `source` right after its definition: for a
  /// block argument, after the copies of arguments made before, so that
  /// they keep the order they were made in. Returns the argument's block
  /// (null for an op result); the caller records its copy's last op there.
  Block *insertAfterSource(OpBuilder &b, Value source) const {
    auto argument = dyn_cast<BlockArgument>(source);
    Block *argumentBlock = argument ? argument.getOwner() : nullptr;
    if (Operation *end = copies.argumentCopiesEnd.lookup(argumentBlock); argumentBlock && end)
      b.setInsertionPointAfter(end);
    else
      b.setInsertionPointAfterValue(source);
    return argumentBlock;
  }

  /// The one FP8 copy of `source` in `format`, made right after `source` is
  /// defined so that every GEMM reading it, before or after `user` in the
  /// block, sees it.
  Quantized quantizeSource(PatternRewriter &b, Operation *user, unsigned index, Value source,
                           Type format) const {
    OpBuilder::InsertionGuard guard(b);
    Block *argumentBlock = insertAfterSource(b, source);
    Location loc = user->getLoc();
    auto fp8Type = cast<RankedTensorType>(source.getType()).clone(format);
    FloatAttr calibrated = calibratedAmax(source);
    Value scale;
    if (calibrated && options.scaling != Fp8Scaling::Current) {
      scale = scalarConstant(b, loc,
                             scaleFor(calibrated.getValueAsDouble(), format, options.margin));
    } else {
      auto scalar = RankedTensorType::get({}, b.getF32Type());
      Value amax = b.create<graph::AmaxOp>(loc, scalar, source);
      auto scaleOp = b.create<graph::Fp8ScaleOp>(loc, scalar, amax, TypeAttr::get(format),
                                                 b.getI64IntegerAttr(options.margin));
      scale = scaleOp;
      auto [namer, namerIndex] = namingUse(source, format, user, index);
      sites.push_back({scaleOp, siteName(namer, namerIndex)});
    }
    auto q = b.create<graph::QuantizeOp>(loc, fp8Type, source, scale);
    if (argumentBlock)
      copies.argumentCopiesEnd[argumentBlock] = q;
    return Quantized{q, scale};
  }

  /// mp.scaled_linear for an mp.linear, mp.scaled_matmul for an mp.matmul.
  /// A 2-D `b` is given to the GEMM transposed, [n, k] (transpose_weight),
  /// whatever its layout in the model: cuBLASLt runs FP8 GEMMs on
  /// sm_89/sm_90 only in the TN layout, which is exactly a row-major GEMM
  /// against an [n, k] operand. A weight quantized at compile time is
  /// stored so; any other `b` (a weight that is training state, an
  /// activation in a gradient GEMM) gets an mp.transpose of its FP8 value
  /// (one byte per element: Transformer Engine's transposed FP8 copy). An
  /// mp.matmul of an input of rank 2 or more by a 2-D `b` is an mp.linear
  /// without bias, so it becomes mp.scaled_linear too. The values and the
  /// sums are the same. A batched `b` (rank 3 or more) stays mp.scaled_matmul.
  static Operation *createScaledGemm(PatternRewriter &b, Operation *op, const Quantized &qa,
                                     Quantized qb) {
    Type resultType = op->getResult(0).getType();
    // `b` as [n, k]: the transposed constant, or a transpose of the value.
    auto transposedB = [&]() -> Value {
      if (std::optional<Value> t = transposedConstant(b, qb.value))
        return *t;
      auto type = cast<RankedTensorType>(qb.value.getType());
      if (type.getRank() != 2)
        return Value();
      // The copy of x read as x^T (a gradient rule's x^T, e.g. dX = dY W^T)
      // transposed back is the copy itself: no transpose at all.
      if (auto t = qb.value.getDefiningOp<graph::TransposeOp>();
          t && llvm::equal(t.getPerm(), ArrayRef<int64_t>{1, 0})) {
        Value direct = t.getInput();
        // The transpose was made for this GEMM alone.
        if (t->use_empty())
          b.eraseOp(t);
        return direct;
      }
      graph::GraphBuilder g(b, op->getLoc());
      return g.transpose(qb.value, {1, 0});
    };
    if (auto linear = dyn_cast<graph::LinearOp>(op)) {
      bool transposed = linear.getTransposeWeight();
      if (!transposed)
        if (Value t = transposedB()) {
          qb.value = t;
          transposed = true;
        }
      return b.create<graph::ScaledLinearOp>(op->getLoc(), resultType, qa.value, qb.value, qa.scale,
                                             qb.scale, linear.getBias(), transposed,
                                             linear.getAccTypeAttr(), nullptr, nullptr);
    }
    auto matmul = cast<graph::MatmulOp>(op);
    if (cast<RankedTensorType>(qa.value.getType()).getRank() >= 2)
      if (Value t = transposedB())
        return b.create<graph::ScaledLinearOp>(op->getLoc(), resultType, qa.value, t, qa.scale,
                                               qb.scale, Value(), /*transpose_weight=*/true,
                                               matmul.getAccTypeAttr(), nullptr, nullptr);
    return b.create<graph::ScaledMatmulOp>(op->getLoc(), resultType, qa.value, qb.value,
                                           qa.scale, qb.scale, matmul.getAccTypeAttr());
  }

  /// The transpose of `v` as a new constant, when `v` is a 2-D dense
  /// constant (a weight quantized at compile time); the old one is erased
  /// once unused.
  static std::optional<Value> transposedConstant(PatternRewriter &b, Value v) {
    auto constant = v.getDefiningOp<graph::ConstantOp>();
    auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
    auto type = cast<RankedTensorType>(v.getType());
    if (!dense || type.getRank() != 2)
      return std::nullopt;
    const int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
    std::vector<float> values = graph::readFloatConstant(dense), out(values.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        out[c * rows + r] = values[r * cols + c];
    auto transposedType = RankedTensorType::get({cols, rows}, type.getElementType());
    Value t = b.create<graph::ConstantOp>(constant.getLoc(),
                                          graph::storeFloatConstant(transposedType, out));
    if (constant->use_empty())
      b.eraseOp(constant);
    return t;
  }

  ScalingOptions options;
  std::vector<ScaleSite> &sites;
  QuantizedCopies &copies;
};

/// Turns the current scaling of `site` into delayed scaling: the scale is
/// read from state `fp8.SITE.scale`, and the run's amax updates the state
/// `fp8.SITE.amax_history` and, from it, the next scale
/// (InsertScalingPass's description). Appends the two states to `func`.
void makeDelayed(func::FuncOp func, const ScaleSite &site, int64_t length, bool mostRecent,
                 int64_t margin) {
  graph::Fp8ScaleOp current = site.scale;
  MLIRContext *ctx = func.getContext();
  OpBuilder b(current);
  Location loc = current.getLoc();
  graph::GraphBuilder gb(b, loc);
  Type f32 = b.getF32Type();
  auto scalar = RankedTensorType::get({}, f32);
  auto historyType = RankedTensorType::get({length}, f32);
  std::string historyName = "fp8." + site.name + ".amax_history",
              scaleName = "fp8." + site.name + ".scale";
  auto stateAttrs = [&](const std::string &name, Attribute init) {
    return b.getDictionaryAttr({
        b.getNamedAttr(GraphDialect::kNameAttr, b.getStringAttr(name)),
        b.getNamedAttr(GraphDialect::kStateAttr, b.getStringAttr(name)),
        b.getNamedAttr(GraphDialect::kStateInitAttr, init),
    });
  };
  unsigned args = func.getNumArguments();
  (void)func.insertArgument(args, historyType,
                            stateAttrs(historyName, DenseElementsAttr::get(historyType, 0.0f)),
                            loc);
  (void)func.insertArgument(args + 1, scalar,
                            stateAttrs(scaleName, DenseElementsAttr::get(scalar, 1.0f)), loc);
  Value history = func.getArgument(args), scale = func.getArgument(args + 1);

  // This run quantizes with the scale the previous runs left.
  Value amax = current.getAmax();
  current.getScale().replaceAllUsesWith(scale);
  b.setInsertionPointAfter(current);
  Value pushed = gb.reshape(amax, {1});
  if (length > 1)
    pushed = b.create<graph::ConcatOp>(loc, historyType,
                                       ValueRange{pushed, gb.sliceFront(history, {length - 1})},
                                       0);
  Value from = mostRecent ? amax
                          : b.create<graph::ReduceMaxOp>(loc, scalar, pushed,
                                                         ArrayRef<int64_t>{0}, false, TypeAttr())
                                .getResult();
  Value candidate = b.create<graph::Fp8ScaleOp>(loc, scalar, from, current.getFormatAttr(),
                                                b.getI64IntegerAttr(margin));
  // Transformer Engine keeps the old scale for an amax of 0 or inf/NaN.
  auto boolType = RankedTensorType::get({}, b.getI1Type());
  Value finite = b.create<graph::NotOp>(
      loc, boolType,
      b.create<graph::OrOp>(loc, boolType, b.create<graph::IsNaNOp>(loc, boolType, from),
                            b.create<graph::IsInfOp>(loc, boolType, from, true, true)));
  Value positive = gb.compare<graph::GreaterOp>(from, gb.splat(0.0, f32));
  Value usable = b.create<graph::AndOp>(loc, boolType, finite, positive);
  Value next = gb.where(usable, candidate, scale);
  current.erase();

  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  unsigned results = func.getNumResults();
  auto update = [&](const std::string &name) {
    return b.getDictionaryAttr(
        b.getNamedAttr(GraphDialect::kStateUpdateAttr, b.getStringAttr(name)));
  };
  (void)func.insertResult(results, historyType, update(historyName));
  (void)func.insertResult(results + 1, scalar, update(scaleName));
  ret->insertOperands(ret->getNumOperands(), ValueRange{pushed, next});
  (void)ctx;
}

//===----------------------------------------------------------------------===//
// --mp-insert-scaling
//===----------------------------------------------------------------------===//

struct InsertScalingPass : public impl::InsertScalingPassBase<InsertScalingPass> {
  using InsertScalingPassBase::InsertScalingPassBase;

  /// 1. Check the numbers (the enums are checked when parsed), and under scaling=static that every FP8 GEMM
  ///    operand has a compile-time scale (the error names the GEMM).
  /// 2. Apply ScaleFp8Gemm greedily to the FP8 GEMMs, and to them only:
  ///    the driver would fold any other op it visits (a cast of a weight),
  ///    which is --mp-fold-casts' job.
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (amaxHistory < 1) {
      func.emitError() << "amax-history must be at least 1, got " << amaxHistory;
      return signalPassFailure();
    }
    if (margin < 0) {
      func.emitError() << "margin must be non-negative, got " << margin;
      return signalPassFailure();
    }
    SmallVector<Operation *> gemms;
    func.walk([&](Operation *op) {
      if (fp8GemmFormat(op))
        gemms.push_back(op);
    });
    for (Operation *op : gemms)
      if (needsMissingCalibration(op, scaling)) {
        op->emitError() << "scaling=static needs a calibrated amax for every FP8 GEMM input "
                           "(run with calibration inputs, or use scaling=current)";
        return signalPassFailure();
      }
    RewritePatternSet patterns(&getContext());
    std::vector<ScaleSite> sites;
    QuantizedCopies copies;
    patterns.add<ScaleFp8Gemm>(
        &getContext(),
        ScalingOptions{scaling == Fp8Scaling::Delayed ? Fp8Scaling::Current : Fp8Scaling(scaling),
                       margin, format == Fp8Format::Hybrid},
        sites, copies);
    GreedyRewriteConfig config;
    config.strictMode = GreedyRewriteStrictness::ExistingOps;
    bool allErased = false;
    if (failed(applyOpPatternsAndFold(gemms, std::move(patterns), config, nullptr,
                                      &allErased)) ||
        !allErased) {
      func.emitError() << "--mp-insert-scaling left an FP8 GEMM unscaled";
      return signalPassFailure();
    }
    if (scaling != Fp8Scaling::Delayed)
      return;
    // One state pair per site, named uniquely ("#2" for a second GEMM of
    // the same name).
    llvm::StringSet<> names;
    for (auto [i, arg] : llvm::enumerate(func.getArguments()))
      if (auto name = func.getArgAttrOfType<StringAttr>(i, GraphDialect::kStateAttr))
        names.insert(name.getValue());
    for (ScaleSite &site : sites) {
      std::string base = site.name;
      for (int n = 2; names.contains("fp8." + site.name + ".scale"); ++n)
        site.name = base + "#" + std::to_string(n);
      names.insert("fp8." + site.name + ".scale");
      makeDelayed(func, site, amaxHistory, amaxAlgo == AmaxAlgo::MostRecent, margin);
    }
  }
};

} // namespace
} // namespace mixprec::passes
