//===- RoutineOptions.cpp - typed routine options to the schema ------------===//
//
// One case per options family of dialects/Kernel/IR/KernelAttrs.td, each
// filling the schema table of the same name (runtime/schema/module.fbs.in).
// The attributes' verifiers guarantee the list lengths read here.
//
//===----------------------------------------------------------------------===//
#include "codegen/RoutineOptions.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
namespace sc = mixprec::schema;

namespace mixprec::codegen {
namespace {

/// The schema's FP8 format of an f8E4M3FN or f8E5M2 type.
sc::DType fp8FormatOf(Type type) {
  return isa<Float8E5M2Type>(type) ? sc::DType::F8E5M2 : sc::DType::F8E4M3FN;
}

/// Sets the (h, w) strides, the four pads and the dilations of a 2-D
/// window table (Conv2dOptionsT, Pool2dOptionsT).
template <typename Table>
void setWindow(Table &t, ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
               ArrayRef<int64_t> dilations) {
  t.stride_h = strides[0], t.stride_w = strides[1];
  t.pad_top = pads[0], t.pad_left = pads[1], t.pad_bottom = pads[2], t.pad_right = pads[3];
  t.dilation_h = dilations[0], t.dilation_w = dilations[1];
}

} // namespace

sc::RoutineOptionsUnion serializeRoutineOptions(kernel::RoutineOptionsInterface options) {
  sc::RoutineOptionsUnion table;
  llvm::TypeSwitch<Attribute>(options)
      .Case([&](kernel::Conv2dOptionsAttr a) {
        sc::Conv2dOptionsT t;
        setWindow(t, a.getStrides(), a.getPads(), a.getDilations());
        t.groups = a.getGroups();
        t.tf32 = a.getTf32();
        table.Set(std::move(t));
      })
      .Case([&](kernel::Pool2dOptionsAttr a) {
        sc::Pool2dOptionsT t;
        t.kernel_h = a.getKernel()[0], t.kernel_w = a.getKernel()[1];
        setWindow(t, a.getStrides(), a.getPads(), a.getDilations());
        t.ceil_mode = a.getCeilMode();
        t.count_include_pad = a.getCountIncludePad();
        table.Set(std::move(t));
      })
      .Case([&](kernel::ConvOptionsAttr a) {
        sc::ConvOptionsT t;
        t.strides.assign(a.getStrides().begin(), a.getStrides().end());
        t.pads.assign(a.getPads().begin(), a.getPads().end());
        t.dilations.assign(a.getDilations().begin(), a.getDilations().end());
        t.groups = a.getGroups();
        t.tf32 = a.getTf32();
        t.output_padding.assign(a.getOutputPadding().begin(), a.getOutputPadding().end());
        table.Set(std::move(t));
      })
      .Case([&](kernel::PoolOptionsAttr a) {
        sc::PoolOptionsT t;
        t.kernel.assign(a.getKernel().begin(), a.getKernel().end());
        t.strides.assign(a.getStrides().begin(), a.getStrides().end());
        t.pads.assign(a.getPads().begin(), a.getPads().end());
        t.dilations.assign(a.getDilations().begin(), a.getDilations().end());
        t.ceil_mode = a.getCeilMode();
        t.count_include_pad = a.getCountIncludePad();
        t.storage_order = a.getStorageOrder();
        table.Set(std::move(t));
      })
      .Case([&](kernel::TransposeOptionsAttr a) {
        sc::TransposeOptionsT t;
        t.perm.assign(a.getPerm().begin(), a.getPerm().end());
        table.Set(std::move(t));
      })
      .Case([&](kernel::SliceOptionsAttr a) {
        sc::SliceOptionsT t;
        t.starts.assign(a.getStarts().begin(), a.getStarts().end());
        t.steps.assign(a.getSteps().begin(), a.getSteps().end());
        table.Set(std::move(t));
      })
      .Case([&](kernel::AxisOptionsAttr a) {
        sc::AxisOptionsT t;
        t.axis = a.getAxis();
        table.Set(std::move(t));
      })
      .Case([&](kernel::NormOptionsAttr a) {
        sc::NormOptionsT t;
        t.axis = a.getAxis();
        t.epsilon = a.getEpsilon().convertToFloat();
        table.Set(std::move(t));
      })
      .Case([&](kernel::BatchNormOptionsAttr a) {
        sc::BatchNormOptionsT t;
        t.epsilon = a.getEpsilon().convertToFloat();
        table.Set(std::move(t));
      })
      .Case([&](kernel::ReduceOptionsAttr a) {
        sc::ReduceOptionsT t;
        t.axes.assign(a.getAxes().begin(), a.getAxes().end());
        t.keepdims = a.getKeepdims();
        table.Set(std::move(t));
      })
      .Case([&](kernel::Fp8ScaleOptionsAttr a) {
        sc::Fp8ScaleOptionsT t;
        t.margin = a.getMargin();
        t.format = fp8FormatOf(a.getFormat());
        table.Set(std::move(t));
      })
      .Case([&](kernel::BlockScaleOptionsAttr a) {
        sc::BlockScaleOptionsT t;
        t.block_rows = a.getBlockRows();
        t.block_cols = a.getBlockCols();
        t.recipe = a.getRecipe();
        t.margin = a.getMargin();
        t.format = fp8FormatOf(a.getFormat());
        table.Set(std::move(t));
      })
      .Case([&](kernel::BlockGemmOptionsAttr a) {
        sc::BlockGemmOptionsT t;
        t.a_block_rows = a.getABlockRows();
        t.b_block_rows = a.getBBlockRows();
        t.k_block = a.getKBlock();
        t.epilogue = a.getEpilogue();
        table.Set(std::move(t));
      })
      .Case([&](kernel::MatmulOptionsAttr a) {
        sc::MatmulOptionsT t;
        t.tf32 = a.getTf32();
        table.Set(std::move(t));
      })
      .Case([&](kernel::GatherNdOptionsAttr a) {
        sc::GatherNdOptionsT t;
        t.batch_dims = a.getBatchDims();
        table.Set(std::move(t));
      })
      .Case([&](kernel::ArgReduceOptionsAttr a) {
        sc::ArgReduceOptionsT t;
        t.axis = a.getAxis();
        t.keepdims = a.getKeepdims();
        t.select_last_index = a.getSelectLastIndex();
        table.Set(std::move(t));
      })
      .Case([&](kernel::TopKOptionsAttr a) {
        sc::TopKOptionsT t;
        t.axis = a.getAxis();
        t.k = a.getK();
        t.largest = a.getLargest();
        t.indices = a.getIndices();
        table.Set(std::move(t));
      })
      .Case([&](kernel::ScatterNdOptionsAttr a) {
        sc::ScatterNdOptionsT t;
        t.reduction = a.getReduction();
        table.Set(std::move(t));
      })
      .Case([&](kernel::CumSumOptionsAttr a) {
        sc::CumSumOptionsT t;
        t.axis = a.getAxis();
        t.exclusive = a.getExclusive();
        t.reverse = a.getReverse();
        table.Set(std::move(t));
      })
      .Case([&](kernel::AttentionOptionsAttr a) {
        sc::AttentionOptionsT t;
        t.scale = a.getScale().convertToFloat();
        t.causal = a.getCausal();
        t.lse = a.getLse();
        t.grad = a.getGrad();
        table.Set(std::move(t));
      })
      .Case([&](kernel::IntElementwiseOptionsAttr a) {
        sc::IntElementwiseOptionsT t;
        t.op = a.getOp();
        table.Set(std::move(t));
      })
      .Case([&](kernel::AllReduceOptionsAttr a) {
        sc::AllReduceOptionsT t;
        t.reduction = a.getReduction();
        table.Set(std::move(t));
      })
      .Case([&](kernel::ShardOptionsAttr a) {
        sc::ShardOptionsT t;
        t.world = a.getWorld();
        table.Set(std::move(t));
      });
  return table;
}

} // namespace mixprec::codegen
