func.func @main(%a: tensor<4xf32> {mp.name = "input_ids"}, %b: tensor<4xf32> {mp.name = "/inputs/pixel values"}, %c: tensor<4xf32> {mp.name = "fc1"}, %d: tensor<4xf32> {mp.name = "a b"}, %e: tensor<4xf32> {mp.name = "a_b"}, %f: tensor<4xf32> {mp.name = "arg1"}, %g: tensor<4xf32> {mp.name = "%arg0"}) -> (tensor<4xf32> {mp.name = "y"}) {
  %0 = mp.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("fc1")
  %1 = mp.add %0, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("%arg0 \"quoted\" %arg1")
  %2 = mp.add %1, %d : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("sum2")
  %3 = mp.add %2, %e : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("sum3")
  %4 = mp.add %3, %f : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("sum4")
  %5 = mp.add %4, %g : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("sum5")
  return %5 : tensor<4xf32>
}
