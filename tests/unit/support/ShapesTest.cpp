// The shape functions of common/Shapes.h: the dialect's verifiers, the
// importer and the runtime's routine checks share them, so each rule is
// pinned here once, results and the wording of the rule a shape breaks.
#include "common/Shapes.h"

#include <gtest/gtest.h>

#include <array>
#include <limits>

using namespace mixprec::shapes;

namespace {

/// The shape of an ok result (fails the test with the error otherwise).
Shape ok(const ShapeOrError &r) {
  EXPECT_TRUE(r.ok()) << r.error;
  return r.shape;
}

/// The error of a failed result (fails the test when it succeeded).
std::string error(const ShapeOrError &r) {
  EXPECT_FALSE(r.ok()) << "got " << formatShape(r.shape);
  return r.error;
}

TEST(Shapes, DimsViewsAnyContiguousContainer) {
  std::vector<int64_t> v = {2, 3, 4};
  std::array<int64_t, 2> a = {5, 6};
  const int64_t raw[] = {7};
  EXPECT_EQ(formatShape(v), "[2, 3, 4]");
  EXPECT_EQ(formatShape(a), "[5, 6]");
  EXPECT_EQ(formatShape(Dims(raw, 1)), "[7]");
  EXPECT_EQ(formatShape({}), "[]");
  EXPECT_EQ(Dims(v).dropFront(1).vec(), (Shape{3, 4}));
  EXPECT_EQ(Dims(v).dropBack(2).vec(), (Shape{2}));
  EXPECT_EQ(Dims(v).back(), 4);
}

TEST(Shapes, NumElementsFlagsOverflowAndNegativeDims) {
  EXPECT_EQ(numElements({}), 1);
  EXPECT_EQ(numElements({2, 0, 5}), 0);
  EXPECT_EQ(numElements({1 << 20, 1 << 20}), int64_t(1) << 40);
  EXPECT_EQ(numElements({int64_t(1) << 32, int64_t(1) << 32}), -1);
  EXPECT_EQ(numElements({3, -1}), -1);
}

TEST(Shapes, BroadcastFollowsNumpy) {
  EXPECT_EQ(ok(broadcastShapes({2, 3, 4}, {4})), (Shape{2, 3, 4}));
  EXPECT_EQ(ok(broadcastShapes({}, {5, 1})), (Shape{5, 1}));
  EXPECT_EQ(ok(broadcastShapes({5, 1}, {1, 6})), (Shape{5, 6}));
  EXPECT_EQ(ok(broadcastShapes({2, 1, 4}, {3, 1})), (Shape{2, 3, 4}));
  EXPECT_EQ(ok(broadcastShapes({0, 1}, {1, 3})), (Shape{0, 3}));
  EXPECT_EQ(ok(broadcastShapes({1}, {0})), (Shape{0}));
  EXPECT_EQ(error(broadcastShapes({2, 3}, {3, 2})), "shapes [2, 3] and [3, 2] do not broadcast");
  error(broadcastShapes({4}, {2, 3}));
  error(broadcastShapes({0}, {2}));
}

TEST(Shapes, MatmulPromotesVectorsAndBroadcastsBatches) {
  EXPECT_EQ(ok(matmulShape({2, 3}, {3, 4})), (Shape{2, 4}));
  EXPECT_EQ(ok(matmulShape({3}, {3, 4})), (Shape{4}));
  EXPECT_EQ(ok(matmulShape({2, 3}, {3})), (Shape{2}));
  EXPECT_EQ(ok(matmulShape({3}, {3})), (Shape{}));
  EXPECT_EQ(ok(matmulShape({5, 1, 2, 3}, {7, 3, 4})), (Shape{5, 7, 2, 4}));
  EXPECT_EQ(error(matmulShape({2, 3}, {4, 5})), "contracting dimensions differ: [2, 3] x [4, 5]");
  EXPECT_EQ(error(matmulShape({2, 2, 3}, {3, 3, 4})),
            "batch dimensions: shapes [2] and [3] do not broadcast");
  EXPECT_EQ(error(matmulShape({}, {3})), "matmul operands must have rank >= 1");
}

TEST(Shapes, LinearTakesEitherWeightLayout) {
  EXPECT_EQ(ok(linearShape({8, 16, 32}, {32, 64}, false)), (Shape{8, 16, 64}));
  EXPECT_EQ(ok(linearShape({8, 32}, {64, 32}, true)), (Shape{8, 64}));
  EXPECT_EQ(error(linearShape({8, 32}, {32, 64}, true)),
            "input features 32 do not match weight [32, 64] (transposed)");
  EXPECT_EQ(error(linearShape({8, 32}, {32}, false)), "weight must have rank 2, got [32]");
}

TEST(Shapes, WindowSizes) {
  EXPECT_EQ(pooledSize(224, 7, 2, 3, 3, 1, false), 112);
  EXPECT_EQ(pooledSize(6, 3, 2, 0, 0, 1, true), 3);
  EXPECT_EQ(pooledSize(4, 2, 2, 1, 0, 1, true), 3);
  EXPECT_EQ(pooledSize(7, 3, 1, 0, 0, 2, false), 3);
  EXPECT_EQ(pooledSize(2, 5, 1, 0, 0, 1, false), 0);
  // PyTorch's ConvTranspose2d(k=3, s=2, p=1, output_padding=1) doubles 4.
  EXPECT_EQ(transposedSize(4, 3, 2, 1, 1, 1, 1), 8);
  EXPECT_EQ(transposedSize(5, 4, 1, 0, 0, 2, 0), 11);
}

TEST(Shapes, ConvolutionsAndPooling) {
  EXPECT_EQ(ok(conv2dShape({1, 3, 224, 224}, {64, 3, 7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1)),
            (Shape{1, 64, 112, 112}));
  EXPECT_EQ(ok(convShape({2, 8, 10}, {4, 2, 3}, {1}, {1, 1}, {1}, 4)), (Shape{2, 4, 10}));
  EXPECT_EQ(error(convShape({2, 8, 10}, {4, 3, 3}, {1}, {1, 1}, {1}, 4)),
            "weight [4, 3, 3] expects 12 input channels, got 8");
  EXPECT_EQ(error(conv2dShape({1, 3, 2, 2}, {4, 3, 3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1)),
            "kernel [3, 3] does not fit the padded input [1, 3, 2, 2]");
  EXPECT_EQ(error(convShape({1, 3, 8}, {4, 3, 3}, {0}, {0, 0}, {1}, 1)),
            "strides must be positive, got [0]");
  EXPECT_EQ(
      ok(convTransposeShape({1, 8, 4, 4}, {8, 2, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 2)),
      (Shape{1, 4, 8, 8}));
  EXPECT_EQ(error(convTransposeShape({1, 8, 4}, {8, 2, 3}, {2}, {0, 0}, {1}, {2}, 1)),
            "output_padding [2] must be non-negative and below the stride or the "
            "dilation");
  EXPECT_EQ(ok(poolShape({1, 4, 7, 7, 7}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1, 1, 1, 1}, {}, true)),
            (Shape{1, 4, 4, 4, 4}));
  EXPECT_EQ(ok(pool2dShape({1, 8, 6, 6}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {}, false)),
            (Shape{1, 8, 2, 2}));
  EXPECT_EQ(error(poolShape({1, 4, 8}, {2}, {1}, {2, 0}, {}, false)),
            "pads [2, 0] must be smaller than kernel_shape [2]");
  EXPECT_EQ(error(poolShape({1, 4}, {2}, {1}, {0, 0}, {}, false)),
            "input must be [N, C, spatial...] with 1 to 3 spatial dims, got [1, 4]");
}

TEST(Shapes, ReductionsAndAxisOps) {
  EXPECT_EQ(ok(reduceShape({2, 3, 4}, {1}, true)), (Shape{2, 1, 4}));
  EXPECT_EQ(ok(reduceShape({2, 3, 4}, {0, 2}, false)), (Shape{3}));
  EXPECT_EQ(ok(reduceShape({2, 3, 4}, {0, 1, 2}, false)), (Shape{}));
  EXPECT_EQ(error(reduceShape({2, 3}, {}, false)), "axes must not be empty");
  EXPECT_EQ(error(reduceShape({2, 3}, {1, 0}, false)),
            "axes must be strictly increasing, got [1, 0]");
  EXPECT_EQ(error(reduceShape({2, 3}, {2}, false)), "axis 2 is out of range for rank 2");
  EXPECT_EQ(ok(argReduceShape({2, 3}, 1, false)), (Shape{2}));
  EXPECT_EQ(error(argReduceShape({2, 0}, 1, true)), "axis 1 of [2, 0] is empty");
  EXPECT_EQ(ok(topKShape({2, 5}, 1, 3)), (Shape{2, 3}));
  EXPECT_EQ(error(topKShape({2, 5}, 1, 6)), "k 6 is out of range [0, 5] for axis 1");
  EXPECT_EQ(ok(axisPreservingShape({4, 2}, 0)), (Shape{4, 2}));
  EXPECT_EQ(error(axisPreservingShape({4, 2}, 2)), "axis 2 is out of range for rank 2");
}

TEST(Shapes, DataMovement) {
  EXPECT_EQ(ok(transposeShape({2, 3, 4}, {2, 0, 1})), (Shape{4, 2, 3}));
  EXPECT_EQ(error(transposeShape({2, 3}, {1, 1})), "perm [1, 1] is not a permutation");
  EXPECT_EQ(error(transposeShape({2, 3}, {0})), "perm has 1 entries for rank 2");
  const Shape a = {2, 3}, b = {2, 5};
  EXPECT_EQ(ok(concatShape({a, b}, 1)), (Shape{2, 8}));
  EXPECT_EQ(error(concatShape({a, b}, 0)), "input #1 [2, 5] does not match [2, 3] off axis 0");
  EXPECT_EQ(error(concatShape({}, 0)), "needs at least one input");
  EXPECT_EQ(ok(gatherShape({5, 6, 7}, {2, 3}, 1)), (Shape{5, 2, 3, 7}));
  EXPECT_EQ(error(gatherShape({5}, {2}, 1)), "axis 1 is out of range for rank 1");
  EXPECT_EQ(ok(gatherElementsShape({4, 8}, {9, 2}, 0)), (Shape{9, 2}));
  EXPECT_EQ(error(gatherElementsShape({4, 8}, {9, 9}, 0)),
            "indices [9, 9] exceed data [4, 8] in dim 1");
  EXPECT_EQ(ok(gatherNdShape({2, 3, 4}, {5, 2}, 0)), (Shape{5, 4}));
  EXPECT_EQ(ok(gatherNdShape({2, 3, 4}, {2, 1}, 1)), (Shape{2, 4}));
  EXPECT_EQ(error(gatherNdShape({2, 5}, {2, 2}, 2)),
            "batch_dims 2 must be in [0, min(data rank, indices rank))");
  EXPECT_EQ(error(gatherNdShape({3, 4}, {2, 3}, 0)),
            "the last dim of indices [2, 3] must be in [1, 2]");
}

TEST(Shapes, SliceBoundsInWideArithmetic) {
  EXPECT_EQ(checkSliceBounds({8, 8}, {0, 1}, {1, 2}, {8, 4}), "");
  EXPECT_EQ(checkSliceBounds({8}, {7}, {-1}, {8}), "");
  EXPECT_EQ(checkSliceBounds({8, 8}, {0, 0}, {1, 4}, {8, 3}),
            "dimension 1 reads indices 0 to 8 outside [0, 8)");
  EXPECT_EQ(checkSliceBounds({8}, {0}, {0}, {1}), "step of dimension 0 is zero");
  EXPECT_EQ(checkSliceBounds({8}, {0}, {1}, {0}), "");
  // (count - 1) * step overflows int64: the check must still refuse it.
  const int64_t big = int64_t(1) << 40;
  EXPECT_NE(checkSliceBounds({big}, {0}, {big}, {int64_t(1) << 30}), "");
  EXPECT_EQ(checkSliceBounds({8}, {0}, {1}, {}),
            "starts and steps need one value per dimension (1)");
}

} // namespace
