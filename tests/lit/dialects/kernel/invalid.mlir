// RUN: mixprec-opt --split-input-file --verify-diagnostics %s

// The body's arguments must be the kernel's inputs.
func.func @kernel$arg_mismatch(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{'mpk.kernel' op body arguments must match the inputs}}
  %y = mpk.kernel(%x) {shape = array<i64: 8, 64>, row_dims = 0 : i64, ops = ["r"]}
      : (tensor<8x64xf32>) -> tensor<8x64xf32> {
  ^bb0(%a: tensor<8x64xbf16>):
    %0 = mp.cast %a : tensor<8x64xbf16> -> tensor<8x64xf32>
    mpk.yield %0 : tensor<8x64xf32>
  }
  return %y : tensor<8x64xf32>
}

// -----

// What the body yields is what the kernel returns.
func.func @kernel$yield_mismatch(%x: tensor<8x64xf32>) -> tensor<8x64xbf16> {
  // expected-error @+1 {{'mpk.kernel' op yielded types must match the results}}
  %y = mpk.kernel(%x) {shape = array<i64: 8, 64>, row_dims = 0 : i64, ops = ["r"]}
      : (tensor<8x64xf32>) -> tensor<8x64xbf16> {
  ^bb0(%a: tensor<8x64xf32>):
    %0 = mp.relu %a : tensor<8x64xf32>
    mpk.yield %0 : tensor<8x64xf32>
  }
  return %y : tensor<8x64xbf16>
}

// -----

// A row cannot span more dims than the space has.
func.func @kernel$row_dims(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{'mpk.kernel' op row_dims 3 is out of range for a rank-2 iteration space}}
  %y = mpk.kernel(%x) {shape = array<i64: 8, 64>, row_dims = 3 : i64, ops = ["r"]}
      : (tensor<8x64xf32>) -> tensor<8x64xf32> {
  ^bb0(%a: tensor<8x64xf32>):
    %0 = mp.relu %a : tensor<8x64xf32>
    mpk.yield %0 : tensor<8x64xf32>
  }
  return %y : tensor<8x64xf32>
}

// -----

// FP8 operands need both scales.
func.func @gemm$one_scale(%x: tensor<8x64xf8E4M3FN>, %w: tensor<64x32xf8E4M3FN>, %s: tensor<f32>) -> tensor<8x32xbf16> {
  // expected-error @+1 {{'mpk.gemm' op FP8 scales come in pairs (a_scale and b_scale)}}
  %y = "mpk.gemm"(%x, %w, %s) {operandSegmentSizes = array<i32: 1, 1, 0, 1, 0>, trans_b = false, epilogue = "none", tf32 = false, ops = ["fc"]}
      : (tensor<8x64xf8E4M3FN>, tensor<64x32xf8E4M3FN>, tensor<f32>) -> tensor<8x32xbf16>
  return %y : tensor<8x32xbf16>
}

// -----

// Epilogues are the ones cuBLASLt runs.
func.func @gemm$epilogue(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'mpk.gemm' op epilogue must be none, relu or gelu, got 'swish'}}
  %y = mpk.gemm %x, %w {trans_b = false, epilogue = "swish", tf32 = false, ops = ["fc"]}
      : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// An alias is the same bytes: element type and count stay.
func.func @alias$count(%x: tensor<2x16xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'mpk.alias' op an alias keeps the element type and count}}
  %y = mpk.alias %x : tensor<2x16xf32> -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// This one is valid: an alias may change the rank.
func.func @alias$valid(%x: tensor<2x16xf32>) -> tensor<32xf32> {
  %y = mpk.alias %x : tensor<2x16xf32> -> tensor<32xf32>
  return %y : tensor<32xf32>
}
