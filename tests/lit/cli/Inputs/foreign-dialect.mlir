// A function of another dialect (arith): MLIR bytecode of it, written by
// mlir-opt, is not an mp graph (readable-ir.test).
func.func @main(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  return %0 : i32
}
