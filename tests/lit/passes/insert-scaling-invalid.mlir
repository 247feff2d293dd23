// RUN: mixprec-opt --verify-diagnostics --mp-insert-scaling=scaling=static %s
// RUN: not mixprec-opt --mp-insert-scaling=scaling=later %s 2>&1 | FileCheck %s --check-prefix=MODE
// The enum options are checked when the pipeline is parsed:
// MODE: for the --scaling option: Cannot find option named 'later'!
// RUN: not mixprec-opt --mp-insert-scaling=format=e3m4 %s 2>&1 | FileCheck %s --check-prefix=FORMAT
// FORMAT: for the --format option: Cannot find option named 'e3m4'!
// RUN: not mixprec-opt --mp-insert-scaling=amax-algo=mean %s 2>&1 | FileCheck %s --check-prefix=ALGO
// ALGO: for the --amax-algo option: Cannot find option named 'mean'!

// Static scaling without calibration evidence for the activation.
func.func @fp8$static_without_calibration(%x: tensor<4x2xf32>) -> tensor<4x2xbf16> {
  %w = mp.constant dense<1.0> : tensor<2x2xf32>
  // expected-error @+1 {{scaling=static needs a calibrated amax for every FP8 GEMM input}}
  %0 = mp.matmul %x, %w {mp.precision = f8E4M3FN} : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xbf16>
  return %0 : tensor<4x2xbf16>
}
