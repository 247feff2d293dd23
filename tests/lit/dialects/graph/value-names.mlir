// RUN: mixprec-opt %s | FileCheck %s
// RUN: mixprec-opt %s --mlir-print-debuginfo | mixprec-opt | FileCheck %s
// RUN: mixprec-opt %s --emit-bytecode | mixprec-opt | FileCheck %s

// mp results print named after the node name in their location (the ONNX
// importer puts each node's name there): made valid SSA names that parse
// back, duplicates kept apart by MLIR's suffixes, numbered when no name
// is left (an empty or all-punctuation name, a FILE:LINE:COL location).
// Graph inputs carry their names as mp.name attributes; mixprec-opt prints
// them %argN, mixprec names them after the inputs (cli/argument-names.test).
// The names survive printing with locations (as mixprec prints) and
// re-parsing, and bytecode.

// CHECK-LABEL: func.func @names(%arg0: tensor<4xf32> {mp.name = "x"}, %arg1: tensor<2x8xf32>)
// CHECK-NEXT: %fc1 = mp.relu %arg0 : tensor<4xf32>
// A second op of the same node (a cast the passes insert has its op's location).
// CHECK-NEXT: %fc1_0 = mp.relu %fc1 : tensor<4xf32>
// Exported graphs name nodes by module path: the slashes and spaces go.
// CHECK-NEXT: %h.3_attn_Mat_Mul = mp.relu %fc1_0 : tensor<4xf32>
// A leading digit would read as a number.
// CHECK-NEXT: %_1abc = mp.relu %h.3_attn_Mat_Mul : tensor<4xf32>
// An empty name, and one of nothing but bytes outside [A-Za-z0-9_.$-].
// CHECK-NEXT: %0 = mp.relu %_1abc : tensor<4xf32>
// CHECK-NEXT: %1 = mp.relu %0 : tensor<4xf32>
// A name another value already has.
// CHECK-NEXT: %arg0_1 = mp.relu %1 : tensor<4xf32>
// CHECK-NEXT: %a.b$c-d = mp.relu %arg0_1 : tensor<4xf32>
// A fusion's location: its first node.
// CHECK-NEXT: %layer3_attn_scores = mp.relu %a.b$c-d : tensor<4xf32>
// CHECK-NEXT: %2 = mp.relu %layer3_attn_scores : tensor<4xf32>
// A node named like a suffixed duplicate.
// CHECK-NEXT: %fc1_0_2 = mp.relu %2 : tensor<4xf32>
// CHECK-NEXT: %_0 = mp.relu %fc1_0_2 : tensor<4xf32>
// Several results: the names ODS gives TopK's results.
// CHECK-NEXT: %values, %indices = mp.topk %arg1
// CHECK-NEXT: return %_0, %values, %indices
func.func @names(%x: tensor<4xf32> {mp.name = "x"}, %k: tensor<2x8xf32>) -> (tensor<4xf32>, tensor<2x3xf32>, tensor<2x3xi64>) {
  %0 = mp.relu %x : tensor<4xf32> loc("fc1")
  %1 = mp.relu %0 : tensor<4xf32> loc("fc1")
  %2 = mp.relu %1 : tensor<4xf32> loc("/h.3/attn/Mat Mul")
  %3 = mp.relu %2 : tensor<4xf32> loc("1abc")
  %4 = mp.relu %3 : tensor<4xf32> loc("")
  %5 = mp.relu %4 : tensor<4xf32> loc("\C3\A9\22%")
  %6 = mp.relu %5 : tensor<4xf32> loc("arg0")
  %7 = mp.relu %6 : tensor<4xf32> loc("a.b$c-d")
  %8 = mp.relu %7 : tensor<4xf32> loc(fused["layer3_attn_scores", "other"])
  %9 = mp.relu %8 : tensor<4xf32> loc("f.mlir":3:4)
  %10 = mp.relu %9 : tensor<4xf32> loc("fc1_0")
  %11 = mp.relu %10 : tensor<4xf32> loc("0")
  %v, %i = mp.topk %k {axis = 1 : i64, k = 3 : i64} : tensor<2x8xf32> -> (tensor<2x3xf32>, tensor<2x3xi64>) loc("TopK")
  return %11, %v, %i : tensor<4xf32>, tensor<2x3xf32>, tensor<2x3xi64>
}
