// The routine kernels that check indices at run time (CudaRoutines.h:
// gather with indices that are no constant, gather_elements, scatter_nd
// with every reduction), over f32/bf16/f16/i32/i64 data and i32/i64
// indices: cuda_index_routines_on_shim runs each on the CUDA shim against
// the CPU backend (in range, and out of range into the error record),
// cuda_index_routines_nvrtc through NVRTC for sm_80 and sm_90.
module {
  func.func @"gather$f32_i64_axis0"(%a0: tensor<5x3xf32>, %a1: tensor<4xi64>) -> tensor<4x3xf32> {
    %0 = mpk.call gather(%a0, %a1) #mpk.axis<axis = 0> {ops = ["gather"]} : (tensor<5x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
    return %0 : tensor<4x3xf32>
  }
  func.func @"gather$bf16_i32_axis1"(%a0: tensor<3x5x4xbf16>, %a1: tensor<2x3xi32>) -> tensor<3x2x3x4xbf16> {
    %0 = mpk.call gather(%a0, %a1) #mpk.axis<axis = 1> {ops = ["gather"]} : (tensor<3x5x4xbf16>, tensor<2x3xi32>) -> tensor<3x2x3x4xbf16>
    return %0 : tensor<3x2x3x4xbf16>
  }
  func.func @"gather$f16_i64_last"(%a0: tensor<2x3x6xf16>, %a1: tensor<7xi64>) -> tensor<2x3x7xf16> {
    %0 = mpk.call gather(%a0, %a1) #mpk.axis<axis = -1> {ops = ["gather"]} : (tensor<2x3x6xf16>, tensor<7xi64>) -> tensor<2x3x7xf16>
    return %0 : tensor<2x3x7xf16>
  }
  func.func @"gather$i32_i32_axis1"(%a0: tensor<4x4xi32>, %a1: tensor<3xi32>) -> tensor<4x3xi32> {
    %0 = mpk.call gather(%a0, %a1) #mpk.axis<axis = 1> {ops = ["gather"]} : (tensor<4x4xi32>, tensor<3xi32>) -> tensor<4x3xi32>
    return %0 : tensor<4x3xi32>
  }
  func.func @"gather$f32_i64_scalar_index"(%a0: tensor<6x2xf32>, %a1: tensor<i64>) -> tensor<2xf32> {
    %0 = mpk.call gather(%a0, %a1) #mpk.axis<axis = 0> {ops = ["gather"]} : (tensor<6x2xf32>, tensor<i64>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
  func.func @"gather_elements$f32_i64_axis1"(%a0: tensor<3x4xf32>, %a1: tensor<3x4xi64>) -> tensor<3x4xf32> {
    %0 = mpk.call gather_elements(%a0, %a1) #mpk.axis<axis = 1> {ops = ["gather_elements"]} : (tensor<3x4xf32>, tensor<3x4xi64>) -> tensor<3x4xf32>
    return %0 : tensor<3x4xf32>
  }
  func.func @"gather_elements$bf16_i32_axis0"(%a0: tensor<4x3x2xbf16>, %a1: tensor<2x3x2xi32>) -> tensor<2x3x2xbf16> {
    %0 = mpk.call gather_elements(%a0, %a1) #mpk.axis<axis = 0> {ops = ["gather_elements"]} : (tensor<4x3x2xbf16>, tensor<2x3x2xi32>) -> tensor<2x3x2xbf16>
    return %0 : tensor<2x3x2xbf16>
  }
  func.func @"gather_elements$f16_i64_neg_axis"(%a0: tensor<2x5x3xf16>, %a1: tensor<2x2x3xi64>) -> tensor<2x2x3xf16> {
    %0 = mpk.call gather_elements(%a0, %a1) #mpk.axis<axis = -2> {ops = ["gather_elements"]} : (tensor<2x5x3xf16>, tensor<2x2x3xi64>) -> tensor<2x2x3xf16>
    return %0 : tensor<2x2x3xf16>
  }
  func.func @"scatter_nd$f32_rows_none"(%a0: tensor<6x4xf32>, %a1: tensor<5x1xi64>, %a2: tensor<5x4xf32>) -> tensor<6x4xf32> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 0> {ops = ["scatter_nd"]} : (tensor<6x4xf32>, tensor<5x1xi64>, tensor<5x4xf32>) -> tensor<6x4xf32>
    return %0 : tensor<6x4xf32>
  }
  func.func @"scatter_nd$bf16_i32_pairs_none"(%a0: tensor<4x3x2xbf16>, %a1: tensor<3x2xi32>, %a2: tensor<3x2xbf16>) -> tensor<4x3x2xbf16> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 0> {ops = ["scatter_nd"]} : (tensor<4x3x2xbf16>, tensor<3x2xi32>, tensor<3x2xbf16>) -> tensor<4x3x2xbf16>
    return %0 : tensor<4x3x2xbf16>
  }
  func.func @"scatter_nd$i64_i32_none"(%a0: tensor<5xi64>, %a1: tensor<6x1xi32>, %a2: tensor<6xi64>) -> tensor<5xi64> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 0> {ops = ["scatter_nd"]} : (tensor<5xi64>, tensor<6x1xi32>, tensor<6xi64>) -> tensor<5xi64>
    return %0 : tensor<5xi64>
  }
  func.func @"scatter_nd$f32_rows_add"(%a0: tensor<6x4xf32>, %a1: tensor<5x1xi64>, %a2: tensor<5x4xf32>) -> tensor<6x4xf32> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 1> {ops = ["scatter_nd"]} : (tensor<6x4xf32>, tensor<5x1xi64>, tensor<5x4xf32>) -> tensor<6x4xf32>
    return %0 : tensor<6x4xf32>
  }
  func.func @"scatter_nd$bf16_i32_pairs_add"(%a0: tensor<4x3x2xbf16>, %a1: tensor<3x2xi32>, %a2: tensor<3x2xbf16>) -> tensor<4x3x2xbf16> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 1> {ops = ["scatter_nd"]} : (tensor<4x3x2xbf16>, tensor<3x2xi32>, tensor<3x2xbf16>) -> tensor<4x3x2xbf16>
    return %0 : tensor<4x3x2xbf16>
  }
  func.func @"scatter_nd$i64_i32_add"(%a0: tensor<5xi64>, %a1: tensor<6x1xi32>, %a2: tensor<6xi64>) -> tensor<5xi64> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 1> {ops = ["scatter_nd"]} : (tensor<5xi64>, tensor<6x1xi32>, tensor<6xi64>) -> tensor<5xi64>
    return %0 : tensor<5xi64>
  }
  func.func @"scatter_nd$f32_rows_mul"(%a0: tensor<6x4xf32>, %a1: tensor<5x1xi64>, %a2: tensor<5x4xf32>) -> tensor<6x4xf32> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 2> {ops = ["scatter_nd"]} : (tensor<6x4xf32>, tensor<5x1xi64>, tensor<5x4xf32>) -> tensor<6x4xf32>
    return %0 : tensor<6x4xf32>
  }
  func.func @"scatter_nd$bf16_i32_pairs_mul"(%a0: tensor<4x3x2xbf16>, %a1: tensor<3x2xi32>, %a2: tensor<3x2xbf16>) -> tensor<4x3x2xbf16> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 2> {ops = ["scatter_nd"]} : (tensor<4x3x2xbf16>, tensor<3x2xi32>, tensor<3x2xbf16>) -> tensor<4x3x2xbf16>
    return %0 : tensor<4x3x2xbf16>
  }
  func.func @"scatter_nd$i64_i32_mul"(%a0: tensor<5xi64>, %a1: tensor<6x1xi32>, %a2: tensor<6xi64>) -> tensor<5xi64> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 2> {ops = ["scatter_nd"]} : (tensor<5xi64>, tensor<6x1xi32>, tensor<6xi64>) -> tensor<5xi64>
    return %0 : tensor<5xi64>
  }
  func.func @"scatter_nd$f32_rows_max"(%a0: tensor<6x4xf32>, %a1: tensor<5x1xi64>, %a2: tensor<5x4xf32>) -> tensor<6x4xf32> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 3> {ops = ["scatter_nd"]} : (tensor<6x4xf32>, tensor<5x1xi64>, tensor<5x4xf32>) -> tensor<6x4xf32>
    return %0 : tensor<6x4xf32>
  }
  func.func @"scatter_nd$bf16_i32_pairs_max"(%a0: tensor<4x3x2xbf16>, %a1: tensor<3x2xi32>, %a2: tensor<3x2xbf16>) -> tensor<4x3x2xbf16> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 3> {ops = ["scatter_nd"]} : (tensor<4x3x2xbf16>, tensor<3x2xi32>, tensor<3x2xbf16>) -> tensor<4x3x2xbf16>
    return %0 : tensor<4x3x2xbf16>
  }
  func.func @"scatter_nd$i64_i32_max"(%a0: tensor<5xi64>, %a1: tensor<6x1xi32>, %a2: tensor<6xi64>) -> tensor<5xi64> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 3> {ops = ["scatter_nd"]} : (tensor<5xi64>, tensor<6x1xi32>, tensor<6xi64>) -> tensor<5xi64>
    return %0 : tensor<5xi64>
  }
  func.func @"scatter_nd$f32_rows_min"(%a0: tensor<6x4xf32>, %a1: tensor<5x1xi64>, %a2: tensor<5x4xf32>) -> tensor<6x4xf32> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 4> {ops = ["scatter_nd"]} : (tensor<6x4xf32>, tensor<5x1xi64>, tensor<5x4xf32>) -> tensor<6x4xf32>
    return %0 : tensor<6x4xf32>
  }
  func.func @"scatter_nd$bf16_i32_pairs_min"(%a0: tensor<4x3x2xbf16>, %a1: tensor<3x2xi32>, %a2: tensor<3x2xbf16>) -> tensor<4x3x2xbf16> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 4> {ops = ["scatter_nd"]} : (tensor<4x3x2xbf16>, tensor<3x2xi32>, tensor<3x2xbf16>) -> tensor<4x3x2xbf16>
    return %0 : tensor<4x3x2xbf16>
  }
  func.func @"scatter_nd$i64_i32_min"(%a0: tensor<5xi64>, %a1: tensor<6x1xi32>, %a2: tensor<6xi64>) -> tensor<5xi64> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 4> {ops = ["scatter_nd"]} : (tensor<5xi64>, tensor<6x1xi32>, tensor<6xi64>) -> tensor<5xi64>
    return %0 : tensor<5xi64>
  }
  func.func @"scatter_nd$f16_batched_add"(%a0: tensor<5x3xf16>, %a1: tensor<2x3x2xi64>, %a2: tensor<2x3xf16>) -> tensor<5x3xf16> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 1> {ops = ["scatter_nd"]} : (tensor<5x3xf16>, tensor<2x3x2xi64>, tensor<2x3xf16>) -> tensor<5x3xf16>
    return %0 : tensor<5x3xf16>
  }
  func.func @"scatter_nd$f16_batched_mul"(%a0: tensor<5x3xf16>, %a1: tensor<2x3x2xi64>, %a2: tensor<2x3xf16>) -> tensor<5x3xf16> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 2> {ops = ["scatter_nd"]} : (tensor<5x3xf16>, tensor<2x3x2xi64>, tensor<2x3xf16>) -> tensor<5x3xf16>
    return %0 : tensor<5x3xf16>
  }
  func.func @"scatter_nd$f16_batched_min"(%a0: tensor<5x3xf16>, %a1: tensor<2x3x2xi64>, %a2: tensor<2x3xf16>) -> tensor<5x3xf16> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 4> {ops = ["scatter_nd"]} : (tensor<5x3xf16>, tensor<2x3x2xi64>, tensor<2x3xf16>) -> tensor<5x3xf16>
    return %0 : tensor<5x3xf16>
  }
  func.func @"scatter_nd$i32_rows_none"(%a0: tensor<6x2xi32>, %a1: tensor<4x1xi64>, %a2: tensor<4x2xi32>) -> tensor<6x2xi32> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 0> {ops = ["scatter_nd"]} : (tensor<6x2xi32>, tensor<4x1xi64>, tensor<4x2xi32>) -> tensor<6x2xi32>
    return %0 : tensor<6x2xi32>
  }
  func.func @"scatter_nd$i32_rows_add"(%a0: tensor<6x2xi32>, %a1: tensor<4x1xi64>, %a2: tensor<4x2xi32>) -> tensor<6x2xi32> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 1> {ops = ["scatter_nd"]} : (tensor<6x2xi32>, tensor<4x1xi64>, tensor<4x2xi32>) -> tensor<6x2xi32>
    return %0 : tensor<6x2xi32>
  }
  func.func @"scatter_nd$i32_rows_mul"(%a0: tensor<6x2xi32>, %a1: tensor<4x1xi64>, %a2: tensor<4x2xi32>) -> tensor<6x2xi32> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 2> {ops = ["scatter_nd"]} : (tensor<6x2xi32>, tensor<4x1xi64>, tensor<4x2xi32>) -> tensor<6x2xi32>
    return %0 : tensor<6x2xi32>
  }
  func.func @"scatter_nd$f32_elements_add"(%a0: tensor<3x4x5xf32>, %a1: tensor<4x3xi64>, %a2: tensor<4xf32>) -> tensor<3x4x5xf32> {
    %0 = mpk.call scatter_nd(%a0, %a1, %a2) #mpk.scatter_nd<reduction = 1> {ops = ["scatter_nd"]} : (tensor<3x4x5xf32>, tensor<4x3xi64>, tensor<4xf32>) -> tensor<3x4x5xf32>
    return %0 : tensor<3x4x5xf32>
  }
}
