// A bf16 activation compared with an f32 graph input, then softplus and elu.
func.func @main(%x: tensor<4x8xf32> {mp.name = "x"}, %t: tensor<8xf32> {mp.name = "t"}) -> (tensor<4x8xi1> {mp.name = "m"}, tensor<4x8xf32> {mp.name = "y"}) {
  %r = mp.relu %x : tensor<4x8xf32>
  %m = mp.less %r, %t : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  %s = mp.softplus %r : tensor<4x8xf32>
  %e = mp.elu %r {alpha = 0.5 : f32} : tensor<4x8xf32>
  %y = mp.add %e, %s : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %m, %y : tensor<4x8xi1>, tensor<4x8xf32>
}
