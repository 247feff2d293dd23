// RUN: not mixprec-translate --split-input-file --mpk-to-cuda %s 2>&1 | FileCheck %s

// An op the lowering should have turned into a step is named, with the fix,
// at that op.
// CHECK: error: loc("e"): op mp.exp "e" is no mpk step (run --mp-lower-to-kernels first)
func.func @unlowered(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = mp.exp %x : tensor<4xf32> loc("e")
  return %0 : tensor<4xf32>
}

// -----

// An element type CUDA kernels do not take: the kernel and input are named,
// at the kernel (line 7 of the split).
// CHECK: offset :7:8: error: kernel 'mp_d_k0_d': input 0 has no CUDA element type
func.func @d(%x: tensor<4xf64>) -> tensor<4xf32> {
  %0 = mpk.kernel(%x) {ops = ["d"], row_dims = 0 : i64, shape = array<i64: 4>} : (tensor<4xf64>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf64>):
    %1 = mpk.elementwise cast %a : (tensor<4xf64>) -> tensor<4xf32>
    mpk.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// An amax is known only after the kernel: reading it inside is refused, at
// the op that reads it (line 10 of the split).
// CHECK: offset :10:10: error: kernel 'mp_r_k0_r': an amax is read inside its own kernel (mpk.elementwise mul)
func.func @r(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = mpk.kernel(%x) {ops = ["r"], row_dims = 0 : i64, shape = array<i64: 4>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %1 = mpk.amax %a : tensor<4xf32> -> tensor<f32>
    %2 = mpk.elementwise mul %a, %1 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    mpk.yield %2 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
