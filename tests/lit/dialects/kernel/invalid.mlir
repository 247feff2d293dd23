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

// A kernel body is an expression program: a softmax is decomposed first.
func.func @kernel$softmax_in_body(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{'mpk.kernel' op body op 'mp.softmax' is no expression-program instruction (--mp-lower-to-kernels decomposes softmax, norms, reductions and silu)}}
  %y = mpk.kernel(%x) {shape = array<i64: 8, 64>, row_dims = 1 : i64, ops = ["sm"]}
      : (tensor<8x64xf32>) -> tensor<8x64xf32> {
  ^bb0(%a: tensor<8x64xf32>):
    %0 = mp.softmax %a {axis = 1 : i64} : tensor<8x64xf32> -> tensor<8x64xf32>
    mpk.yield %0 : tensor<8x64xf32>
  }
  return %y : tensor<8x64xf32>
}

// -----

// silu is two instructions (mp.silu counts as more than one as well).
func.func @kernel$silu_in_body(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{'mpk.kernel' op body op 'mp.silu' is no expression-program instruction}}
  %y = mpk.kernel(%x) {shape = array<i64: 8, 64>, row_dims = 0 : i64, ops = ["silu"]}
      : (tensor<8x64xf32>) -> tensor<8x64xf32> {
  ^bb0(%a: tensor<8x64xf32>):
    %0 = mp.silu %a : tensor<8x64xf32>
    mpk.yield %0 : tensor<8x64xf32>
  }
  return %y : tensor<8x64xf32>
}

// -----

// A stored row value drops only its size-1 row dims.
func.func @kernel$row_store_mismatch(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'mpk.kernel' op yielded types must match the results}}
  %y = mpk.kernel(%x) {shape = array<i64: 4, 8>, row_dims = 1 : i64, ops = ["sum"]}
      : (tensor<4x8xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %0 = mpk.row_reduce sum %a : tensor<4x8xf32> -> tensor<4x1xf32>
    mpk.yield %a : tensor<4x8xf32>
  }
  return %y : tensor<8xf32>
}

// -----

func.func @elementwise$arity(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %y = mpk.kernel(%x) {shape = array<i64: 8, 64>, row_dims = 0 : i64, ops = ["r"]}
      : (tensor<8x64xf32>) -> tensor<8x64xf32> {
  ^bb0(%a: tensor<8x64xf32>):
    // expected-error @+1 {{'mpk.elementwise' op 'sub' takes 2 operands, got 1}}
    %0 = mpk.elementwise sub %a : (tensor<8x64xf32>) -> tensor<8x64xf32>
    mpk.yield %0 : tensor<8x64xf32>
  }
  return %y : tensor<8x64xf32>
}

// -----

func.func @elementwise$silu(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %y = mpk.kernel(%x) {shape = array<i64: 8, 64>, row_dims = 0 : i64, ops = ["r"]}
      : (tensor<8x64xf32>) -> tensor<8x64xf32> {
  ^bb0(%a: tensor<8x64xf32>):
    // expected-error @+1 {{'mpk.elementwise' op 'silu' is more than one instruction}}
    %0 = mpk.elementwise silu %a : (tensor<8x64xf32>) -> tensor<8x64xf32>
    mpk.yield %0 : tensor<8x64xf32>
  }
  return %y : tensor<8x64xf32>
}

// -----

// The result is the operands' broadcast.
func.func @elementwise$shape(%x: tensor<8x64xf32>, %r: tensor<8x1xf32>) -> tensor<8x64xf32> {
  %y = mpk.kernel(%x, %r) {shape = array<i64: 8, 64>, row_dims = 0 : i64, ops = ["r"]}
      : (tensor<8x64xf32>, tensor<8x1xf32>) -> tensor<8x64xf32> {
  ^bb0(%a: tensor<8x64xf32>, %b: tensor<8x1xf32>):
    // expected-error @+1 {{'mpk.elementwise' op result shape [8, 1] must be the operands' broadcast [8, 64]}}
    %0 = mpk.elementwise mul %a, %b : (tensor<8x64xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
    mpk.yield %a : tensor<8x64xf32>
  }
  return %y : tensor<8x64xf32>
}

// -----

// Element-wise instructions run only inside kernels.
func.func @elementwise$outside(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{'mpk.elementwise' op expects parent op 'mpk.kernel'}}
  %0 = mpk.elementwise exp %x : (tensor<8x64xf32>) -> tensor<8x64xf32>
  return %0 : tensor<8x64xf32>
}

// -----

// A row reduction reads the whole iteration space.
func.func @row_reduce$input(%x: tensor<8x64xf32>, %v: tensor<64xf32>) -> tensor<8x64xf32> {
  %y = mpk.kernel(%x, %v) {shape = array<i64: 8, 64>, row_dims = 1 : i64, ops = ["r"]}
      : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32> {
  ^bb0(%a: tensor<8x64xf32>, %b: tensor<64xf32>):
    // expected-error @+1 {{'mpk.row_reduce' op input shape [64] must be the kernel's shape [8, 64]}}
    %0 = mpk.row_reduce sum %b : tensor<64xf32> -> tensor<1xf32>
    mpk.yield %a : tensor<8x64xf32>
  }
  return %y : tensor<8x64xf32>
}

// -----

// Its result keeps the row dims as 1.
func.func @row_reduce$result(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %y = mpk.kernel(%x) {shape = array<i64: 8, 64>, row_dims = 1 : i64, ops = ["r"]}
      : (tensor<8x64xf32>) -> tensor<8x64xf32> {
  ^bb0(%a: tensor<8x64xf32>):
    // expected-error @+1 {{'mpk.row_reduce' op result shape [8] must be the kernel's shape with its row dims 1, [8, 1]}}
    %0 = mpk.row_reduce max %a : tensor<8x64xf32> -> tensor<8xf32>
    mpk.yield %a : tensor<8x64xf32>
  }
  return %y : tensor<8x64xf32>
}

