// RUN: mixprec-opt --mp-fuse --mp-lower-to-kernels %s | mixprec-translate --mpk-to-cuda | FileCheck %s
func.func @ln(%x: tensor<2x4x16xbf16>, %g: tensor<4x16xbf16>, %b: tensor<4x16xbf16>) -> tensor<2x4x16xbf16> {
  %0 = mp.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<2x4x16xbf16> loc("ln")
  return %0 : tensor<2x4x16xbf16>
}
