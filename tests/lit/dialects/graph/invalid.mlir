// RUN: mixprec-opt --split-input-file --verify-diagnostics %s

// One broken rule per chunk; the comment above each says which.

// mp.name must be a string.
func.func @attr$name_not_string(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mp.name' must be a string attribute}}
  %0 = mp.relu %x {mp.name = 3 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Unknown mp.* attributes are rejected rather than silently kept.
func.func @attr$unknown(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown mp dialect attribute 'mp.dtype'}}
  %0 = mp.relu %x {mp.dtype = "bf16"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// mp.precision is a float type.
func.func @attr$precision_not_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mp.precision' must be a float type attribute}}
  %0 = mp.relu %x {mp.precision = "bf16"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Calibration evidence is a float.
func.func @attr$calib_not_float(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mp.calib_amax' must be a float attribute}}
  %0 = mp.relu %x {mp.calib_amax = "big"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// mp.keep_io_types is a unit attribute.
// expected-error @+1 {{'mp.keep_io_types' must be a unit attribute}}
func.func @attr$keep_io_types(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mp.keep_io_types = 1 : i64} {
  return %x : tensor<4xf32>
}

// -----

// A cast keeps the shape.
func.func @cast$shape(%x: tensor<4xf32>) -> tensor<5xbf16> {
  // expected-error @+1 {{result shape [5] must equal the input shape [4]}}
  %0 = mp.cast %x : tensor<4xf32> -> tensor<5xbf16>
  return %0 : tensor<5xbf16>
}

// -----

// Storage dtypes exclude tf32 (a compute type only).
func.func @cast$tf32_storage(%x: tensor<4xf32>) -> tensor<4xtf32> {
  // expected-error @+1 {{result #0 must be ranked tensor of}}
  %0 = mp.cast %x : tensor<4xf32> -> tensor<4xtf32>
  return %0 : tensor<4xtf32>
}

// -----

// Matmul operands share an element type unless they form an FP8 pair.
func.func @matmul$mixed_types(%a: tensor<4x8xf16>, %b: tensor<8x4xbf16>) -> tensor<4x4xf32> {
  // expected-error @+1 {{operand element types must match (or be an FP8 pair), got 'f16' and 'bf16'}}
  %0 = mp.matmul %a, %b : (tensor<4x8xf16>, tensor<8x4xbf16>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// cuBLASLt has no E5M2 x E5M2 GEMM.
func.func @matmul$e5m2_pair(%a: tensor<4x8xf8E5M2>, %b: tensor<8x4xf8E5M2>) -> tensor<4x4xf32> {
  // expected-error @+1 {{FP8 operands cannot both be f8E5M2}}
  %0 = mp.matmul %a, %b : (tensor<4x8xf8E5M2>, tensor<8x4xf8E5M2>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Contracting dimensions must agree.
func.func @matmul$contracting(%a: tensor<4x8xf32>, %b: tensor<5x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{contracting dimensions differ: [4, 8] x [5, 3]}}
  %0 = mp.matmul %a, %b : (tensor<4x8xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Batch dimensions must broadcast.
func.func @matmul$batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x3xf32>) -> tensor<2x4x3xf32> {
  // expected-error @+1 {{batch dimensions: shapes [2] and [3] do not broadcast}}
  %0 = mp.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x3xf32>) -> tensor<2x4x3xf32>
  return %0 : tensor<2x4x3xf32>
}

// -----

// Scalars cannot be multiplied as matrices.
func.func @matmul$rank0(%a: tensor<f32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{matmul operands must have rank >= 1}}
  %0 = mp.matmul %a, %b : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// The result shape is the inferred one.
func.func @matmul$result_shape(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{result shape [4, 4] does not match the inferred shape [4, 3]}}
  %0 = mp.matmul %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Accumulators are f32 or f16.
func.func @matmul$acc_bf16(%a: tensor<4x8xbf16>, %b: tensor<8x3xbf16>) -> tensor<4x3xbf16> {
  // expected-error @+1 {{acc_type must be f32 or f16, got 'bf16'}}
  %0 = mp.matmul %a, %b {acc_type = bf16} : (tensor<4x8xbf16>, tensor<8x3xbf16>) -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}

// -----

// An f16 accumulator only for f16 operands.
func.func @matmul$acc_f16_bf16_operands(%a: tensor<4x8xbf16>, %b: tensor<8x3xbf16>) -> tensor<4x3xbf16> {
  // expected-error @+1 {{operand #0 must be f16 when acc_type = f16, got 'bf16'}}
  %0 = mp.matmul %a, %b {acc_type = f16} : (tensor<4x8xbf16>, tensor<8x3xbf16>) -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}

// -----

// Linear weights are matrices.
func.func @linear$weight_rank(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{weight must have rank 2, got [8]}}
  %0 = mp.linear %x, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// transpose_weight decides which weight dim is contracted.
func.func @linear$features(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{input features 8 do not match weight [8, 16] (transposed)}}
  %0 = mp.linear %x, %w {transpose_weight = true} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Bias must broadcast to the output without growing it.
func.func @linear$bias_shape(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{bias shape [8] must broadcast to the output shape [4, 16]}}
  %0 = mp.linear %x, %w, %b : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Bias has the output's element type.
func.func @linear$bias_type(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xf32>) -> tensor<4x16xbf16> {
  // expected-error @+1 {{bias element type must be 'bf16', got 'f32'}}
  %0 = mp.linear %x, %w, %b : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<16xf32>) -> tensor<4x16xbf16>
  return %0 : tensor<4x16xbf16>
}

// -----

// Convolution input is NCHW.
func.func @conv2d$input_rank(%x: tensor<3x16x16xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<2x8x14x14xf32> {
  // expected-error @+1 {{input must be NCHW (rank 4), got [3, 16, 16]}}
  %0 = mp.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<3x16x16xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x14x14xf32>
  return %0 : tensor<2x8x14x14xf32>
}

// -----

// Convolution weight is OIHW.
func.func @conv2d$weight_rank(%x: tensor<2x3x16x16xf32>, %w: tensor<8x3x3xf32>) -> tensor<2x8x14x14xf32> {
  // expected-error @+1 {{weight must be OIHW (rank 4), got [8, 3, 3]}}
  %0 = mp.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x16x16xf32>, tensor<8x3x3xf32>) -> tensor<2x8x14x14xf32>
  return %0 : tensor<2x8x14x14xf32>
}

// -----

// Two dilations.
func.func @conv2d$dilations(%x: tensor<2x3x16x16xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<2x8x14x14xf32> {
  // expected-error @+1 {{dilations must have 2 values}}
  %0 = mp.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1>} : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x14x14xf32>
  return %0 : tensor<2x8x14x14xf32>
}

// -----

// Two strides.
func.func @conv2d$strides_count(%x: tensor<2x3x16x16xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<2x8x14x14xf32> {
  // expected-error @+1 {{strides must have 2 values, got 3}}
  %0 = mp.conv2d %x, %w {strides = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x14x14xf32>
  return %0 : tensor<2x8x14x14xf32>
}

// -----

// Four pads.
func.func @conv2d$pads_count(%x: tensor<2x3x16x16xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<2x8x14x14xf32> {
  // expected-error @+1 {{pads must have 4 values [top, left, bottom, right], got 2}}
  %0 = mp.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x14x14xf32>
  return %0 : tensor<2x8x14x14xf32>
}

// -----

// Strides are positive.
func.func @conv2d$stride_zero(%x: tensor<2x3x16x16xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<2x8x14x14xf32> {
  // expected-error @+1 {{strides must be positive, got [0, 1]}}
  %0 = mp.conv2d %x, %w {strides = array<i64: 0, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x14x14xf32>
  return %0 : tensor<2x8x14x14xf32>
}

// -----

// Pads are non-negative.
func.func @conv2d$negative_pad(%x: tensor<2x3x16x16xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<2x8x14x14xf32> {
  // expected-error @+1 {{pads must be non-negative, got [0, -1, 0, 0]}}
  %0 = mp.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, -1, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x14x14xf32>
  return %0 : tensor<2x8x14x14xf32>
}

// -----

// Dilations are positive.
func.func @conv2d$dilation_zero(%x: tensor<2x3x16x16xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<2x8x14x14xf32> {
  // expected-error @+1 {{dilations must be positive, got [1, 0]}}
  %0 = mp.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 0>} : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x14x14xf32>
  return %0 : tensor<2x8x14x14xf32>
}

// -----

// Groups are positive.
func.func @conv2d$groups_zero(%x: tensor<2x3x16x16xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<2x8x14x14xf32> {
  // expected-error @+1 {{groups must be positive, got 0}}
  %0 = mp.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 0 : i64} : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x14x14xf32>
  return %0 : tensor<2x8x14x14xf32>
}

// -----

// Channels divide by groups.
func.func @conv2d$groups_divide(%x: tensor<2x3x16x16xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<2x8x14x14xf32> {
  // expected-error @+1 {{input channels 3 and output channels 8 must both divide by groups 2}}
  %0 = mp.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<2x3x16x16xf32>, tensor<8x1x3x3xf32>) -> tensor<2x8x14x14xf32>
  return %0 : tensor<2x8x14x14xf32>
}

// -----

// Weight input channels times groups equal the input channels.
func.func @conv2d$weight_channels(%x: tensor<2x4x16x16xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<2x8x14x14xf32> {
  // expected-error @+1 {{weight [8, 4, 3, 3] expects 8 input channels, got 4}}
  %0 = mp.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<2x4x16x16xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x14x14xf32>
  return %0 : tensor<2x8x14x14xf32>
}

// -----

// The kernel fits the padded input.
func.func @conv2d$kernel_too_big(%x: tensor<2x3x2x2xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<2x8x1x1xf32> {
  // expected-error @+1 {{kernel [3, 3] does not fit the padded input [2, 3, 2, 2]}}
  %0 = mp.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x2x2xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x1x1xf32>
  return %0 : tensor<2x8x1x1xf32>
}

// -----

// One bias per output channel.
func.func @conv2d$bias_shape(%x: tensor<2x3x16x16xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<3xf32>) -> tensor<2x8x14x14xf32> {
  // expected-error @+1 {{bias shape [3] must be [8] (one per output channel)}}
  %0 = mp.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>, tensor<3xf32>) -> tensor<2x8x14x14xf32>
  return %0 : tensor<2x8x14x14xf32>
}

// -----

// Conv bias has the output's element type.
func.func @conv2d$bias_type(%x: tensor<2x3x16x16xf16>, %w: tensor<8x3x3x3xf16>, %b: tensor<8xf32>) -> tensor<2x8x14x14xf16> {
  // expected-error @+1 {{bias element type must be 'f16', got 'f32'}}
  %0 = mp.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x16x16xf16>, tensor<8x3x3x3xf16>, tensor<8xf32>) -> tensor<2x8x14x14xf16>
  return %0 : tensor<2x8x14x14xf16>
}

// -----

// Convolution result shape follows the ONNX formula.
func.func @conv2d$result_shape(%x: tensor<2x3x16x16xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<2x8x16x16xf32> {
  // expected-error @+1 {{result shape [2, 8, 16, 16] does not match the inferred shape [2, 8, 14, 14]}}
  %0 = mp.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x16x16xf32>
  return %0 : tensor<2x8x16x16xf32>
}

// -----

// Binary operands share the element type (casts are explicit).
func.func @add$mixed_types(%a: tensor<4xf32>, %b: tensor<4xbf16>) -> tensor<4xf32> {
  // expected-error @+1 {{rhs element type must be 'f32', got 'bf16'}}
  %0 = mp.add %a, %b : tensor<4xf32>, tensor<4xbf16> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The result of a binary op has its operands' element type.
func.func @mul$result_type(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{result element type must be 'f32', got 'f16'}}
  %0 = mp.mul %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// Binary operands broadcast.
func.func @sub$broadcast(%a: tensor<4x3xf32>, %b: tensor<4xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{shapes [4, 3] and [4] do not broadcast}}
  %0 = mp.sub %a, %b : tensor<4x3xf32>, tensor<4xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// The binary result has the broadcast shape.
func.func @div$result_shape(%a: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{result shape [3] does not match the inferred shape [4, 3]}}
  %0 = mp.div %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Arithmetic takes floats or i32/i64 (exact at run time), never bools.
func.func @pow$bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{operand #0 must be ranked tensor of}}
  %0 = mp.pow %a, %a : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// Only an integer base takes an exponent of another type (a float).
func.func @pow$float_base_int_exponent(%a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{rhs element type}}
  %0 = mp.pow %a, %b : tensor<4xf32>, tensor<4xi64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Unary ops keep the type.
func.func @relu$type(%a: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "mp.relu"(%a) : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// GELU is exact or tanh: the enum admits nothing else.
func.func @gelu$approximate(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{enum values for attribute 'approximate' [none, tanh]}}
  %0 = mp.gelu %a approximate sigmoid : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A fusion is an element-wise, reduction or GEMM kernel, nothing else.
func.func @fusion$kind(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{enum values for attribute 'kind' [elementwise, reduction, gemm]}}
  %0 = mp.fusion convolution (%a) {ops = ["x"]} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    mp.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// Where selects between values of one element type.
func.func @where$types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{rhs element type must be 'f32', got 'f16'}}
  %0 = mp.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Where's result has the values' element type.
func.func @where$result_type(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{result element type must be 'f32', got 'bf16'}}
  %0 = mp.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// Where's values broadcast together.
func.func @where$values_broadcast(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{shapes [4] and [3] do not broadcast}}
  %0 = mp.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Where's condition broadcasts with the values.
func.func @where$condition_broadcast(%c: tensor<5xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{shapes [5] and [4] do not broadcast}}
  %0 = mp.where %c, %a, %b : (tensor<5xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Where's condition is boolean.
func.func @where$condition_type(%c: tensor<4xf32>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = mp.where %c, %a, %b : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Softmax axis is in range (the importer normalizes negative axes).
func.func @softmax$axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{axis -1 is out of range [0, 2)}}
  %0 = mp.softmax %x {axis = -1 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Softmax keeps the shape.
func.func @log_softmax$shape(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{result shape [4, 4] must equal the input shape [4, 8]}}
  %0 = mp.log_softmax %x {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Softmax does not run on FP8 (it accumulates).
func.func @softmax$fp8(%x: tensor<4x8xf8E4M3FN>) -> tensor<4x8xf32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = mp.softmax %x {axis = 1 : i64} : tensor<4x8xf8E4M3FN> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Softmax accumulator rule.
func.func @softmax$acc(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{acc_type must be f32 or f16, got 'f8E4M3FN'}}
  %0 = mp.softmax %x {axis = 1 : i64, acc_type = f8E4M3FN} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Layer norm axis in range.
func.func @layer_norm$axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{axis 2 is out of range [0, 2)}}
  %0 = mp.layer_norm %x {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Layer norm keeps the shape.
func.func @layer_norm$shape(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{result shape [4, 4] must equal the input shape [4, 8]}}
  %0 = mp.layer_norm %x {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Layer norm epsilon is positive.
func.func @layer_norm$epsilon(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{epsilon must be positive}}
  %0 = mp.layer_norm %x {axis = 1 : i64, epsilon = 0.0 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Layer norm scale has the normalized shape.
func.func @layer_norm$scale(%x: tensor<4x8xf32>, %g: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{scale shape [4] must equal the normalized shape [8]}}
  %0 = mp.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Layer norm bias has the normalized shape.
func.func @layer_norm$bias(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<1x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{bias shape [1, 8] must equal the normalized shape [8]}}
  %0 = mp.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Layer norm accumulator rule.
func.func @layer_norm$acc(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  // expected-error @+1 {{operand #0 must be f16 when acc_type = f16, got 'bf16'}}
  %0 = mp.layer_norm %x {axis = 1 : i64, epsilon = 1.0e-5 : f32, acc_type = f16} : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// -----

// RMS norm axis in range.
func.func @rms_norm$axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{axis 3 is out of range [0, 2)}}
  %0 = mp.rms_norm %x {axis = 3 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// RMS norm keeps the shape.
func.func @rms_norm$shape(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{result shape [8, 4] must equal the input shape [4, 8]}}
  %0 = mp.rms_norm %x {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

// RMS norm epsilon is positive.
func.func @rms_norm$epsilon(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{epsilon must be positive}}
  %0 = mp.rms_norm %x {axis = 1 : i64, epsilon = -1.0 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// RMS norm scale has the normalized shape.
func.func @rms_norm$scale(%x: tensor<4x8xf32>, %g: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{scale shape [4, 8] must equal the normalized shape [8]}}
  %0 = mp.rms_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// RMS norm accumulator rule.
func.func @rms_norm$acc(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{acc_type must be f32 or f16, got 'bf16'}}
  %0 = mp.rms_norm %x {axis = 1 : i64, epsilon = 1.0e-5 : f32, acc_type = bf16} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Batch norm needs a channel dimension.
func.func @batch_norm$rank(%x: tensor<8xf32>, %c: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{input must have rank >= 2 (N, C, ...), got [8]}}
  %0 = mp.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-5 : f32} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Batch norm keeps the shape.
func.func @batch_norm$shape(%x: tensor<2x8x4xf32>, %c: tensor<8xf32>) -> tensor<2x8x5xf32> {
  // expected-error @+1 {{result shape [2, 8, 5] must equal the input shape [2, 8, 4]}}
  %0 = mp.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-5 : f32} : (tensor<2x8x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x5xf32>
  return %0 : tensor<2x8x5xf32>
}

// -----

// Batch norm epsilon is non-negative.
func.func @batch_norm$epsilon(%x: tensor<2x8xf32>, %c: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{epsilon must be non-negative}}
  %0 = mp.batch_norm %x, %c, %c, %c, %c {epsilon = -1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Batch norm parameters are one per channel.
func.func @batch_norm$param(%x: tensor<2x8xf32>, %c: tensor<8xf32>, %v: tensor<4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{variance shape [4] must be [8] (one per channel)}}
  %0 = mp.batch_norm %x, %c, %c, %c, %v {epsilon = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Batch norm accumulator rule.
func.func @batch_norm$acc(%x: tensor<2x8xf32>, %c: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{operand #0 must be f16 when acc_type = f16, got 'f32'}}
  %0 = mp.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-5 : f32, acc_type = f16} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Reductions name their axes.
func.func @reduce_sum$empty_axes(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{axes must not be empty}}
  %0 = mp.reduce_sum %x {axes = array<i64>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Reduction axes are in range.
func.func @reduce_mean$axis_range(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{axis -1 is out of range for rank 2}}
  %0 = mp.reduce_mean %x {axes = array<i64: -1>} : tensor<4x8xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// Reduction axes are sorted and unique.
func.func @reduce_max$axes_order(%x: tensor<4x8xf32>) -> tensor<1x1xf32> {
  // expected-error @+1 {{axes must be strictly increasing, got [1, 0]}}
  %0 = mp.reduce_max %x {axes = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// -----

// keepdims decides the result rank.
func.func @reduce_sum$result_shape(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{result shape [4, 1] does not match the inferred shape [4]}}
  %0 = mp.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : tensor<4x8xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// A reduction keeps the element type.
func.func @reduce_sum$result_type(%x: tensor<4x8xbf16>) -> tensor<4x1xf32> {
  // expected-error @+1 {{result element type must be 'bf16', got 'f32'}}
  %0 = mp.reduce_sum %x {axes = array<i64: 1>} : tensor<4x8xbf16> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// Reduction accumulator rule.
func.func @reduce_mean$acc(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{acc_type must be f32 or f16, got 'bf16'}}
  %0 = mp.reduce_mean %x {axes = array<i64: 1>, acc_type = bf16} : tensor<4x8xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// Reshape keeps the element count.
func.func @reshape$count(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{result has 16 elements, input has 32}}
  %0 = mp.reshape %x : tensor<4x8xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Reshape keeps the element type.
func.func @reshape$type(%x: tensor<4x8xf32>) -> tensor<32xf16> {
  // expected-error @+1 {{result element type must be 'f32', got 'f16'}}
  %0 = mp.reshape %x : tensor<4x8xf32> -> tensor<32xf16>
  return %0 : tensor<32xf16>
}

// -----

// Transpose needs one perm entry per dim.
func.func @transpose$perm_length(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{perm has 3 entries for rank 2}}
  %0 = mp.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<4x8xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

// Transpose perm is a permutation.
func.func @transpose$not_permutation(%x: tensor<4x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{perm [1, 1] is not a permutation}}
  %0 = mp.transpose %x {perm = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// Transpose result shape.
func.func @transpose$result_shape(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{result shape [4, 8] does not match the inferred shape [8, 4]}}
  %0 = mp.transpose %x {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Transpose keeps the element type.
func.func @transpose$type(%x: tensor<4x8xf32>) -> tensor<8x4xbf16> {
  // expected-error @+1 {{result element type must be 'f32', got 'bf16'}}
  %0 = mp.transpose %x {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xbf16>
  return %0 : tensor<8x4xbf16>
}

// -----

// Concat needs an input.
func.func @concat$empty() -> tensor<0xf32> {
  // expected-error @+1 {{needs at least one input}}
  %0 = mp.concat {axis = 0 : i64} : () -> tensor<0xf32>
  return %0 : tensor<0xf32>
}

// -----

// Concat inputs share the element type.
func.func @concat$types(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) -> tensor<2x6xf32> {
  // expected-error @+1 {{input #1 element type must be 'f32', got 'f16'}}
  %0 = mp.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// Concat inputs agree off the axis.
func.func @concat$off_axis(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{input #1 [3, 3] does not match [2, 3] off axis 1}}
  %0 = mp.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// Concat axis in range.
func.func @concat$axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = mp.concat %a {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Concat result adds up along the axis.
func.func @concat$result_shape(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{result shape [2, 6] does not match the inferred shape [2, 7]}}
  %0 = mp.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// Slice keeps the rank.
func.func @slice$rank(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{result rank must equal the input rank 2}}
  %0 = mp.slice %x {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Slice needs a start and step per dim.
func.func @slice$counts(%x: tensor<4x8xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{starts and steps need one value per dimension (2)}}
  %0 = mp.slice %x {starts = array<i64: 0>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// Slice steps are non-zero.
func.func @slice$step_zero(%x: tensor<4x8xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{step of dimension 1 is zero}}
  %0 = mp.slice %x {starts = array<i64: 0, 0>, steps = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// Slice reads stay inside the input.
func.func @slice$bounds(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{dimension 1 reads indices 6 to 10 outside [0, 8)}}
  %0 = mp.slice %x {starts = array<i64: 0, 6>, steps = array<i64: 1, 2>} : tensor<4x8xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Slice keeps the element type.
func.func @slice$type(%x: tensor<4x8xf32>) -> tensor<4x8xf16> {
  // expected-error @+1 {{result element type must be 'f32', got 'f16'}}
  %0 = mp.slice %x {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}

// -----

// Gather axis in range.
func.func @gather$axis(%x: tensor<4x8xf32>, %i: tensor<3xi64>) -> tensor<4x3xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = mp.gather %x, %i {axis = 2 : i64} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Gather result shape.
func.func @gather$result_shape(%x: tensor<4x8xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  // expected-error @+1 {{result shape [3, 4] does not match the inferred shape [3, 8]}}
  %0 = mp.gather %x, %i {axis = 0 : i64} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Gather keeps the element type.
func.func @gather$type(%x: tensor<4x8xf32>, %i: tensor<3xi64>) -> tensor<3x8xbf16> {
  // expected-error @+1 {{result element type must be 'f32', got 'bf16'}}
  %0 = mp.gather %x, %i {axis = 0 : i64} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8xbf16>
  return %0 : tensor<3x8xbf16>
}

// -----

// Gather indices are integers.
func.func @gather$float_indices(%x: tensor<4x8xf32>, %i: tensor<3xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = mp.gather %x, %i {axis = 0 : i64} : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

// Pooling input is NCHW.
func.func @max_pool2d$rank(%x: tensor<8x16x16xf32>) -> tensor<8x8x8xf32> {
  // expected-error @+1 {{input must be NCHW (rank 4), got [8, 16, 16]}}
  %0 = mp.max_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<8x16x16xf32> -> tensor<8x8x8xf32>
  return %0 : tensor<8x8x8xf32>
}

// -----

// Pooling kernel is two positive values.
func.func @max_pool2d$kernel(%x: tensor<1x8x16x16xf32>) -> tensor<1x8x8x8xf32> {
  // expected-error @+1 {{kernel_shape must be 2 positive values, got [2, 0]}}
  %0 = mp.max_pool2d %x {kernel_shape = array<i64: 2, 0>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<1x8x16x16xf32> -> tensor<1x8x8x8xf32>
  return %0 : tensor<1x8x8x8xf32>
}

// -----

// Pooling pads are smaller than the window (ONNX).
func.func @avg_pool2d$pads(%x: tensor<1x8x16x16xf32>) -> tensor<1x8x9x9xf32> {
  // expected-error @+1 {{pads [2, 2, 2, 2] must be smaller than kernel_shape [2, 2]}}
  %0 = mp.avg_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>} : tensor<1x8x16x16xf32> -> tensor<1x8x9x9xf32>
  return %0 : tensor<1x8x9x9xf32>
}

// -----

// Pooling window fits the padded input.
func.func @avg_pool2d$window(%x: tensor<1x8x2x2xf32>) -> tensor<1x8x1x1xf32> {
  // expected-error @+1 {{window [3, 3] does not fit the padded input [1, 8, 2, 2]}}
  %0 = mp.avg_pool2d %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : tensor<1x8x2x2xf32> -> tensor<1x8x1x1xf32>
  return %0 : tensor<1x8x1x1xf32>
}

// -----

// Max pool dilations are two values.
func.func @max_pool2d$dilations(%x: tensor<1x8x16x16xf32>) -> tensor<1x8x8x8xf32> {
  // expected-error @+1 {{dilations must have 2 values, got 3}}
  %0 = mp.max_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>} : tensor<1x8x16x16xf32> -> tensor<1x8x8x8xf32>
  return %0 : tensor<1x8x8x8xf32>
}

// -----

// ceil_mode changes the output size.
func.func @max_pool2d$ceil_mode(%x: tensor<1x8x15x15xf32>) -> tensor<1x8x7x7xf32> {
  // expected-error @+1 {{result shape [1, 8, 7, 7] does not match the inferred shape [1, 8, 8, 8]}}
  %0 = mp.max_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true} : tensor<1x8x15x15xf32> -> tensor<1x8x7x7xf32>
  return %0 : tensor<1x8x7x7xf32>
}

// -----

// Pooling keeps the element type.
func.func @avg_pool2d$type(%x: tensor<1x8x16x16xf32>) -> tensor<1x8x8x8xbf16> {
  // expected-error @+1 {{result element type must be 'f32', got 'bf16'}}
  %0 = mp.avg_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<1x8x16x16xf32> -> tensor<1x8x8x8xbf16>
  return %0 : tensor<1x8x8x8xbf16>
}

// -----

// Quantize produces FP8.
func.func @quantize$result(%x: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xf16> {
  // expected-error @+1 {{result #0 must be ranked tensor of f8E4M3FN type or f8E5M2 type values}}
  %0 = mp.quantize %x, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// Quantize keeps the shape.
func.func @quantize$shape(%x: tensor<4xf32>, %s: tensor<f32>) -> tensor<2xf8E4M3FN> {
  // expected-error @+1 {{result shape [2] must equal the input shape [4]}}
  %0 = mp.quantize %x, %s : (tensor<4xf32>, tensor<f32>) -> tensor<2xf8E4M3FN>
  return %0 : tensor<2xf8E4M3FN>
}

// -----

// Per-tensor scales are rank 0.
func.func @quantize$scale(%x: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf8E4M3FN> {
  // expected-error @+1 {{scale must be a rank-0 tensor<f32> (per-tensor scaling), got 'tensor<4xf32>'}}
  %0 = mp.quantize %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf8E4M3FN>
  return %0 : tensor<4xf8E4M3FN>
}

// -----

// Dequantize keeps the shape.
func.func @dequantize$shape(%x: tensor<4xf8E5M2>, %s: tensor<f32>) -> tensor<8xf32> {
  // expected-error @+1 {{result shape [8] must equal the input shape [4]}}
  %0 = mp.dequantize %x, %s : (tensor<4xf8E5M2>, tensor<f32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Dequantize scales are rank 0.
func.func @dequantize$scale(%x: tensor<4xf8E5M2>, %s: tensor<1xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{scale must be a rank-0 tensor<f32> (per-tensor scaling), got 'tensor<1xf32>'}}
  %0 = mp.dequantize %x, %s : (tensor<4xf8E5M2>, tensor<1xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Amax is a rank-0 f32.
func.func @amax$result(%x: tensor<4xf32>) -> tensor<1xf32> {
  // expected-error @+1 {{result #0 must be 0D tensor of 32-bit float values}}
  %0 = mp.amax %x : tensor<4xf32> -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

// fp8_scale names an FP8 format.
func.func @fp8_scale$format(%a: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{format must be f8E4M3FN or f8E5M2, got 'bf16'}}
  %0 = mp.fp8_scale %a {format = bf16} : tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// fp8_scale margins are non-negative.
func.func @fp8_scale$margin(%a: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{margin must be non-negative, got -1}}
  %0 = mp.fp8_scale %a {format = f8E4M3FN, margin = -1 : i64} : tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Scaled GEMMs take FP8 operands.
func.func @scaled_matmul$operands(%a: tensor<4x8xbf16>, %b: tensor<8x4xf8E4M3FN>, %s: tensor<f32>) -> tensor<4x4xbf16> {
  // expected-error @+1 {{operand #0 must be ranked tensor of f8E4M3FN type or f8E5M2 type values}}
  %0 = mp.scaled_matmul %a, %b, %s, %s : (tensor<4x8xbf16>, tensor<8x4xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<4x4xbf16>
  return %0 : tensor<4x4xbf16>
}

// -----

// No E5M2 x E5M2 scaled GEMM either.
func.func @scaled_matmul$e5m2_pair(%a: tensor<4x8xf8E5M2>, %b: tensor<8x4xf8E5M2>, %s: tensor<f32>) -> tensor<4x4xbf16> {
  // expected-error @+1 {{FP8 operands cannot both be f8E5M2}}
  %0 = mp.scaled_matmul %a, %b, %s, %s : (tensor<4x8xf8E5M2>, tensor<8x4xf8E5M2>, tensor<f32>, tensor<f32>) -> tensor<4x4xbf16>
  return %0 : tensor<4x4xbf16>
}

// -----

// Scaled GEMM scales are per tensor.
func.func @scaled_matmul$scale(%a: tensor<4x8xf8E4M3FN>, %b: tensor<8x4xf8E4M3FN>, %s: tensor<f32>, %v: tensor<4xf32>) -> tensor<4x4xbf16> {
  // expected-error @+1 {{scale must be a rank-0 tensor<f32> (per-tensor scaling), got 'tensor<4xf32>'}}
  %0 = mp.scaled_matmul %a, %b, %v, %s : (tensor<4x8xf8E4M3FN>, tensor<8x4xf8E4M3FN>, tensor<4xf32>, tensor<f32>) -> tensor<4x4xbf16>
  return %0 : tensor<4x4xbf16>
}

// -----

// Scaled GEMM result shape.
func.func @scaled_matmul$shape(%a: tensor<4x8xf8E4M3FN>, %b: tensor<8x4xf8E4M3FN>, %s: tensor<f32>) -> tensor<4x8xbf16> {
  // expected-error @+1 {{result shape [4, 8] does not match the inferred shape [4, 4]}}
  %0 = mp.scaled_matmul %a, %b, %s, %s : (tensor<4x8xf8E4M3FN>, tensor<8x4xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// -----

// Scaled GEMMs write a wider float, not FP8.
func.func @scaled_matmul$result(%a: tensor<4x8xf8E4M3FN>, %b: tensor<8x4xf8E4M3FN>, %s: tensor<f32>) -> tensor<4x4xf8E4M3FN> {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = mp.scaled_matmul %a, %b, %s, %s : (tensor<4x8xf8E4M3FN>, tensor<8x4xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<4x4xf8E4M3FN>
  return %0 : tensor<4x4xf8E4M3FN>
}

// -----

// Scaled linear: weight features.
func.func @scaled_linear$features(%x: tensor<4x8xf8E4M3FN>, %w: tensor<16x4xf8E4M3FN>, %s: tensor<f32>) -> tensor<4x16xbf16> {
  // expected-error @+1 {{input features 8 do not match weight [16, 4] (transposed)}}
  %0 = mp.scaled_linear %x, %w, %s, %s {transpose_weight = true} : (tensor<4x8xf8E4M3FN>, tensor<16x4xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<4x16xbf16>
  return %0 : tensor<4x16xbf16>
}

// -----

// Scaled linear: bias type follows the output.
func.func @scaled_linear$bias_type(%x: tensor<4x8xf8E4M3FN>, %w: tensor<8x16xf8E4M3FN>, %s: tensor<f32>, %b: tensor<16xf32>) -> tensor<4x16xbf16> {
  // expected-error @+1 {{bias element type must be 'bf16', got 'f32'}}
  %0 = mp.scaled_linear %x, %w, %s, %s, %b : (tensor<4x8xf8E4M3FN>, tensor<8x16xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<16xf32>) -> tensor<4x16xbf16>
  return %0 : tensor<4x16xbf16>
}

// -----

// Scaled linear: bias shape broadcasts to the output.
func.func @scaled_linear$bias_shape(%x: tensor<4x8xf8E4M3FN>, %w: tensor<8x16xf8E4M3FN>, %s: tensor<f32>, %b: tensor<8xbf16>) -> tensor<4x16xbf16> {
  // expected-error @+1 {{bias shape [8] must broadcast to the output shape [4, 16]}}
  %0 = mp.scaled_linear %x, %w, %s, %s, %b : (tensor<4x8xf8E4M3FN>, tensor<8x16xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<8xbf16>) -> tensor<4x16xbf16>
  return %0 : tensor<4x16xbf16>
}

// -----

// Scaled linear: the accumulator rule.
func.func @scaled_linear$acc(%x: tensor<4x8xf8E4M3FN>, %w: tensor<8x16xf8E4M3FN>, %s: tensor<f32>) -> tensor<4x16xbf16> {
  // expected-error @+1 {{acc_type must be f32 or f16, got 'bf16'}}
  %0 = mp.scaled_linear %x, %w, %s, %s {acc_type = bf16} : (tensor<4x8xf8E4M3FN>, tensor<8x16xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<4x16xbf16>
  return %0 : tensor<4x16xbf16>
}

// -----

// Valid control: FP8 pair with a BF16 result, ceil-mode pooling and a
// negative-step slice all verify.
func.func @valid$controls(%a: tensor<16x32xf8E5M2>, %b: tensor<32x8xf8E4M3FN>, %x: tensor<1x8x15x15xf32>, %y: tensor<4x8xf32>) -> (tensor<16x8xbf16>, tensor<1x8x8x8xf32>, tensor<4x4xf32>) {
  %0 = mp.matmul %a, %b : (tensor<16x32xf8E5M2>, tensor<32x8xf8E4M3FN>) -> tensor<16x8xbf16>
  %1 = mp.max_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true} : tensor<1x8x15x15xf32> -> tensor<1x8x8x8xf32>
  %2 = mp.slice %y {starts = array<i64: 0, 7>, steps = array<i64: 1, -2>} : tensor<4x8xf32> -> tensor<4x4xf32>
  return %0, %1, %2 : tensor<16x8xbf16>, tensor<1x8x8x8xf32>, tensor<4x4xf32>
}

// -----

// A comparison reads floats of any dtypes, or one integer type: not a mix.
func.func @less$int_float(%a: tensor<4xi64>, %b: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{operands must both be floats or share one integer type, got 'i64' and 'f32'}}
  %0 = mp.less %a, %b : tensor<4xi64>, tensor<4xf32> -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// PRelu's slope broadcasts to x, never x to the slope.
func.func @prelu$widens(%x: tensor<4xf32>, %s: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{slope shape [3, 4] must broadcast to the input shape [4]}}
  %0 = mp.prelu %x, %s : tensor<4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// IsInf must detect at least one infinity.
func.func @is_inf$nothing(%x: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{detects nothing: detect_negative or detect_positive must be true}}
  %0 = mp.is_inf %x {detect_negative = false, detect_positive = false} : tensor<4xf32> -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// Valid control: float operands of different dtypes compare as given.
func.func @valid$mixed_float_compare(%a: tensor<4xbf16>, %b: tensor<f32>) -> tensor<4xi1> {
  %0 = mp.greater_or_equal %a, %b : tensor<4xbf16>, tensor<f32> -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// GatherElements indices have the data's rank.
func.func @gather_elements$rank(%x: tensor<4x8xf32>, %i: tensor<3xi64>) -> tensor<3xf32> {
  // expected-error @+1 {{indices have rank 1, data has rank 2}}
  %0 = mp.gather_elements %x, %i {axis = 0 : i64} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// GatherElements indices fit the data off the axis.
func.func @gather_elements$off_axis(%x: tensor<4x8xf32>, %i: tensor<9x9xi64>) -> tensor<9x9xf32> {
  // expected-error @+1 {{indices [9, 9] exceed data [4, 8] in dim 1}}
  %0 = mp.gather_elements %x, %i {axis = 0 : i64} : (tensor<4x8xf32>, tensor<9x9xi64>) -> tensor<9x9xf32>
  return %0 : tensor<9x9xf32>
}

// -----

// GatherND tuples address at most the dims after the batch dims.
func.func @gather_nd$tuple(%x: tensor<2x3xf32>, %i: tensor<4x3xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{the last dim of indices [4, 3] must be in [1, 2]}}
  %0 = mp.gather_nd %x, %i : (tensor<2x3xf32>, tensor<4x3xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// GatherND batch dims agree.
func.func @gather_nd$batch(%x: tensor<2x3xf32>, %i: tensor<3x1xi64>) -> tensor<3xf32> {
  // expected-error @+1 {{batch dim 0 differs: data [2, 3], indices [3, 1]}}
  %0 = mp.gather_nd %x, %i {batch_dims = 1 : i64} : (tensor<2x3xf32>, tensor<3x1xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// ArgMax over an empty axis has no answer.
func.func @arg_max$empty(%x: tensor<4x0xf32>) -> tensor<4x1xi64> {
  // expected-error @+1 {{axis 1 of [4, 0] is empty}}
  %0 = mp.arg_max %x {axis = 1 : i64} : tensor<4x0xf32> -> tensor<4x1xi64>
  return %0 : tensor<4x1xi64>
}

// -----

// ArgMin writes int64 indices.
func.func @arg_min$type(%x: tensor<4x3xf32>) -> tensor<4x1xi32> {
  // expected-error @+1 {{result #0 must be ranked tensor of 64-bit signless integer values}}
  %0 = mp.arg_min %x {axis = 1 : i64} : tensor<4x3xf32> -> tensor<4x1xi32>
  return %0 : tensor<4x1xi32>
}

// -----

// TopK's k fits the axis.
func.func @topk$k(%x: tensor<4x3xf32>) -> (tensor<4x5xf32>, tensor<4x5xi64>) {
  // expected-error @+1 {{k 5 is out of range [0, 3] for axis 1}}
  %0:2 = mp.topk %x {axis = 1 : i64, k = 5 : i64} : tensor<4x3xf32> -> (tensor<4x5xf32>, tensor<4x5xi64>)
  return %0#0, %0#1 : tensor<4x5xf32>, tensor<4x5xi64>
}

// -----

// TopK's values keep the input's element type.
func.func @topk$type(%x: tensor<4x3xf32>) -> (tensor<4x2xbf16>, tensor<4x2xi64>) {
  // expected-error @+1 {{values element type must be 'f32', got 'bf16'}}
  %0:2 = mp.topk %x {axis = 1 : i64, k = 2 : i64} : tensor<4x3xf32> -> (tensor<4x2xbf16>, tensor<4x2xi64>)
  return %0#0, %0#1 : tensor<4x2xbf16>, tensor<4x2xi64>
}

// -----

// CumSum axis in range.
func.func @cumsum$axis(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{axis -1 is out of range for rank 2}}
  %0 = mp.cumsum %x {axis = -1 : i64} : tensor<4x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// ScatterND updates hold one slice per index tuple.
func.func @scatter_nd$updates(%x: tensor<4x5xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{updates have shape [2, 4], the indices address [2, 5]}}
  %0 = mp.scatter_nd %x, %i, %u : (tensor<4x5xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// ScatterND reductions are ONNX's.
func.func @scatter_nd$reduction(%x: tensor<4x5xf32>, %i: tensor<2x1xi64>, %u: tensor<2x5xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{reduction must be none, add, mul, max or min, got 'sub'}}
  %0 = mp.scatter_nd %x, %i, %u {reduction = "sub"} : (tensor<4x5xf32>, tensor<2x1xi64>, tensor<2x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// ReduceProd result shape.
func.func @reduce_prod$shape(%x: tensor<4x5xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{result shape [4] does not match the inferred shape [4, 1]}}
  %0 = mp.reduce_prod %x {axes = array<i64: 1>} : tensor<4x5xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// N-D conv: 1 to 3 spatial dims.
func.func @conv$rank(%x: tensor<1x2x2x2x2x2xf32>, %w: tensor<1x2x1x1x1x1xf32>) -> tensor<1x1x2x2x2x2xf32> {
  // expected-error @+1 {{input must be [N, C, spatial...] with 1 to 3 spatial dims, got [1, 2, 2, 2, 2, 2]}}
  %0 = mp.conv %x, %w {strides = array<i64: 1, 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1, 1>} : (tensor<1x2x2x2x2x2xf32>, tensor<1x2x1x1x1x1xf32>) -> tensor<1x1x2x2x2x2xf32>
  return %0 : tensor<1x1x2x2x2x2xf32>
}

// -----

// N-D conv: pads are the begins then the ends, 2 per dim.
func.func @conv$pads(%x: tensor<1x2x4x4x4xf32>, %w: tensor<1x2x3x3x3xf32>) -> tensor<1x1x2x2x2xf32> {
  // expected-error @+1 {{pads must have 6 values [begins..., ends...], got 4}}
  %0 = mp.conv %x, %w {strides = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>} : (tensor<1x2x4x4x4xf32>, tensor<1x2x3x3x3xf32>) -> tensor<1x1x2x2x2xf32>
  return %0 : tensor<1x1x2x2x2xf32>
}

// -----

// conv_transpose: output_padding below the stride or the dilation.
func.func @conv_transpose$output_padding(%x: tensor<1x1x3x3xf32>, %w: tensor<1x2x3x3xf32>) -> tensor<1x2x7x7xf32> {
  // expected-error @+1 {{output_padding [2, 0] must be non-negative and below the stride or the dilation}}
  %0 = mp.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 2, 0>} : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x7x7xf32>
  return %0 : tensor<1x2x7x7xf32>
}

// -----

// conv_transpose: the weight is [C, M/groups, k...].
func.func @conv_transpose$channels(%x: tensor<1x3x3x3xf32>, %w: tensor<2x2x3x3xf32>) -> tensor<1x2x5x5xf32> {
  // expected-error @+1 {{weight [2, 2, 3, 3] expects 2 input channels, got 3}}
  %0 = mp.conv_transpose %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>} : (tensor<1x3x3x3xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  return %0 : tensor<1x2x5x5xf32>
}

// -----

// conv_transpose: the result shape ONNX's rule gives.
func.func @conv_transpose$result(%x: tensor<1x1x3x3xf32>, %w: tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32> {
  // expected-error @+1 {{result shape [1, 2, 6, 6] does not match the inferred shape [1, 2, 7, 7]}}
  %0 = mp.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>} : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  return %0 : tensor<1x2x6x6xf32>
}

// -----

// N-D pooling: one dilation per spatial dim.
func.func @avg_pool$dilations(%x: tensor<1x2x4x4x4xf32>) -> tensor<1x2x3x3x3xf32> {
  // expected-error @+1 {{dilations must have 3 values, got 2}}
  %0 = mp.avg_pool %x {kernel_shape = array<i64: 2, 2, 2>, strides = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x2x4x4x4xf32> -> tensor<1x2x3x3x3xf32>
  return %0 : tensor<1x2x3x3x3xf32>
}

// -----

// max_pool_indices: storage_order 0 or 1.
func.func @max_pool_indices$storage_order(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xi64> {
  // expected-error @+1 {{storage_order must be 0 (row-major) or 1 (column-major), got 2}}
  %0 = mp.max_pool_indices %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, storage_order = 2 : i64} : tensor<1x2x4x4xf32> -> tensor<1x2x2x2xi64>
  return %0 : tensor<1x2x2x2xi64>
}

// -----

// max_pool_indices: an i64 result.
func.func @max_pool_indices$result_type(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  // expected-error @+1 {{result #0 must be ranked tensor of 64-bit signless integer values}}
  %0 = mp.max_pool_indices %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x2x4x4xf32> -> tensor<1x2x2x2xf32>
  return %0 : tensor<1x2x2x2xf32>
}

// -----

// block_scale: the scales' shape is the input's, last two dims divided by
// the block and rounded up (300 / 128 -> 3).
func.func @block_scale$shape(%x: tensor<8x300xf32>) -> tensor<8x2xf32> {
  // expected-error @+1 {{scales of input with blocks 1x128 must have shape [8, 3], got 'tensor<8x2xf32>'}}
  %0 = mp.block_scale %x {format = f8E4M3FN, block = array<i64: 1, 128>, recipe = "block"} : tensor<8x300xf32> -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

// -----

// block_scale: a known recipe.
func.func @block_scale$recipe(%x: tensor<8x256xf32>) -> tensor<8x2xf32> {
  // expected-error @+1 {{recipe must be "block" or "mx", got "nvfp4"}}
  %0 = mp.block_scale %x {format = f8E4M3FN, block = array<i64: 1, 128>, recipe = "nvfp4"} : tensor<8x256xf32> -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

// -----

// block_scale: rank >= 2.
func.func @block_scale$rank(%x: tensor<256xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{input must have rank >= 2 for block scaling}}
  %0 = mp.block_scale %x {format = f8E4M3FN, block = array<i64: 1, 128>, recipe = "block"} : tensor<256xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// block_quantize: positive block sizes.
func.func @block_quantize$block(%x: tensor<8x256xf32>, %s: tensor<8x2xf32>) -> tensor<8x256xf8E4M3FN> {
  // expected-error @+1 {{block must be two positive sizes (rows, cols), got [0, 128]}}
  %0 = mp.block_quantize %x, %s {block = array<i64: 0, 128>} : (tensor<8x256xf32>, tensor<8x2xf32>) -> tensor<8x256xf8E4M3FN>
  return %0 : tensor<8x256xf8E4M3FN>
}

// -----

// scaled_linear with blocks: the same block length along k.
func.func @scaled_linear$block_k(%x: tensor<8x256xf8E4M3FN>, %w: tensor<32x256xf8E4M3FN>, %sx: tensor<8x2xf32>, %sw: tensor<32x8xf32>) -> tensor<8x32xbf16> {
  // expected-error @+1 {{input and weight blocks must have the same length along k, got 128 and 32}}
  %0 = mp.scaled_linear %x, %w, %sx, %sw {transpose_weight = true, input_block = array<i64: 1, 128>, weight_block = array<i64: 1, 32>} : (tensor<8x256xf8E4M3FN>, tensor<32x256xf8E4M3FN>, tensor<8x2xf32>, tensor<32x8xf32>) -> tensor<8x32xbf16>
  return %0 : tensor<8x32xbf16>
}

// -----

// scaled_linear with blocks: the weight as [n, k].
func.func @scaled_linear$block_layout(%x: tensor<8x256xf8E4M3FN>, %w: tensor<256x32xf8E4M3FN>, %sx: tensor<8x2xf32>, %sw: tensor<2x1xf32>) -> tensor<8x32xbf16> {
  // expected-error @+1 {{block scaling takes the weight as a 2-D [n, k] tensor (transpose_weight = true)}}
  %0 = mp.scaled_linear %x, %w, %sx, %sw {input_block = array<i64: 1, 128>, weight_block = array<i64: 128, 128>} : (tensor<8x256xf8E4M3FN>, tensor<256x32xf8E4M3FN>, tensor<8x2xf32>, tensor<2x1xf32>) -> tensor<8x32xbf16>
  return %0 : tensor<8x32xbf16>
}

// -----

// scaled_linear with blocks: the weight's scales.
func.func @scaled_linear$block_scales(%x: tensor<8x256xf8E4M3FN>, %w: tensor<32x256xf8E4M3FN>, %sx: tensor<8x2xf32>, %sw: tensor<f32>) -> tensor<8x32xbf16> {
  // expected-error @+1 {{scales of weight with blocks 128x128 must have shape [1, 2], got 'tensor<f32>'}}
  %0 = mp.scaled_linear %x, %w, %sx, %sw {transpose_weight = true, input_block = array<i64: 1, 128>, weight_block = array<i64: 128, 128>} : (tensor<8x256xf8E4M3FN>, tensor<32x256xf8E4M3FN>, tensor<8x2xf32>, tensor<f32>) -> tensor<8x32xbf16>
  return %0 : tensor<8x32xbf16>
}

// -----

// scaled_linear: blocks come together.
func.func @scaled_linear$one_block(%x: tensor<8x256xf8E4M3FN>, %w: tensor<32x256xf8E4M3FN>, %sx: tensor<8x2xf32>, %sw: tensor<1x2xf32>) -> tensor<8x32xbf16> {
  // expected-error @+1 {{input_block and weight_block come together}}
  %0 = mp.scaled_linear %x, %w, %sx, %sw {transpose_weight = true, input_block = array<i64: 1, 128>} : (tensor<8x256xf8E4M3FN>, tensor<32x256xf8E4M3FN>, tensor<8x2xf32>, tensor<1x2xf32>) -> tensor<8x32xbf16>
  return %0 : tensor<8x32xbf16>
}

// -----

// all_reduce: a known reduction.
func.func @all_reduce$reduction(%g: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{reduction must be "sum", "mean" or "max", got "min"}}
  %0 = mp.all_reduce %g {reduction = "min"} : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// all_reduce: the output is the input's type.
func.func @all_reduce$type(%g: tensor<8xf32>) -> tensor<8xbf16> {
  // expected-error @+1 {{output type 'tensor<8xbf16>' must be the input's, 'tensor<8xf32>'}}
  %0 = mp.all_reduce %g {reduction = "sum"} : tensor<8xf32> -> tensor<8xbf16>
  return %0 : tensor<8xbf16>
}

// -----

// rank_slice: the whole is world times the slice.
func.func @rank_slice$length(%g: tensor<8xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{the whole vector must have world (2) times the slice's 3 elements, got 8}}
  %0 = mp.rank_slice %g {world = 2} : tensor<8xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// rank_slice: at least one rank.
func.func @rank_slice$world(%g: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{world must be >= 1, got 0}}
  %0 = mp.rank_slice %g {world = 0} : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// all_gather: vectors of one element type.
func.func @all_gather$type(%g: tensor<4xf32>) -> tensor<8xbf16> {
  // expected-error @+1 {{input and output must have one element type}}
  %0 = mp.all_gather %g {world = 2} : tensor<4xf32> -> tensor<8xbf16>
  return %0 : tensor<8xbf16>
}

// -----

// all_gather: vectors only.
func.func @all_gather$rank(%g: tensor<2x2xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{takes vectors}}
  %0 = mp.all_gather %g {world = 2} : tensor<2x2xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
