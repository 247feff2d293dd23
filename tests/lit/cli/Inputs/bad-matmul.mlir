func.func @main(%a: tensor<4x8xf32>, %b: tensor<5x3xf32>) -> tensor<4x3xf32> {
  %0 = mp.matmul %a, %b : (tensor<4x8xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
