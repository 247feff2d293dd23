// RUN: mixprec-opt --split-input-file --verify-diagnostics --mp-assign-precision="precision=bf16 force=relu:fp8" %s
// RUN: not mixprec-opt --mp-assign-precision="precision=fp9" %s 2>&1 | FileCheck %s --check-prefix=PRECISION
// RUN: not mixprec-opt --mp-assign-precision="precision=bf16 force=nothing_here:fp16" %s 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not mixprec-opt --mp-assign-precision="precision=bf16 force=fc:fp64" %s 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not mixprec-opt --mp-assign-precision="precision=bf16 force=fc" %s 2>&1 | FileCheck %s --check-prefix=FORM
// RUN: not mixprec-opt --mp-assign-precision="precision=bf16 keep-fp32=lstm" %s 2>&1 | FileCheck %s --check-prefix=KEEP
// RUN: not mixprec-opt --mp-assign-precision="policy=%S/Inputs/policy-unknown-key.json" %s 2>&1 | FileCheck %s --check-prefix=KEY
// RUN: not mixprec-opt --mp-assign-precision="policy=%S/Inputs/policy-broken.json" %s 2>&1 | FileCheck %s --check-prefix=PARSE
// A key holding a newline (found by tests/fuzz's policy fuzzer) stays on one line.
// RUN: not mixprec-opt --mp-assign-precision="policy=%S/Inputs/policy-newline-key.json" %s 2>&1 | FileCheck %s --check-prefix=NEWLINE
// RUN: not mixprec-opt --mp-assign-precision="policy=%S/Inputs/no-such-policy.json" %s 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not mixprec-opt --mp-assign-precision="precision=fp16 overflow-fallback=fp8" %s 2>&1 | FileCheck %s --check-prefix=FALLBACK
// RUN: not mixprec-opt --mp-assign-precision="precision=fp8 force=head:fp8" %S/Inputs/fp8-unaligned-head.mlir 2>&1 | FileCheck %s --check-prefix=UNALIGNED
// RUN: mixprec-opt --mp-assign-precision="precision=fp8" %S/Inputs/fp8-unaligned-head.mlir | FileCheck %s --check-prefix=KEPT
// The JSON parser recurses per level: deep nesting is refused before parsing
// (50,000 levels overflowed the stack); 64 levels still reach the parser.
// RUN: %python -c "print('[' * 50000 + ']' * 50000)" > %t.deep.json
// RUN: not mixprec-opt --mp-assign-precision="policy=%t.deep.json" %s 2>&1 | FileCheck %s --check-prefix=DEEP
// RUN: %python -c "print('[' * 65 + ']' * 65)" > %t.65.json
// RUN: not mixprec-opt --mp-assign-precision="policy=%t.65.json" %s 2>&1 | FileCheck %s --check-prefix=DEEP65
// RUN: %python -c "print('{\"keep_fp32\": [\"[{\"], \"force\": {\"x\": ' + '[' * 62 + ']' * 62 + '}}')" > %t.64.json
// RUN: not mixprec-opt --mp-assign-precision="policy=%t.64.json" %s 2>&1 | FileCheck %s --check-prefix=DEEP64
// Only regular files are read: /dev/zero never ends, a FIFO blocks.
// RUN: not mixprec-opt --mp-assign-precision="policy=/dev/zero" %s 2>&1 | FileCheck %s --check-prefix=DEVICE
// RUN: not mixprec-opt --mp-assign-precision="policy=%S/Inputs" %s 2>&1 | FileCheck %s --check-prefix=FOLDER
// RUN: rm -f %t.fifo
// RUN: %python -c "import os, sys; os.mkfifo(sys.argv[1])" %t.fifo
// RUN: not mixprec-opt --mp-assign-precision="policy=%t.fifo" %s 2>&1 | FileCheck %s --check-prefix=FIFO

// PRECISION: for the --precision option: Cannot find option named 'fp9'!
// NOMATCH: error: override 'force=nothing_here:fp16' matches no op type or op name in @main
// DTYPE: error: force entry 'fc:fp64': unknown dtype 'fp64' (use fp32, tf32, bf16, fp16 or fp8)
// FORM: error: force entry 'fc' must be NAME:DTYPE
// KEEP: error: override 'keep-fp32=lstm' matches no op type or op name in @main
// KEY: error: policy file '{{.*}}policy-unknown-key.json': unknown key 'loss_scale'
// PARSE: error: policy file '{{.*}}policy-broken.json' does not parse
// NEWLINE: error: policy file '{{.*}}policy-newline-key.json': unknown key 'fp16_margi\0A' (known:
// MISSING: error: policy file '{{.*}}no-such-policy.json': cannot read: no such file
// FALLBACK: for the --overflow-fallback option: Cannot find option named 'fp8'!
// UNALIGNED: error: loc("head"): cannot run in 'f8E4M3FN' (override:force=head:fp8): an FP8 GEMM needs k and n multiples of 16 (cuBLASLt's FP8 GEMMs, as Transformer Engine's), got 'tensor<4x16xf32>' -> 'tensor<4x10xf32>'
// KEPT: mp.linear {{.*}}mp.precision = bf16, mp.reason = "policy:lowp(fp8-unaligned)"
// DEEP: error: policy file '{{.*}}deep.json': JSON nested deeper than 64 levels
// DEEP65: error: policy file '{{.*}}65.json': JSON nested deeper than 64 levels
// DEEP64: error: policy file '{{.*}}64.json': key 'force' must be an object of strings
// DEVICE: error: policy file '/dev/zero': cannot read: not a regular file (a character device)
// FOLDER: error: policy file '{{.*}}Inputs': cannot read: not a regular file (a folder)
// FIFO: error: policy file '{{.*}}.fifo': cannot read: not a regular file (a FIFO)

// FP8 asked of an op that has no FP8 GEMM.
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{cannot run in 'f8E4M3FN' (override:force=relu:fp8): only linear layers and matmuls by a 2-D constant weight have FP8 GEMMs}}
  %0 = mp.relu %x : tensor<4x8xf32>
  %1 = mp.add %0, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32> loc("fc")
  return %1 : tensor<4x8xf32>
}
