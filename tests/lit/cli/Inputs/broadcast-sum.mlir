// For tests/lit/cli/memory.test: sum(a[2048,1] + b[1,2048]) fuses into one
// kernel of 2^22 points that touches no tensor larger than 2048 elements.
func.func @main(%a: tensor<2048x1xf32> {mp.name = "a"}, %b: tensor<1x2048xf32> {mp.name = "b"}) -> (tensor<f32> {mp.name = "y"}) {
  %c = mp.add %a, %b : tensor<2048x1xf32>, tensor<1x2048xf32> -> tensor<2048x2048xf32> loc("bcast_add")
  %y = mp.reduce_sum %c {axes = array<i64: 0, 1>, keepdims = false} : tensor<2048x2048xf32> -> tensor<f32> loc("sum")
  return %y : tensor<f32>
}