// -----

// An amax sees every point of the kernel.
func.func @amax$input(%x: tensor<8x64xf32>, %v: tensor<64xf32>) -> tensor<f32> {
  %y = mpk.kernel(%x, %v) {shape = array<i64: 8, 64>, row_dims = 0 : i64, ops = ["a"]}
      : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<f32> {
  ^bb0(%a: tensor<8x64xf32>, %b: tensor<64xf32>):
    // expected-error @+1 {{'mpk.amax' op input shape [64] must be the kernel's shape [8, 64]}}
    %0 = mpk.amax %b : tensor<64xf32> -> tensor<f32>
    mpk.yield %0 : tensor<f32>
  }
  return %y : tensor<f32>
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

// A routine takes the options of its own family.
func.func @call$options_kind(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'mpk.call' op routine 'concat' does not take options #mpk.transpose<perm = [1, 0]>}}
  %y = mpk.call concat(%x) #mpk.transpose<perm = [1, 0]> {ops = ["c"]} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// Max pooling counts no padding.
func.func @call$max_pool_count_include_pad(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error @+1 {{'mpk.call' op routine 'max_pool2d' does not take options #mpk.pool2d<kernel = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], ceil_mode = false, count_include_pad = true>}}
  %y = mpk.call max_pool2d(%x) #mpk.pool2d<kernel = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], ceil_mode = false, count_include_pad = true> {ops = ["p"]}
      : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return %y : tensor<1x1x2x2xf32>
}

// -----

// This one is valid: average pooling may count the padding.
func.func @call$avg_pool_count_include_pad(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %y = mpk.call avg_pool2d(%x) #mpk.pool2d<kernel = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], ceil_mode = false, count_include_pad = true> {ops = ["p"]}
      : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return %y : tensor<1x1x2x2xf32>
}

// -----

// Options are one of the routine families' attributes.
func.func @call$options_not_routine_options(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{Invalid attribute `options` in property conversion: 1 : i64}}
  %y = "mpk.call"(%x) <{op_type = #mpk<routine transpose>, options = 1 : i64, ops = ["t"]}> : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// Routines are the ones the runtime implements.
func.func @call$unknown_routine(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{unknown routine 'conv3d'}}
  %y = mpk.call conv3d(%x) #mpk.axis<axis = 0> {ops = ["c"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A 2-D window has two strides.
func.func @options$conv2d_strides(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x1x1xf32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+1 {{strides needs 2 entries, got 3}}
  %y = mpk.call conv2d(%x, %w) #mpk.conv2d<strides = [1, 1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], groups = 1, tf32 = false> {ops = ["c"]}
      : (tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x4x4xf32>
  return %y : tensor<1x1x4x4xf32>
}

// -----

// A convolution has at least one group.
func.func @options$conv2d_groups(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x1x1xf32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+1 {{groups must be at least 1, got 0}}
  %y = mpk.call conv2d(%x, %w) #mpk.conv2d<strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], groups = 0, tf32 = false> {ops = ["c"]}
      : (tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x4x4xf32>
  return %y : tensor<1x1x4x4xf32>
}

// -----

// Pads are top, left, bottom, right.
func.func @options$pool2d_pads(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error @+1 {{pads needs 4 entries, got 2}}
  %y = mpk.call max_pool2d(%x) #mpk.pool2d<kernel = [2, 2], strides = [2, 2], pads = [0, 0], dilations = [1, 1], ceil_mode = false, count_include_pad = false> {ops = ["p"]}
      : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return %y : tensor<1x1x2x2xf32>
}

// -----

// A slice has one step per start.
func.func @options$slice_counts(%x: tensor<4x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{steps needs 2 entries, got 1}}
  %y = mpk.call slice(%x) #mpk.slice<starts = [0, 0], steps = [2]> {ops = ["s"]} : (tensor<4x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// A step of 0 would read one element forever.
func.func @options$slice_step_zero(%x: tensor<4x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{steps must not be 0}}
  %y = mpk.call slice(%x) #mpk.slice<starts = [0, 0], steps = [2, 0]> {ops = ["s"]} : (tensor<4x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// FP8 scales are for the two FP8 formats.
func.func @options$fp8_scale_format(%a: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{format must be f8E4M3FN or f8E5M2, got 'bf16'}}
  %y = mpk.call fp8_scale(%a) #mpk.fp8_scale<margin = 0, format = bf16> {ops = ["s"]} : (tensor<f32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

// Flags are true or false.
func.func @options$bool_keyword(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{failed to parse Kernel_MatmulOptionsAttr parameter 'tf32' which is to be a `bool`}}
  %y = mpk.call matmul(%a, %b) #mpk.matmul<tf32 = 1> {ops = ["m"]} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// scatter_nd's reduction is one of the schema's five.
func.func @options$scatter_reduction(%a: tensor<4x8xf32>, %i: tensor<2x1xi64>, %u: tensor<2x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{scatter_nd reduction must be in [0, 4], got 5}}
  %y = mpk.call scatter_nd(%a, %i, %u) #mpk.scatter_nd<reduction = 5> {ops = ["s"]} : (tensor<4x8xf32>, tensor<2x1xi64>, tensor<2x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// The index routines take their own options.
func.func @options$topk_takes_topk(%a: tensor<4x8xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'mpk.call' op routine 'topk' does not take options #mpk.arg_reduce<axis = 1, keepdims = true, select_last_index = false>}}
  %y = mpk.call topk(%a) #mpk.arg_reduce<axis = 1, keepdims = true, select_last_index = false> {ops = ["t"]} : (tensor<4x8xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
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
