// RUN: mixprec-opt --verify-diagnostics --mp-insert-scaling=scaling=static %s
// RUN: not mixprec-opt --mp-insert-scaling=scaling=later %s 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: error: scaling must be current, delayed, static or auto, got 'later'
// RUN: not mixprec-opt --mp-insert-scaling=format=e3m4 %s 2>&1 | FileCheck %s --check-prefix=FORMAT
// FORMAT: error: FP8 format must be hybrid or e4m3, got 'e3m4'
// RUN: not mixprec-opt --mp-insert-scaling=amax-algo=mean %s 2>&1 | FileCheck %s --check-prefix=ALGO
// ALGO: error: amax-algo must be max or most-recent, got 'mean'

// Static scaling without calibration evidence for the activation.
func.func @fp8$static_without_calibration(%x: tensor<4x2xf32>) -> tensor<4x2xbf16> {
  %w = mp.constant dense<1.0> : tensor<2x2xf32>
  // expected-error @+1 {{scaling=static needs a calibrated amax for every FP8 GEMM input}}
  %0 = mp.matmul %x, %w {mp.precision = f8E4M3FN} : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xbf16>
  return %0 : tensor<4x2xbf16>
}
