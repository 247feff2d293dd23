//===- PrecisionOptionsTest.cpp - the generated precision pipeline options ===//
//
// PrecisionPipelineOptions (passes/Pipelines.h) is generated from the
// options of the passes it runs (Passes.td, mixprec-tblgen
// -gen-pipeline-options), which the CLI, policy files and
// --mp-precision-pipeline use. These tests check the generator: every pass
// option has a pipeline option of the same name (the scaling pass's under
// its "fp8-" prefix) with the same default, and a non-default value reaches
// the pass through buildPrecisionPipeline.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace mixprec::passes;

namespace {

/// "key=value" pairs of a printed option list ("{a=1 b=x}" or
/// "name{a=1 b=x}"); list values print as "a,b".
std::map<std::string, std::string> optionMap(llvm::StringRef printed) {
  std::map<std::string, std::string> map;
  printed = printed.drop_until([](char c) { return c == '{'; }).drop_front().drop_back();
  while (!printed.empty()) {
    auto [item, rest] = printed.split(' ');
    auto [key, value] = item.split('=');
    map[key.str()] = value.str();
    printed = rest.ltrim();
  }
  return map;
}

std::string printedPass(mlir::Pass &pass) {
  std::string s;
  llvm::raw_string_ostream os(s);
  pass.printAsTextualPipeline(os);
  return s;
}

std::string printedPipeline(const PrecisionPipelineOptions &constOptions) {
  // PassOptions::print is not const in MLIR 19.
  auto &options = const_cast<PrecisionPipelineOptions &>(constOptions);
  std::string s;
  llvm::raw_string_ostream os(s);
  options.print(os);
  return s;
}

/// Every option in `passPrinted` ("name{a=1 ...}") is a pipeline option
/// `prefix + name` with the value `pipeline` gives it.
void expectBound(llvm::StringRef passPrinted, const PrecisionPipelineOptions &pipeline,
                 llvm::StringRef prefix) {
  std::map<std::string, std::string> passOptions = optionMap(passPrinted);
  std::map<std::string, std::string> pipelineOptions = optionMap(printedPipeline(pipeline));
  ASSERT_FALSE(passOptions.empty()) << passPrinted.str();
  for (const auto &[key, value] : passOptions) {
    auto it = pipelineOptions.find(prefix.str() + key);
    ASSERT_NE(it, pipelineOptions.end())
        << "pass option '" << key << "' has no pipeline option '" << prefix.str() << key << "'";
    EXPECT_EQ(it->second, value) << "option '" << key << "'";
  }
}

/// "name{...}" of the pass `name` in the pipeline buildPrecisionPipeline
/// makes from `options` ("" if it has none).
std::string builtPass(const PrecisionPipelineOptions &options, llvm::StringRef name) {
  mlir::MLIRContext context;
  mlir::PassManager pm(&context);
  buildPrecisionPipeline(pm, options);
  std::string s;
  llvm::raw_string_ostream os(s);
  pm.printAsTextualPipeline(os);
  size_t at = s.find((name + "{").str());
  if (at == std::string::npos)
    return "";
  return s.substr(at, s.find('}', at) + 1 - at);
}

} // namespace

TEST(PrecisionOptions, PassDefaultsAreThePipelineDefaults) {
  PrecisionPipelineOptions pipeline;
  std::unique_ptr<mlir::Pass> assign = createAssignPrecisionPass();
  std::unique_ptr<mlir::Pass> scaling = createInsertScalingPass();
  expectBound(printedPass(*assign), pipeline, "");
  expectBound(printedPass(*scaling), pipeline, "fp8-");
}

TEST(PrecisionOptions, ThePipelineBindsEveryValueToItsPass) {
  PrecisionPipelineOptions pipeline;
  ASSERT_FALSE(mlir::failed(pipeline.parseFromString(
      "precision=fp16 keep-io-types=false keep-fp32=softmax,fc* force=head:fp32 "
      "policy=p.json fp16-margin=4 underflow-threshold=0.25 overflow-fallback=fp32 "
      "fp8-scaling=current fp8-margin=3 fp8-format=e4m3 fp8-amax-history=16 "
      "fp8-amax-algo=most-recent")));
  std::string assign = builtPass(pipeline, "mp-assign-precision");
  std::string scaling = builtPass(pipeline, "mp-insert-scaling");
  expectBound(assign, pipeline, "");
  expectBound(scaling, pipeline, "fp8-");
  EXPECT_EQ(optionMap(assign)["precision"], "fp16");
  EXPECT_EQ(optionMap(scaling)["margin"], "3");
  EXPECT_EQ(optionMap(scaling)["amax-history"], "16");
  EXPECT_EQ(optionMap(scaling)["amax-algo"], "most-recent");
  EXPECT_EQ(optionMap(scaling)["format"], "e4m3");
}
