//===- ModuleCudaTest.cpp - CUDA code in modules (compile --arch) ---------===//
//
// compiler::buildModule with CUDA options: the module holds one NVRTC
// program (Module.cuda) and each kernel its launch (Kernel.cuda), read back
// through the schema; a second build from the same cache calls NVRTC zero
// times and gives the same bytes; NVRTC's rejection names the kernel.
//
//===----------------------------------------------------------------------===//
#include "codegen/Cuda/NvrtcCompiler.h"
#include "compiler/Compile/Compile.h"
#include "runtime/schema/module_generated.h"

#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace {

using namespace mlir;
namespace sc = mixprec::schema;

/// FP8 linear then softmax (tests/lit/cli/Inputs/batch1-linear.mlir): a
/// kernel that stores an amax (zeroed before its launch), a GEMM, a row
/// kernel.
constexpr const char *kGraph = R"mlir(
func.func @main(%x: tensor<1x4x16xf32> {mp.name = "x"}) -> (tensor<1x4x16xf32> {mp.name = "y"}) {
  %w = mp.constant dense<0.25> : tensor<16x16xf32> loc("w")
  %b = mp.constant dense<0.5> : tensor<16xf32> loc("b")
  %h = mp.linear %x, %w, %b {transpose_weight = true} : (tensor<1x4x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<1x4x16xf32> loc("fc")
  %y = mp.softmax %h {axis = 2 : i64} : tensor<1x4x16xf32> -> tensor<1x4x16xf32> loc("sm")
  return %y : tensor<1x4x16xf32>
}
)mlir";

class ModuleCudaTest : public ::testing::Test {
protected:
  void SetUp() override {
    cacheDir = ::testing::TempDir() + "mixprec_module_cuda_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(cacheDir);
    mixprec::compiler::prepareContext(context);
  }
  void TearDown() override { std::filesystem::remove_all(cacheDir); }

  /// Compiles kGraph at fp8 into a module with CUDA code for sm_90; fails
  /// the test (with the error) when it does not compile.
  std::vector<uint8_t> build(mixprec::codegen::CudaCompileStats &stats, int breakKernel = -1,
                             std::string *error = nullptr) {
    std::string first;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (first.empty())
        first = mixprec::compiler::formatDiagnostic(diag); // as mixprec prints it
      return success();
    });
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kGraph, &context);
    EXPECT_TRUE(module);
    mixprec::passes::PrecisionPipelineOptions precision;
    precision.precision = mixprec::passes::Precision::FP8;
    EXPECT_TRUE(succeeded(mixprec::compiler::compilePrecision(
        *module, precision, mixprec::compiler::ExistingPlan::Refuse)));
    mixprec::codegen::CudaCompileOptions cuda;
    cuda.smVersion = 90;
    cuda.cacheDirectory = cacheDir;
    cuda.breakKernel = breakKernel;
    cuda.warn = [](const std::string &w) { ADD_FAILURE() << "warning: " << w; };
    mixprec::codegen::ModuleWriteOptions options;
    options.producer = "module_cuda_test";
    mixprec::codegen::ModuleStats moduleStats;
    FailureOr<mixprec::codegen::ModuleImage> image = mixprec::compiler::buildModule(
        *module, "m.mpk.weights", options, moduleStats, &cuda, &stats);
    if (error)
      *error = first;
    else
      EXPECT_TRUE(succeeded(image)) << first;
    return succeeded(image) ? image->module : std::vector<uint8_t>();
  }

  MLIRContext context;
  std::string cacheDir;
};

