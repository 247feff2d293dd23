// RUN: mixprec-opt --mp-fuse-attention --split-input-file %s | FileCheck %s

// torch.onnx's SDPA decomposition (dynamo and legacy): q and k^T each
// scaled by sqrt(scale), the mask's bias added, softmax, the IsNaN guard,
// then P.V. One mp.attention with the product of the scales; the guard is
// mp.attention's convention (a row with every key masked gives 0).
// CHECK-LABEL: func.func @sdpa
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8x16xf32>, %[[K:.*]]: tensor<2x4x8x16xf32>, %[[V:.*]]: tensor<2x4x8x16xf32>, %[[B:.*]]: tensor<2x1x1x8xf32>)
// CHECK: %[[O:.*]], %{{.*}} = mp.attention %[[Q]], %[[K]], %[[V]], %[[B]] {scale = 2.500000e-01 : f64}
// CHECK: return %[[O]]
func.func @sdpa(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>,
                %bias: tensor<2x1x1x8xf32>) -> tensor<2x4x8x16xf32> {
  %c = mp.constant dense<0.5> : tensor<f32>
  %zero = mp.constant dense<0.0> : tensor<f32>
  %qs = mp.mul %q, %c : tensor<2x4x8x16xf32>, tensor<f32> -> tensor<2x4x8x16xf32>
  %kt = mp.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<2x4x8x16xf32> -> tensor<2x4x16x8xf32>
  %ks = mp.mul %kt, %c : tensor<2x4x16x8xf32>, tensor<f32> -> tensor<2x4x16x8xf32>
  %s = mp.matmul %qs, %ks : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %sb = mp.add %s, %bias : tensor<2x4x8x8xf32>, tensor<2x1x1x8xf32> -> tensor<2x4x8x8xf32>
  %p = mp.softmax %sb {axis = 3 : i64} : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %nan = mp.is_nan %p : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xi1>
  %pg = mp.where %nan, %zero, %p : (tensor<2x4x8x8xi1>, tensor<f32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %o = mp.matmul %pg, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// The eager GPT form: K^T from a [B, S, H, D] transpose (composed into one
// transpose of K), the scores divided by sqrt(d), a constant causal Where
// with a finite fill: causal = true, no bias.
// CHECK-LABEL: func.func @eager_causal
// CHECK: %[[KH:.*]] = mp.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x6x2x4xf32> -> tensor<1x2x6x4xf32>
// CHECK-NEXT: %[[O:.*]], %{{.*}} = mp.attention %arg0, %[[KH]], %arg2 {causal = true, scale = 5.000000e-01 : f64}
// CHECK-NOT: mp.softmax
func.func @eager_causal(%q: tensor<1x2x6x4xf32>, %kbshd: tensor<1x6x2x4xf32>,
                        %v: tensor<1x2x6x4xf32>) -> tensor<1x2x6x4xf32> {
  %mask = mp.constant dense<[[true, false, false, false, false, false],
                             [true, true, false, false, false, false],
                             [true, true, true, false, false, false],
                             [true, true, true, true, false, false],
                             [true, true, true, true, true, false],
                             [true, true, true, true, true, true]]> : tensor<6x6xi1>
  %fill = mp.constant dense<-1.0e4> : tensor<f32>
  %two = mp.constant dense<2.0> : tensor<f32>
  %kt = mp.transpose %kbshd {perm = array<i64: 0, 2, 3, 1>} : tensor<1x6x2x4xf32> -> tensor<1x2x4x6xf32>
  %s = mp.matmul %q, %kt : (tensor<1x2x6x4xf32>, tensor<1x2x4x6xf32>) -> tensor<1x2x6x6xf32>
  %sd = mp.div %s, %two : tensor<1x2x6x6xf32>, tensor<f32> -> tensor<1x2x6x6xf32>
  %sm = mp.where %mask, %sd, %fill : (tensor<6x6xi1>, tensor<1x2x6x6xf32>, tensor<f32>) -> tensor<1x2x6x6xf32>
  %p = mp.softmax %sm {axis = 3 : i64} : tensor<1x2x6x6xf32> -> tensor<1x2x6x6xf32>
  %o = mp.matmul %p, %v : (tensor<1x2x6x6xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x6x4xf32>
  return %o : tensor<1x2x6x4xf32>
}

// -----

// Not fused: the probabilities are read again (a training step's backward
// does so), a mask that is not causal with a finite fill (where replaces,
// an added bias would not), and a bias added after a scale (it would be
// scaled too).
// CHECK-LABEL: func.func @probs_read_twice
// CHECK-NOT: mp.attention
// CHECK: mp.softmax
func.func @probs_read_twice(%q: tensor<1x1x4x8xf32>, %kt: tensor<1x1x8x4xf32>,
                            %v: tensor<1x1x4x8xf32>) -> (tensor<1x1x4x8xf32>, tensor<1x1x4x4xf32>) {
  %s = mp.matmul %q, %kt : (tensor<1x1x4x8xf32>, tensor<1x1x8x4xf32>) -> tensor<1x1x4x4xf32>
  %p = mp.softmax %s {axis = 3 : i64} : tensor<1x1x4x4xf32> -> tensor<1x1x4x4xf32>
  %o = mp.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %o, %p : tensor<1x1x4x8xf32>, tensor<1x1x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @not_causal_mask
// CHECK-NOT: mp.attention
func.func @not_causal_mask(%q: tensor<1x1x2x8xf32>, %kt: tensor<1x1x8x2xf32>,
                           %v: tensor<1x1x2x8xf32>) -> tensor<1x1x2x8xf32> {
  %mask = mp.constant dense<[[true, true], [false, true]]> : tensor<2x2xi1>
  %fill = mp.constant dense<-1.0e9> : tensor<f32>
  %s = mp.matmul %q, %kt : (tensor<1x1x2x8xf32>, tensor<1x1x8x2xf32>) -> tensor<1x1x2x2xf32>
  %sm = mp.where %mask, %s, %fill : (tensor<2x2xi1>, tensor<1x1x2x2xf32>, tensor<f32>) -> tensor<1x1x2x2xf32>
  %p = mp.softmax %sm {axis = 3 : i64} : tensor<1x1x2x2xf32> -> tensor<1x1x2x2xf32>
  %o = mp.matmul %p, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x8xf32>) -> tensor<1x1x2x8xf32>
  return %o : tensor<1x1x2x8xf32>
}

// -----

// CHECK-LABEL: func.func @bias_then_scale
// CHECK-NOT: mp.attention
func.func @bias_then_scale(%q: tensor<1x1x2x8xf32>, %kt: tensor<1x1x8x2xf32>,
                           %v: tensor<1x1x2x8xf32>, %b: tensor<1x1x2x2xf32>) -> tensor<1x1x2x8xf32> {
  %c = mp.constant dense<0.5> : tensor<f32>
  %s = mp.matmul %q, %kt : (tensor<1x1x2x8xf32>, tensor<1x1x8x2xf32>) -> tensor<1x1x2x2xf32>
  %sb = mp.add %s, %b : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32> -> tensor<1x1x2x2xf32>
  %ss = mp.mul %sb, %c : tensor<1x1x2x2xf32>, tensor<f32> -> tensor<1x1x2x2xf32>
  %p = mp.softmax %ss {axis = 3 : i64} : tensor<1x1x2x2xf32> -> tensor<1x1x2x2xf32>
  %o = mp.matmul %p, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x8xf32>) -> tensor<1x1x2x8xf32>
  return %o : tensor<1x1x2x8xf32>
}

// -----

// T5: no scale, a relative position bias and then the mask's bias added in
// FP32: one bias, their sum (inner first), broadcast to the scores.
// CHECK-LABEL: func.func @two_biases
// CHECK: %[[SUM:.*]] = mp.add %arg3, %arg4 : tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32> -> tensor<1x2x4x4xf32>
// CHECK: mp.attention %arg0, %{{.*}}, %arg2, %[[SUM]] {scale = 1.000000e+00 : f64}
// CHECK-NOT: mp.softmax
func.func @two_biases(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>,
                      %pos: tensor<1x2x4x4xf32>, %mask: tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xf32> {
  %s = mp.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %sp = mp.add %s, %pos : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %sm = mp.add %sp, %mask : tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32> -> tensor<1x2x4x4xf32>
  %p = mp.softmax %sm {axis = 3 : i64} : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %o = mp.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}
