// For tests/lit/cli/memory.test: a[2^20,1] + b[1,2^20] is a 4 TiB
// intermediate (2^40 f32), which the interpreter cannot hold; the sum of
// it is one value.
func.func @main(%a: tensor<1048576x1xf32> {mp.name = "a"}, %b: tensor<1x1048576xf32> {mp.name = "b"}) -> (tensor<f32> {mp.name = "y"}) {
  %c = mp.add %a, %b : tensor<1048576x1xf32>, tensor<1x1048576xf32> -> tensor<1048576x1048576xf32> loc("big_add")
  %y = mp.reduce_sum %c {axes = array<i64: 0, 1>, keepdims = false} : tensor<1048576x1048576xf32> -> tensor<f32> loc("sum")
  return %y : tensor<f32>
}
