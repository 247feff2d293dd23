//===- TestModules.cpp - the modules the runtime tests share --------------===//
#include "tests/unit/runtime/TestModules.h"

#include "common/numerics/Rounding.h"

namespace mixprec::testing {

std::vector<float> seededFloats(size_t count, uint64_t seed, float lo, float hi) {
  std::vector<float> values(count);
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  for (float &v : values) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    v = lo + (hi - lo) * static_cast<float>((state >> 40) * (1.0 / 16777216.0));
  }
  return values;
}

MlpModel mlpModel() {
  MlpModel m;
  m.w1 = seededFloats(MlpModel::kIn * MlpModel::kHidden, 11, -0.4f, 0.4f);
  for (float &v : m.w1)
    v = numerics::roundTo(numerics::Format::BF16, v);
  m.b1 = seededFloats(MlpModel::kHidden, 12, -0.1f, 0.1f);
  m.w2 = seededFloats(MlpModel::kOut * MlpModel::kHidden, 13, -0.5f, 0.5f);
  m.b2 = seededFloats(MlpModel::kOut, 14, -0.2f, 0.2f);
  return m;
}

ModuleBuilder mlpBuilder(bool externalWeights) {
  using MM = MlpModel;
  const MlpModel model = mlpModel();
  ModuleBuilder b;
  const int x = b.input("x", fb::DType::F32, {MM::kBatch, MM::kIn});
  const int xs = b.activation("x_scaled", fb::DType::BF16, {MM::kBatch, MM::kIn});
  const int w1 = b.constantFloats("w1", fb::DType::BF16, {MM::kIn, MM::kHidden}, model.w1,
                                  externalWeights);
  const int b1 = b.constantFloats("b1", fb::DType::F32, {MM::kHidden}, model.b1);
  const int h = b.activation("hidden", fb::DType::BF16, {MM::kBatch, MM::kHidden});
  const int w2 = b.constantFloats("w2", fb::DType::F32, {MM::kOut, MM::kHidden}, model.w2,
                                  externalWeights);
  const int b2 = b.constantFloats("b2", fb::DType::F32, {MM::kOut}, model.b2);
  const int logits = b.activation("logits", fb::DType::F32, {MM::kBatch, MM::kOut});
  const int probs = b.activation("probs", fb::DType::F32, {MM::kBatch, MM::kOut});
  const int rowMax = b.activation("row_max", fb::DType::F32, {MM::kBatch});

  // x_scaled = bf16(x * 0.5 + 0.25): the input cast fused with arithmetic.
  KernelSpec &scale = b.kernel("scale_in", {MM::kBatch, MM::kIn}, 0);
  {
    const Shape dense = denseStrides({MM::kBatch, MM::kIn});
    int v = scale.load(x, dense);
    v = scale.binary(fb::OpCode::Mul, v, scale.constant(0.5f));
    v = scale.binary(fb::OpCode::Add, v, scale.constant(0.25f));
    scale.store(xs, v, dense, fb::DType::BF16);
  }

  GemmSpec fc1;
  fc1.name = "fc1";
  fc1.a = xs;
  fc1.b = w1;
  fc1.bias = b1;
  fc1.out = h;
  fc1.m = MM::kBatch;
  fc1.n = MM::kHidden;
  fc1.k = MM::kIn;
  fc1.epilogue = fb::Epilogue::BiasRelu;
  b.gemm(fc1);

  GemmSpec fc2;
  fc2.name = "fc2";
  fc2.a = h;
  fc2.b = w2;
  fc2.bias = b2;
  fc2.out = logits;
  fc2.m = MM::kBatch;
  fc2.n = MM::kOut;
  fc2.k = MM::kHidden;
  fc2.transB = true;
  fc2.epilogue = fb::Epilogue::Bias;
  b.gemm(fc2);

  // probs = exp(l - max) / sum(exp(l - max)) over each row; row_max stored
  // once per row (stride 0 along the row).
  KernelSpec &softmax = b.kernel("softmax", {MM::kBatch, MM::kOut}, 1);
  {
    const Shape dense = denseStrides({MM::kBatch, MM::kOut});
    int l = softmax.load(logits, dense);
    int mx = softmax.unary(fb::OpCode::RowMax, l);
    int e = softmax.unary(fb::OpCode::Exp, softmax.binary(fb::OpCode::Sub, l, mx));
    int sum = softmax.unary(fb::OpCode::RowSum, e);
    softmax.store(probs, softmax.binary(fb::OpCode::Div, e, sum), dense, fb::DType::F32);
    softmax.store(rowMax, mx, {1, 0}, fb::DType::F32);
  }

  for (int t : {probs, logits, h, xs, rowMax})
    b.output(t);
  return b;
}

