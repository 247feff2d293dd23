//===- ModuleBuilder.h - assemble .mpk modules in tests ---------*- C++ -*-===//
//
// Builds modules with the FlatBuffers builder from a compact description:
// tensors (inputs, activations laid out in the arena, constants inline or in
// a side file), kernels written as small programs, GEMMs and routine ops,
// each appended to the execution sequence in call order. The descriptions
// are plain structs the tests may edit before build() to forge a broken
// module.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_TESTS_UNIT_RUNTIME_MODULEBUILDER_H
#define MIXPREC_TESTS_UNIT_RUNTIME_MODULEBUILDER_H

#include "runtime/schema/module_generated.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mixprec::testing {

namespace fb = mixprec::schema;
using Shape = std::vector<int64_t>;

/// Row-major element strides of a dense tensor.
Shape denseStrides(const Shape &shape);
/// `strides` of a tensor of shape `tensorShape` viewed, right-aligned, over
/// an iteration space of rank `rank` (0 on missing and size-1 dims: numpy
/// broadcasting).
Shape broadcastStrides(const Shape &tensorShape, size_t rank);

struct TensorSpec {
  std::string name;
  fb::DType dtype = fb::DType::F32;
  Shape shape;
  uint64_t offset = 0;   ///< arena offset (assigned by the builder)
  int32_t constant = -1;
};

struct ConstantSpec {
  std::vector<uint8_t> data;
  bool external = false; ///< in the side file
};

struct InstructionSpec {
  fb::OpCode opcode = fb::OpCode::Const;
  std::vector<int32_t> operands;
  int32_t tensor = -1;
  Shape strides;
  float value = 0.0f;
  fb::DType dtype = fb::DType::F32;
};

struct KernelSpec {
  std::string name;
  Shape shape;
  int32_t rowDims = 0;
  std::vector<InstructionSpec> program;
  /// Kernel.cuda: how the CUDA backend launches it; absent when unset.
  std::optional<fb::CudaLaunchT> cuda;

  /// Each returns the new instruction's index (its register).
  int load(int tensor, Shape strides);
  int constant(float value);
  int unary(fb::OpCode opcode, int a);
  int binary(fb::OpCode opcode, int a, int b);
  int select(int cond, int a, int b);
  int cast(int a, fb::DType dtype);
  int quantize(int a, int scale, fb::DType dtype);
  /// Stores in `dtype` (which must be the tensor's for a valid module).
  int store(int tensor, int value, Shape strides, fb::DType dtype);
};

struct GemmSpec {
  std::string name;
  int32_t a = 0, b = 0, bias = -1, out = 0;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t strideA = 0, strideB = 0, strideOut = 0;
  bool transB = false;
  fb::Epilogue epilogue = fb::Epilogue::None;
  int32_t aScale = -1, bScale = -1;
  bool tf32 = false;
};

struct RoutineSpec {
  std::string name;
  std::string opType;
  std::vector<int32_t> inputs, outputs;
  /// The options table as a plain struct (FlatBuffers' object API): tests
  /// edit it through options.AsConv2dOptions() and the like.
  fb::RoutineOptionsUnion options;
  /// Routine.cuda: the routine as a kernel; absent (run on the host) when
  /// unset.
  std::optional<fb::CudaLaunchT> cuda;
};

/// Routine options with the defaults of the schema but for what is given.
fb::RoutineOptionsUnion conv2dOptions(const Shape &strides, const Shape &pads,
                                      const Shape &dilations, int64_t groups);
fb::RoutineOptionsUnion pool2dOptions(const Shape &kernel, const Shape &strides,
                                      const Shape &pads);
fb::RoutineOptionsUnion transposeOptions(const Shape &perm);
fb::RoutineOptionsUnion sliceOptions(const Shape &starts, const Shape &steps);
fb::RoutineOptionsUnion axisOptions(int64_t axis);
fb::RoutineOptionsUnion normOptions(int64_t axis, float epsilon);
fb::RoutineOptionsUnion reduceOptions(const Shape &axes, bool keepdims);
fb::RoutineOptionsUnion fp8ScaleOptions(int64_t margin, fb::DType format);

struct StepSpec {
  fb::StepKind kind = fb::StepKind::Kernel;
  uint32_t index = 0;
};

/// A state binding (schema v3): tensor indices and the initial constant.
struct StateSpec {
  std::string name;
  uint32_t tensor = 0, update = 0, initial = 0;
};

struct BuiltModule {
  std::vector<uint8_t> module;
  std::vector<uint8_t> sideFile; ///< empty when no constant is external
};

class ModuleBuilder {
public:
  /// An arena tensor that is also a graph input / a plain activation.
  int input(const std::string &name, fb::DType dtype, const Shape &shape);
  int activation(const std::string &name, fb::DType dtype, const Shape &shape);
  /// A constant with raw element bytes / with float values encoded
  /// (rounded) to `dtype`.
  int constantBytes(const std::string &name, fb::DType dtype, const Shape &shape,
                    std::vector<uint8_t> bytes, bool external = false);
  int constantFloats(const std::string &name, fb::DType dtype, const Shape &shape,
                     const std::vector<float> &values, bool external = false);
  void output(int tensor) { outputs.push_back(static_cast<uint32_t>(tensor)); }
  /// A state tensor (an activation) with its initial value (a constant of
  /// `initial` encoded to `dtype`), its own update until `states.back()
  /// .update` is set; makes the module version 3.
  int state(const std::string &name, fb::DType dtype, const Shape &shape,
            const std::vector<float> &initial);

  /// Appends a kernel (and its step); the reference stays valid until the
  /// next kernel() call.
  KernelSpec &kernel(const std::string &name, const Shape &shape, int32_t rowDims);
  void gemm(const GemmSpec &spec);
  void routine(const RoutineSpec &spec);

  /// Serializes. Activations get consecutive 256-aligned arena offsets
  /// unless `keepOffsets`.
  BuiltModule build(bool keepOffsets = false);

  // The description, editable before build().
  std::vector<TensorSpec> tensors;
  std::vector<ConstantSpec> constants;
  std::vector<uint32_t> inputs, outputs;
  std::vector<KernelSpec> kernels;
  std::vector<GemmSpec> gemms;
  std::vector<RoutineSpec> routines;
  /// Routine index -> the options type written instead of its own (a forgery).
  std::map<size_t, fb::RoutineOptions> forgedOptionsTypes;
  std::vector<StepSpec> steps;
  std::vector<StateSpec> states;
  /// Module.cuda: the CUDA program; absent (a CPU-only module) when unset.
  std::optional<fb::CudaProgramT> cuda;
  uint32_t version = 2;                 ///< the schema version the file claims
  bool seal = true;                     ///< write Module.content_hash
  std::string sideFilePath = "weights.bin";
  std::optional<uint64_t> arenaBytes;   ///< default: end of the last activation
  std::optional<uint64_t> sideFileHash; ///< default: the real FNV-1a
  std::optional<uint64_t> sideFileXxh64; ///< default: the real XXH64, as codegen writes
  bool omitSideFileXxh64 = false;        ///< as a writer before SideFile.xxh64
};

/// Writes bytes to a file; false on failure.
bool writeFile(const std::string &path, const std::vector<uint8_t> &bytes);

} // namespace mixprec::testing

#endif // MIXPREC_TESTS_UNIT_RUNTIME_MODULEBUILDER_H