TEST_F(ModuleCudaTest, KernelsCarryLaunchesAndTheModuleItsProgram) {
  mixprec::codegen::CudaCompileStats stats;
  std::vector<uint8_t> bytes = build(stats);
  ASSERT_FALSE(bytes.empty());
  const sc::Module *root = sc::GetModule(bytes.data());
  const sc::CudaProgram *cuda = root->cuda();
  ASSERT_NE(cuda, nullptr);
  EXPECT_EQ(cuda->sm_version(), 90);
  EXPECT_EQ(cuda->nvrtc_version()->str(), mixprec::codegen::nvrtcVersionString());
  const std::string ptx = cuda->ptx()->str(), source = cuda->source()->str();
  EXPECT_NE(ptx.find(".target sm_90"), std::string::npos);
  ASSERT_NE(cuda->cubin(), nullptr);
  ASSERT_GE(cuda->cubin()->size(), 4u);
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(cuda->cubin()->data()), 4), "\x7f" "ELF");
  // 64-byte aligned from the buffer's start (the runtime loads modules at
  // 64-byte aligned addresses).
  EXPECT_EQ((cuda->cubin()->data() - bytes.data()) % 64, 0)
      << "the CUBIN is not 64-byte aligned in the module";

  ASSERT_NE(root->kernels(), nullptr);
  ASSERT_EQ(root->kernels()->size(), 3u);
  EXPECT_EQ(stats.kernels, 3);
  int zeroedKernels = 0;
  for (const sc::Kernel *k : *root->kernels()) {
    const sc::CudaLaunch *launch = k->cuda();
    ASSERT_NE(launch, nullptr) << k->name()->str();
    const std::string function = launch->function()->str();
    EXPECT_NE(ptx.find(".visible .entry " + function + "("), std::string::npos) << function;
    EXPECT_NE(source.find("extern \"C\" __global__ void " + function + "("), std::string::npos);
    EXPECT_GT(launch->grid_size(), 0);
    EXPECT_EQ(launch->block_size() % 32, 0);
    // Parameters: the program's Load tensors in order, then its Stores'.
    std::vector<int32_t> loads, stores, amaxStores;
    for (const sc::Instruction *inst : *k->program()) {
      if (inst->opcode() == sc::OpCode::Load)
        loads.push_back(inst->tensor());
      if (inst->opcode() == sc::OpCode::Store) {
        stores.push_back(inst->tensor());
        if (k->program()->Get(inst->operands()->Get(0))->opcode() == sc::OpCode::Amax)
          amaxStores.push_back(inst->tensor());
      }
    }
    std::vector<int32_t> expected = loads;
    expected.insert(expected.end(), stores.begin(), stores.end());
    ASSERT_NE(launch->params(), nullptr);
    EXPECT_EQ(std::vector<int32_t>(launch->params()->begin(), launch->params()->end()), expected)
        << function;
    std::vector<int32_t> zeroed;
    if (launch->zeroed())
      zeroed.assign(launch->zeroed()->begin(), launch->zeroed()->end());
    EXPECT_EQ(zeroed, amaxStores) << function;
    zeroedKernels += !zeroed.empty();
    EXPECT_EQ(launch->row_kernel(), k->row_dims() > 0) << function;
  }
  EXPECT_EQ(zeroedKernels, 1) << "the fp8 plan's amax kernel";
}

TEST_F(ModuleCudaTest, SecondBuildCompilesNothingAndIsIdentical) {
  mixprec::codegen::CudaCompileStats first, second;
  std::vector<uint8_t> a = build(first);
  EXPECT_EQ(first.nvrtcCompiles, 1);
  EXPECT_EQ(first.cacheHits, 0);
  std::vector<uint8_t> b = build(second);
  EXPECT_EQ(second.nvrtcCompiles, 0);
  EXPECT_EQ(second.cacheHits, 1);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

TEST_F(ModuleCudaTest, RejectedKernelIsNamedWithItsLine) {
  mixprec::codegen::CudaCompileStats stats;
  std::string error;
  EXPECT_TRUE(build(stats, /*breakKernel=*/1, &error).empty());
  EXPECT_NE(error.find("NVRTC failed"), std::string::npos) << error;
  // At the kernel's op: the node it was fused from.
  EXPECT_EQ(error.rfind("fc: mp_main.cu: ", 0), 0u) << error;
  EXPECT_NE(error.find("in kernel 'mp_main_k1_fc'"), std::string::npos) << error;
  EXPECT_NE(error.find("is 'mp_injected_error = 1;"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

} // namespace
