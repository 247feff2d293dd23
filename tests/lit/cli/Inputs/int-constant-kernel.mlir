// For tests/lit/cli/int-constant-kernel.test: scalar bool and integer
// constants that kernels take as immediates.
func.func @main(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x8xf32> {mp.name = "y"}, tensor<4x8xf32> {mp.name = "z"}) {
  %t = mp.constant dense<true> : tensor<i1> loc("t")
  %f = mp.constant dense<false> : tensor<i1> loc("f")
  %zero = mp.constant dense<0.0> : tensor<f32> loc("zero")
  %seven = mp.constant dense<7> : tensor<i64> loc("seven")
  %a = mp.where %t, %x, %zero : (tensor<i1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32> loc("keep")
  %y = mp.where %f, %zero, %a : (tensor<i1>, tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("drop")
  %s = mp.cast %seven : tensor<i64> -> tensor<f32> loc("to_f32")
  %z = mp.add %x, %s : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32> loc("add")
  return %y, %z : tensor<4x8xf32>, tensor<4x8xf32>
}