ModuleBuilder convBuilder() {
  ModuleBuilder b;
  const int image = b.input("image", fb::DType::BF16, {2, 3, 8, 8});
  const int ids = b.input("ids", fb::DType::I64, {4});
  const int weight = b.constantFloats("conv_w", fb::DType::BF16, {4, 3, 3, 3},
                                      seededFloats(4 * 3 * 3 * 3, 21, -0.5f, 0.5f));
  const int bias = b.constantFloats("conv_b", fb::DType::F32, {4}, seededFloats(4, 22, -1, 1));
  const int conv = b.activation("conv", fb::DType::BF16, {2, 4, 8, 8});
  const int pooled = b.activation("features", fb::DType::BF16, {2, 4, 4, 4});
  const int nhwc = b.activation("nhwc", fb::DType::BF16, {2, 4, 4, 4});
  const int table = b.constantFloats("table", fb::DType::F32, {6, 5},
                                     seededFloats(30, 23, -2, 2));
  const int embedded = b.activation("embedded", fb::DType::F32, {4, 5});
  const int extra = b.constantFloats("extra", fb::DType::F32, {4, 3}, seededFloats(12, 24, 0, 1));
  const int joined = b.activation("joined", fb::DType::F32, {4, 8});
  const int sliced = b.activation("sliced", fb::DType::F32, {2, 3});
  const int colSum = b.activation("col_sum", fb::DType::F32, {8});
  const int lnBias = b.constantFloats("ln_b", fb::DType::F32, {8}, seededFloats(8, 25, -1, 1));
  const int normed = b.activation("normed", fb::DType::BF16, {4, 8});
  const int amax = b.activation("amax", fb::DType::F32, {});
  const int scale = b.activation("scale", fb::DType::F32, {});

  b.routine({"conv1", "conv2d", {image, weight, bias}, {conv},
            conv2dOptions({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)});
  b.routine({"pool1", "max_pool2d", {conv}, {pooled}, pool2dOptions({2, 2}, {2, 2}, {0, 0, 0, 0})});
  b.routine({"to_nhwc", "transpose", {pooled}, {nhwc}, transposeOptions({0, 2, 3, 1})});
  b.routine({"embed", "gather", {table, ids}, {embedded}, axisOptions(0)});
  b.routine({"join", "concat", {embedded, extra}, {joined}, axisOptions(-1)});
  b.routine({"pick", "slice", {joined}, {sliced}, sliceOptions({1, 0}, {2, 3})});
  b.routine({"colsum", "reduce_sum", {joined}, {colSum}, reduceOptions({0}, false)});
  b.routine({"ln", "layer_norm", {joined, -1, lnBias}, {normed}, normOptions(1, 1e-5f)});
  // amax over the conv output, then its FP8 scale.
  KernelSpec &k = b.kernel("amax", {2, 4, 8, 8}, 0);
  k.store(amax, k.unary(fb::OpCode::Amax, k.load(conv, denseStrides({2, 4, 8, 8}))),
          {0, 0, 0, 0}, fb::DType::F32);
  b.routine({"scale", "fp8_scale", {amax}, {scale}, fp8ScaleOptions(0, fb::DType::F8E4M3FN)});

  for (int t : {pooled, nhwc, embedded, joined, sliced, colSum, normed, scale})
    b.output(t);
  return b;
}

} // namespace mixprec::testing
