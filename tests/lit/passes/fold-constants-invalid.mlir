// RUN: mixprec-opt --verify-diagnostics --mp-fold-constants %s

// A constant index out of range would fail at run time: folding says so
// at the op.
func.func @gather$index_out_of_range() -> tensor<1xi64> {
  %data = mp.constant dense<[1, 2, 3]> : tensor<3xi64>
  %idx = mp.constant dense<5> : tensor<1xi64>
  // expected-error @+1 {{cannot be folded: an index is out of range for dimension 0 of size 3}}
  %0 = mp.gather %data, %idx {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  return %0 : tensor<1xi64>
}
