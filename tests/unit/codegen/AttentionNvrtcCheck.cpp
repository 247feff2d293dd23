//===- AttentionNvrtcCheck.cpp - attention kernels through NVRTC -----------===//
//
// cuda_attention_nvrtc: the forward and backward attention kernels
// (AttentionKernel.h), head dims 64 and 128, causal or not: BF16, FP16 and
// FP8 (with descales) operands at Sq = Sk = 4096, and these and FP32 at a
// small odd size with Sq != Sk and a bias; compiled by NVRTC for sm_80 and
// sm_90 with ptxas's resource report. Fails (exit 1, one line per problem)
// when NVRTC rejects a kernel, when ptxas reports spills, a stack frame or
// local memory, or more than 48 KB of static shared memory, or reports
// nothing to check. No GPU is needed.
//
//===----------------------------------------------------------------------===//
#include "codegen/Cuda/AttentionKernel.h"
#include "codegen/Cuda/NvrtcCompiler.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

namespace {

/// The sum of N over every "N bytes <key>" (or "N bytes <key>" after
/// "Used ... registers,") of ptxas's -v log; false when `key` never occurs.
bool ptxasBytes(const std::string &log, const std::string &key, int64_t &total) {
  const std::regex pattern("([0-9]+) bytes " + key);
  bool seen = false;
  total = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    total = std::max<int64_t>(total, std::atoll((*it)[1].str().c_str()));
    seen = true;
  }
  return seen;
}

/// Compiles `kernel` for `sm`; prints each problem, returns their count.
int check(const mixprec::codegen::CudaKernel &kernel, int sm) {
  mixprec::codegen::NvrtcOptions options;
  options.smVersion = sm;
  options.extraOptions = mixprec::codegen::cudaEmitterNvrtcOptions();
  options.extraOptions.push_back("--ptxas-options=-v");
  mixprec::codegen::NvrtcResult result;
  std::string error;
  const std::string where = kernel.name + " (sm_" + std::to_string(sm) + ")";
  if (!mixprec::codegen::compileWithNvrtc(kernel.name + ".cu",
                                          mixprec::codegen::cudaPrelude() + kernel.source, options,
                                          result, error)) {
    std::fprintf(stderr, "%s: %s\n", where.c_str(), error.c_str());
    return 1;
  }
  int64_t spillStores = 0, spillLoads = 0, stack = 0, lmem = 0, smem = 0;
  if (!ptxasBytes(result.log, "spill stores", spillStores) ||
      !ptxasBytes(result.log, "spill loads", spillLoads) ||
      !ptxasBytes(result.log, "stack frame", stack) || !ptxasBytes(result.log, "smem", smem)) {
    std::fprintf(stderr, "%s: ptxas reported no resource usage; log:\n%s\n", where.c_str(),
                 result.log.c_str());
    return 1;
  }
  ptxasBytes(result.log, "lmem", lmem);
  const std::regex regs("Used ([0-9]+) registers");
  std::smatch match;
  const std::string registers =
      std::regex_search(result.log, match, regs) ? match[1].str() : std::string("?");
  std::printf("%s: %s registers, %lld bytes smem\n", where.c_str(), registers.c_str(),
              (long long)smem);
  std::fflush(stdout);
  if (spillStores || spillLoads || stack || lmem || smem > 48 * 1024) {
    std::fprintf(stderr,
                 "%s: %lld + %lld bytes spilled, %lld bytes stack frame, %lld bytes lmem, %lld "
                 "bytes smem\n",
                 where.c_str(), (long long)spillStores, (long long)spillLoads, (long long)stack,
                 (long long)lmem, (long long)smem);
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  // An optional argument keeps the kernels whose name contains it.
  const std::string only = argc > 1 ? argv[1] : "";
  mlir::MLIRContext context;
  mlir::Builder builder(&context);
  struct DType {
    const char *name;
    mlir::Type operand, out;
  };
  const DType dtypes[] = {
      {"bf16", builder.getBF16Type(), builder.getBF16Type()},
      {"f16", builder.getF16Type(), builder.getF16Type()},
      {"fp8", mlir::Float8E4M3FNType::get(&context), builder.getBF16Type()},
      {"f32", builder.getF32Type(), builder.getF32Type()},
  };
  int problems = 0, kernels = 0;
  for (const DType &dtype : dtypes)
    for (int64_t dim : {64, 128})
      for (bool causal : {false, true})
        for (int64_t seq : {4096, 77}) {
          // FP32 (no tensor cores, the correctness path) at the small size
          // only: the sizes are constants of the same code, and its
          // shuffled products take ptxas seconds per kernel.
          if (dtype.operand.isF32() && seq == 4096)
            continue;
          mixprec::codegen::AttentionKernelSpec spec;
          spec.batch = 2;
          spec.heads = 8;
          spec.seqQ = spec.seqK = seq;
          if (seq != 4096)
            spec.seqK = seq + 50; // seqQ != seqK, neither a multiple of a tile
          spec.headDim = spec.valueDim = dim;
          spec.scale = 1.0 / std::sqrt(double(dim));
          spec.causal = causal;
          spec.operandType = dtype.operand;
          spec.outType = dtype.out;
          spec.fp8Descales = mlir::isa<mlir::Float8E4M3FNType>(dtype.operand);
          // The small size with a bias broadcast over batch and heads.
          spec.hasBias = seq != 4096;
          spec.biasType = builder.getF32Type();
          spec.biasStrides = {0, 0, spec.seqK, 1};
          const std::string name = std::string("attn_") + dtype.name + "_d" + std::to_string(dim) +
                                   (causal ? "_causal" : "") + "_s" + std::to_string(seq);
          std::string why;
          for (bool backward : {false, true}) {
            std::optional<mixprec::codegen::CudaKernel> kernel =
                backward ? mixprec::codegen::emitAttentionBackward(spec, name + "_bwd", &why)
                         : mixprec::codegen::emitAttentionForward(spec, name + "_fwd", &why);
            if (!kernel) {
              std::fprintf(stderr, "%s: refused: %s\n", name.c_str(), why.c_str());
              ++problems;
              continue;
            }
            if (kernel->name.find(only) == std::string::npos)
              continue;
            ++kernels;
            for (int sm : {80, 90})
              problems += check(*kernel, sm);
          }
        }
  std::printf("%d attention kernels compiled for sm_80 and sm_90: %d problems\n", kernels,
              problems);
  return problems || kernels == 0 ? 1 : 0;
}
