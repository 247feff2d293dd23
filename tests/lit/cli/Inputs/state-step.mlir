// A step with one state, s (tests/unit/runtime/StateTest.cpp's): s_new =
// s * 0.5 + x, out = sum(s_new), g = gather(s_new, idx).
func.func @main(%s: tensor<4xf32> {mp.name = "s", mp.state = "s",
                       mp.state_init = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>},
    %x: tensor<4xf32> {mp.name = "x"},
    %idx: tensor<2xi64> {mp.name = "idx"})
    -> (tensor<1xf32> {mp.name = "out"}, tensor<2xf32> {mp.name = "g"},
        tensor<4xf32> {mp.state_update = "s"}) {
  %half = mp.constant dense<0.5> : tensor<4xf32>
  %m = mp.mul %s, %half : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %n = mp.add %m, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %out = mp.reduce_sum %n {axes = array<i64: 0>} : tensor<4xf32> -> tensor<1xf32>
  %g = mp.gather %n, %idx {axis = 0 : i64} : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %out, %g, %n : tensor<1xf32>, tensor<2xf32>, tensor<4xf32>
}
