//===- ModuleBuilder.cpp - assemble .mpk modules in tests -----------------===//
#include "tests/unit/runtime/ModuleBuilder.h"

#include "common/numerics/Rounding.h"
#include "runtime/format/ModuleHash.h"

#include <cstdio>
#include <cstring>

namespace mixprec::testing {

Shape denseStrides(const Shape &shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

Shape broadcastStrides(const Shape &tensorShape, size_t rank) {
  Shape dense = denseStrides(tensorShape);
  Shape strides(rank, 0);
  const size_t offset = rank - tensorShape.size();
  for (size_t i = 0; i < tensorShape.size(); ++i)
    strides[offset + i] = tensorShape[i] == 1 ? 0 : dense[i];
  return strides;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

static int append(KernelSpec &k, InstructionSpec inst) {
  k.program.push_back(std::move(inst));
  return static_cast<int>(k.program.size()) - 1;
}

int KernelSpec::load(int tensor, Shape strides) {
  InstructionSpec i;
  i.opcode = fb::OpCode::Load;
  i.tensor = tensor;
  i.strides = std::move(strides);
  return append(*this, std::move(i));
}

int KernelSpec::constant(float value) {
  InstructionSpec i;
  i.opcode = fb::OpCode::Const;
  i.value = value;
  return append(*this, std::move(i));
}

int KernelSpec::unary(fb::OpCode opcode, int a) {
  InstructionSpec i;
  i.opcode = opcode;
  i.operands = {a};
  return append(*this, std::move(i));
}

int KernelSpec::binary(fb::OpCode opcode, int a, int b) {
  InstructionSpec i;
  i.opcode = opcode;
  i.operands = {a, b};
  return append(*this, std::move(i));
}

int KernelSpec::select(int cond, int a, int b) {
  InstructionSpec i;
  i.opcode = fb::OpCode::Select;
  i.operands = {cond, a, b};
  return append(*this, std::move(i));
}

int KernelSpec::cast(int a, fb::DType dtype) {
  InstructionSpec i;
  i.opcode = fb::OpCode::Cast;
  i.operands = {a};
  i.dtype = dtype;
  return append(*this, std::move(i));
}

int KernelSpec::quantize(int a, int scale, fb::DType dtype) {
  InstructionSpec i;
  i.opcode = fb::OpCode::Quantize;
  i.operands = {a, scale};
  i.dtype = dtype;
  return append(*this, std::move(i));
}

int KernelSpec::store(int tensor, int value, Shape strides, fb::DType dtype) {
  InstructionSpec i;
  i.opcode = fb::OpCode::Store;
  i.operands = {value};
  i.tensor = tensor;
  i.strides = std::move(strides);
  i.dtype = dtype;
  return append(*this, std::move(i));
}

//===----------------------------------------------------------------------===//
// The module
//===----------------------------------------------------------------------===//

int ModuleBuilder::input(const std::string &name, fb::DType dtype, const Shape &shape) {
  int t = activation(name, dtype, shape);
  inputs.push_back(static_cast<uint32_t>(t));
  return t;
}

int ModuleBuilder::state(const std::string &name, fb::DType dtype, const Shape &shape,
                         const std::vector<float> &initial) {
  const int t = activation(name, dtype, shape);
  const int init = constantFloats(name + ".init", dtype, shape, initial);
  states.push_back({name, static_cast<uint32_t>(t), static_cast<uint32_t>(t),
                    static_cast<uint32_t>(tensors[init].constant)});
  if (version < 3)
    version = 3;
  return t;
}

int ModuleBuilder::activation(const std::string &name, fb::DType dtype, const Shape &shape) {
  TensorSpec t;
  t.name = name;
  t.dtype = dtype;
  t.shape = shape;
  tensors.push_back(t);
  return static_cast<int>(tensors.size()) - 1;
}

int ModuleBuilder::constantBytes(const std::string &name, fb::DType dtype, const Shape &shape,
                                 std::vector<uint8_t> bytes, bool external) {
  ConstantSpec c;
  c.data = std::move(bytes);
  c.external = external;
  constants.push_back(std::move(c));
  TensorSpec t;
  t.name = name;
  t.dtype = dtype;
  t.shape = shape;
  t.constant = static_cast<int32_t>(constants.size()) - 1;
  tensors.push_back(t);
  return static_cast<int>(tensors.size()) - 1;
}

int ModuleBuilder::constantFloats(const std::string &name, fb::DType dtype, const Shape &shape,
                                  const std::vector<float> &values, bool external) {
  const auto format = static_cast<numerics::Format>(dtype);
  numerics::RoundOptions round;
  round.saturate = dtype == fb::DType::F8E4M3FN || dtype == fb::DType::F8E5M2;
  std::vector<uint8_t> bytes(values.size() * numerics::formatBytes(format));
  numerics::encodeArray(format, values.data(), bytes.data(), values.size(), round);
  return constantBytes(name, dtype, shape, std::move(bytes), external);
}

KernelSpec &ModuleBuilder::kernel(const std::string &name, const Shape &shape, int32_t rowDims) {
  KernelSpec k;
  k.name = name;
  k.shape = shape;
  k.rowDims = rowDims;
  kernels.push_back(std::move(k));
  steps.push_back({fb::StepKind::Kernel, static_cast<uint32_t>(kernels.size() - 1)});
  return kernels.back();
}

void ModuleBuilder::gemm(const GemmSpec &spec) {
  gemms.push_back(spec);
  steps.push_back({fb::StepKind::Gemm, static_cast<uint32_t>(gemms.size() - 1)});
}

/// A union holding `table`.
template <typename T> static fb::RoutineOptionsUnion unionOf(T table) {
  fb::RoutineOptionsUnion u;
  u.Set(std::move(table));
  return u;
}

/// Sets the strides and pads of a 2-D window table.
template <typename T> static void setWindow(T &t, const Shape &strides, const Shape &pads) {
  t.stride_h = strides[0], t.stride_w = strides[1];
  t.pad_top = pads[0], t.pad_left = pads[1], t.pad_bottom = pads[2], t.pad_right = pads[3];
}

fb::RoutineOptionsUnion conv2dOptions(const Shape &strides, const Shape &pads,
                                      const Shape &dilations, int64_t groups) {
  fb::Conv2dOptionsT t;
  setWindow(t, strides, pads);
  t.dilation_h = dilations[0], t.dilation_w = dilations[1];
  t.groups = groups;
  return unionOf(std::move(t));
}

fb::RoutineOptionsUnion pool2dOptions(const Shape &kernel, const Shape &strides,
                                      const Shape &pads) {
  fb::Pool2dOptionsT t;
  t.kernel_h = kernel[0], t.kernel_w = kernel[1];
  setWindow(t, strides, pads);
  return unionOf(std::move(t));
}

fb::RoutineOptionsUnion transposeOptions(const Shape &perm) {
  fb::TransposeOptionsT t;
  t.perm = perm;
  return unionOf(std::move(t));
}

fb::RoutineOptionsUnion sliceOptions(const Shape &starts, const Shape &steps) {
  fb::SliceOptionsT t;
  t.starts = starts;
  t.steps = steps;
  return unionOf(std::move(t));
}

fb::RoutineOptionsUnion axisOptions(int64_t axis) {
  fb::AxisOptionsT t;
  t.axis = axis;
  return unionOf(std::move(t));
}

fb::RoutineOptionsUnion normOptions(int64_t axis, float epsilon) {
  fb::NormOptionsT t;
  t.axis = axis;
  t.epsilon = epsilon;
  return unionOf(std::move(t));
}

fb::RoutineOptionsUnion reduceOptions(const Shape &axes, bool keepdims) {
  fb::ReduceOptionsT t;
  t.axes = axes;
  t.keepdims = keepdims;
  return unionOf(std::move(t));
}

fb::RoutineOptionsUnion fp8ScaleOptions(int64_t margin, fb::DType format) {
  fb::Fp8ScaleOptionsT t;
  t.margin = margin;
  t.format = format;
  return unionOf(std::move(t));
}

void ModuleBuilder::routine(const RoutineSpec &spec) {
  routines.push_back(spec);
  steps.push_back({fb::StepKind::Routine, static_cast<uint32_t>(routines.size() - 1)});
}

static size_t dtypeBytes(fb::DType dtype) {
  switch (dtype) {
  case fb::DType::F32:
  case fb::DType::I32:
    return 4;
  case fb::DType::F16:
  case fb::DType::BF16:
    return 2;
  case fb::DType::I64:
    return 8;
  default:
    return 1;
  }
}

BuiltModule ModuleBuilder::build(bool keepOffsets) {
  BuiltModule built;
  uint64_t arenaEnd = 0;
  for (TensorSpec &t : tensors) {
    if (t.constant >= 0)
      continue;
    int64_t elements = 1;
    for (int64_t d : t.shape)
      elements *= d;
    if (!keepOffsets)
      t.offset = (arenaEnd + 255) / 256 * 256;
    arenaEnd = std::max<uint64_t>(arenaEnd, t.offset + elements * dtypeBytes(t.dtype));
  }

  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<fb::Tensor>> tensorOffsets;
  for (const TensorSpec &t : tensors)
    tensorOffsets.push_back(fb::CreateTensor(fbb, fbb.CreateString(t.name), t.dtype,
                                             fbb.CreateVector(t.shape), t.offset, t.constant));

  std::vector<flatbuffers::Offset<fb::Constant>> constantOffsets;
  for (const ConstantSpec &c : constants) {
    if (c.external) {
      // 64-byte aligned in the side file, as in the inline case.
      while (built.sideFile.size() % 64)
        built.sideFile.push_back(0);
      const uint64_t offset = built.sideFile.size();
      built.sideFile.insert(built.sideFile.end(), c.data.begin(), c.data.end());
      constantOffsets.push_back(fb::CreateConstant(fbb, 0, offset, c.data.size()));
    } else {
      fbb.ForceVectorAlignment(c.data.size(), sizeof(uint8_t), 64);
      constantOffsets.push_back(fb::CreateConstant(fbb, fbb.CreateVector(c.data)));
    }
  }

  std::vector<flatbuffers::Offset<fb::Kernel>> kernelOffsets;
  for (const KernelSpec &k : kernels) {
    std::vector<flatbuffers::Offset<fb::Instruction>> program;
    for (const InstructionSpec &i : k.program)
      program.push_back(fb::CreateInstruction(fbb, i.opcode, fbb.CreateVector(i.operands),
                                              i.tensor, fbb.CreateVector(i.strides), i.value,
                                              i.dtype));
    flatbuffers::Offset<fb::CudaLaunch> cuda;
    if (k.cuda)
      cuda = fb::CreateCudaLaunch(fbb, &*k.cuda);
    kernelOffsets.push_back(fb::CreateKernel(fbb, fbb.CreateString(k.name), 0,
                                             fbb.CreateVector(k.shape), k.rowDims,
                                             fbb.CreateVector(program), cuda));
  }

  std::vector<flatbuffers::Offset<fb::Gemm>> gemmOffsets;
  for (const GemmSpec &g : gemms)
    gemmOffsets.push_back(fb::CreateGemm(fbb, fbb.CreateString(g.name), 0, g.a, g.b, g.bias,
                                         g.out, g.m, g.n, g.k, g.batch, g.strideA, g.strideB,
                                         g.strideOut, g.transB, g.epilogue, g.aScale, g.bScale,
                                         g.tf32));

  std::vector<flatbuffers::Offset<fb::Routine>> routineOffsets;
  for (size_t i = 0; i < routines.size(); ++i) {
    const RoutineSpec &o = routines[i];
    auto forged = forgedOptionsTypes.find(i);
    flatbuffers::Offset<fb::CudaLaunch> cuda;
    if (o.cuda)
      cuda = fb::CreateCudaLaunch(fbb, &*o.cuda);
    routineOffsets.push_back(fb::CreateRoutine(
        fbb, fbb.CreateString(o.name), fbb.CreateString(o.opType), fbb.CreateVector(o.inputs),
        fbb.CreateVector(o.outputs),
        forged != forgedOptionsTypes.end() ? forged->second : o.options.type,
        o.options.Pack(fbb), cuda));
  }

  std::vector<flatbuffers::Offset<fb::Step>> stepOffsets;
  for (const StepSpec &s : steps)
    stepOffsets.push_back(fb::CreateStep(fbb, s.kind, s.index));

  flatbuffers::Offset<fb::SideFile> side = 0;
  if (!built.sideFile.empty())
    side = fb::CreateSideFile(
        fbb, fbb.CreateString(sideFilePath), built.sideFile.size(),
        sideFileHash ? *sideFileHash
                     : runtime::fnv1a64(built.sideFile.data(), built.sideFile.size()),
        omitSideFileXxh64
            ? flatbuffers::Optional<uint64_t>(flatbuffers::nullopt)
            : flatbuffers::Optional<uint64_t>(
                  sideFileXxh64 ? *sideFileXxh64
                                : runtime::xxh64(built.sideFile.data(), built.sideFile.size())));

  auto producer = fbb.CreateString("mixprec tests");
  auto inputsOffset = fbb.CreateVector(inputs);
  auto outputsOffset = fbb.CreateVector(outputs);
  auto tensorsOffset = fbb.CreateVector(tensorOffsets);
  auto constantsOffset = fbb.CreateVector(constantOffsets);
  auto kernelsOffset = fbb.CreateVector(kernelOffsets);
  auto gemmsOffset = fbb.CreateVector(gemmOffsets);
  auto routinesOffset = fbb.CreateVector(routineOffsets);
  auto stepsOffset = fbb.CreateVector(stepOffsets);
  flatbuffers::Offset<fb::CudaProgram> cudaOffset;
  if (cuda)
    cudaOffset = fb::CreateCudaProgram(fbb, &*cuda);
  std::vector<flatbuffers::Offset<fb::StateBinding>> stateOffsets;
  for (const StateSpec &st : states)
    stateOffsets.push_back(fb::CreateStateBinding(fbb, fbb.CreateString(st.name), st.tensor,
                                                  st.update, st.initial));
  auto statesOffset = states.empty() ? 0 : fbb.CreateVector(stateOffsets);
  auto root = fb::CreateModule(fbb, version, producer, inputsOffset, outputsOffset,
                               tensorsOffset, constantsOffset, kernelsOffset, gemmsOffset,
                               routinesOffset, stepsOffset, arenaBytes ? *arenaBytes : arenaEnd,
                               arenaEnd, 0, side,
                               seal ? runtime::kContentHashPlaceholder : 0, cudaOffset,
                               statesOffset);
  fbb.Finish(root, fb::ModuleIdentifier());
  built.module.assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  if (seal)
    runtime::sealModule(built.module.data(), built.module.size());
  return built;
}

bool writeFile(const std::string &path, const std::vector<uint8_t> &bytes) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  bool ok = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

} // namespace mixprec::testing
