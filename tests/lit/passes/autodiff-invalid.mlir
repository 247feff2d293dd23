// RUN: mixprec-opt --split-input-file --verify-diagnostics --mp-autodiff=wrt=x %s

// The loss must hold one element: a [2] result is no loss.
// expected-error @+1 {{the loss (result #0 of @loss$not_scalar) must hold one float element, got 'tensor<2xf32>'}}
func.func @loss$not_scalar(%x: tensor<2xf32> {mp.name = "x"}) -> tensor<2xf32> {
  %0 = mp.exp %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Two results and no loss= to choose one.
// expected-error @+1 {{@loss$two_results has 2 results: name the loss (loss=NAME)}}
func.func @loss$two_results(%x: tensor<f32> {mp.name = "x"}) -> (tensor<f32>, tensor<f32>) {
  return %x, %x : tensor<f32>, tensor<f32>
}

// -----

// wrt=x names nothing in this function (its input is "y").
// expected-error @+1 {{wrt 'x' is neither an argument nor a constant of @wrt$unknown_name}}
func.func @wrt$unknown_name(%y: tensor<f32> {mp.name = "y"}) -> tensor<f32> {
  %0 = mp.exp %y : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// FP8 scaling ops have no gradient rule (--mp-insert-scaling runs after
// differentiation): the loss depends on x through one.
func.func @dequantize$no_rule(%x: tensor<4xf32> {mp.name = "x"}) -> tensor<f32> {
  %s = mp.constant dense<2.0> : tensor<f32>
  %q = mp.quantize %x, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf8E4M3FN>
  // expected-error @+1 {{'mp.dequantize' has no gradient rule, and the loss depends on it}}
  %d = mp.dequantize %q, %s : (tensor<4xf8E4M3FN>, tensor<f32>) -> tensor<4xf32>
  %l = mp.reduce_sum %d {axes = array<i64: 0>, keepdims = false} : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A scatter that multiplies has no rule (only none and add do).
func.func @scatter_nd$mul(%x: tensor<4xf32> {mp.name = "x"}) -> tensor<f32> {
  %i = mp.constant dense<[[1]]> : tensor<1x1xi64>
  %u = mp.constant dense<[3.0]> : tensor<1xf32>
  // expected-error @+1 {{'mp.scatter_nd' op has no gradient rule for reduction 'mul'}}
  %y = mp.scatter_nd %x, %i, %u {reduction = "mul"} : (tensor<4xf32>, tensor<1x1xi64>, tensor<1xf32>) -> tensor<4xf32>
  %l = mp.reduce_sum %y {axes = array<i64: 0>, keepdims = false} : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Valid: a loss of shape [1, 1] holds one element.
func.func @loss$one_element(%x: tensor<1x1xf32> {mp.name = "x"}) -> tensor<1x1xf32> {
  %0 = mp.tanh %x : tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}
