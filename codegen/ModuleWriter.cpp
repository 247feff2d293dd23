//===- ModuleWriter.cpp - serialize a planned mpk function to .mpk ---------===//
#include "codegen/ModuleWriter.h"
#include "codegen/KernelBody.h"
#include "codegen/RoutineOptions.h"

#include "common/FileIO.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Kernel/IR/KernelOps.h"
#include "dialects/Kernel/IR/StepVisitor.h"
#include "passes/Precision/PrecisionUtils.h"
#include "runtime/format/KernelProgram.h"
#include "runtime/format/ModuleHash.h"
#include "runtime/include/mixprec/runtime.h"
#include "runtime/schema/module_generated.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>

using namespace mlir;
namespace fb = flatbuffers;
namespace sc = mixprec::schema;

namespace mixprec::codegen {
namespace {

/// The schema versions of a module without state, with state, and with a
/// routine kernel that takes the error record (runtime/schema/module.fbs.in,
/// v3 and v4).
constexpr uint32_t kStatelessSchemaVersion = 2;
constexpr uint32_t kStateSchemaVersion = 3;
constexpr uint32_t kErrorRecordSchemaVersion = 4;

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The schema dtype of an element type, if the format has one.
std::optional<sc::DType> dtypeOf(Type t) {
  if (t.isF32())
    return sc::DType::F32;
  if (t.isF16())
    return sc::DType::F16;
  if (t.isBF16())
    return sc::DType::BF16;
  if (isa<Float8E4M3FNType>(t))
    return sc::DType::F8E4M3FN;
  if (isa<Float8E5M2Type>(t))
    return sc::DType::F8E5M2;
  if (t.isInteger(64))
    return sc::DType::I64;
  if (t.isInteger(32))
    return sc::DType::I32;
  if (t.isInteger(1))
    return sc::DType::Bool;
  return std::nullopt;
}

int64_t bytesOf(Value v) {
  unsigned bits = typeOf(v).getElementType().getIntOrFloatBitWidth();
  return typeOf(v).getNumElements() * std::max<int64_t>(1, (bits + 7) / 8);
}

/// The bytes of a dense value of type `type` as the module stores them
/// (bool as one 0/1 byte, a splat repeated).
std::vector<uint8_t> denseBytes(DenseElementsAttr dense, RankedTensorType type) {
  unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  std::vector<uint8_t> bytes(
      static_cast<size_t>(type.getNumElements() * std::max<int64_t>(1, (bits + 7) / 8)));
  if (type.getElementType().isInteger(1)) {
    size_t i = 0;
    for (bool b : dense.getValues<bool>())
      bytes[i++] = b;
  } else if (dense.isSplat()) {
    ArrayRef<char> one = dense.getRawData();
    size_t each = bytes.size() / std::max<int64_t>(1, type.getNumElements());
    for (size_t i = 0; i < bytes.size(); i += each)
      std::memcpy(bytes.data() + i, one.data(), std::min(each, one.size()));
  } else {
    ArrayRef<char> raw = dense.getRawData();
    if (!bytes.empty() && !raw.empty())
      std::memcpy(bytes.data(), raw.data(), std::min(raw.size(), bytes.size()));
  }
  return bytes;
}

/// The expression-program opcode of a scalar function, or nullopt for the
/// lowered ones (silu), which kernel bodies hold as other functions
/// (--mp-lower-to-kernels). From runtime/format/ScalarFns.def.
std::optional<sc::OpCode> opCodeOf(graph::ScalarFn fn) {
  switch (fn) {
#define MP_SCALAR_FN(Name, mnemonic, value, arity, opcode, ...)                                    \
  case graph::ScalarFn::Name:                                                                      \
    return sc::OpCode::opcode;
#define MP_SCALAR_FN_LOWERED(Name, ...)                                                            \
  case graph::ScalarFn::Name:                                                                      \
    return std::nullopt;
#include "runtime/format/ScalarFns.def"
  }
  return std::nullopt;
}

/// Builds the FlatBuffers module from a planned function: one module step
/// per mpk step, in order.
class Writer : public kernel::StepVisitor {
public:
  Writer(func::FuncOp func, ModuleStats &stats) : func(func), stats(stats) {}

  /// Fails with an error at the op (or, for the whole graph, the function)
  /// the format cannot express.
  LogicalResult build(const std::vector<PrecisionEntry> &precision,
                      const ModuleWriteOptions &options, const std::string &sideFileName,
                      std::vector<uint8_t> &sideFile);

  fb::FlatBufferBuilder fbb{1 << 20};

private:
  /// Returns the tensor index of `v`, adding it on first use.
  int32_t tensorOf(Value v);
  /// A graph input's or output's name, else its op's node name.
  std::string tensorName(Value v);
  LogicalResult addKernel(kernel::KernelOp op);
  /// Kernel.cuda of `op`, whose CUDA function is `cudaKernel`.
  fb::Offset<sc::CudaLaunch> addCudaLaunch(kernel::KernelOp op, const CudaKernel &cudaKernel);
  /// A CudaLaunch of `cudaKernel` passing the tensors `params`.
  fb::Offset<sc::CudaLaunch> addCudaLaunch(const CudaKernel &cudaKernel,
                                           const std::vector<int32_t> &params,
                                           const std::vector<int32_t> &zeroed);
  /// Module.cuda, or null without CUDA code.
  fb::Offset<sc::CudaProgram> addCudaProgram();
  LogicalResult addGemm(kernel::GemmOp op);
  void addRoutine(kernel::CallOp op);
  /// The graph outputs' tensor indices; adds an alias for an output returned
  /// under a name its tensor does not have.
  std::vector<uint32_t> graphOutputs(Block &body);
  /// Adds a constant of `bytes`, inline or (beyond the threshold) in the side
  /// file; its index.
  int32_t addConstant(const std::vector<uint8_t> &bytes, const ModuleWriteOptions &options,
                      std::vector<uint8_t> &sideFile);
  /// Adds a tensor per value (a constant's data as a constant) and per
  /// output alias; fails at the op defining a value with no module form.
  LogicalResult addTensors(const ModuleWriteOptions &options, std::vector<uint8_t> &sideFile,
                           std::vector<fb::Offset<sc::Tensor>> &tensors);
  /// Adds a state binding per mp.state argument, its initial value as a
  /// constant; fails at the function when its init or update is missing.
  LogicalResult addStates(Block &body, const ModuleWriteOptions &options,
                          std::vector<uint8_t> &sideFile,
                          std::vector<fb::Offset<sc::StateBinding>> &states);
  /// An error about `v`: at the op defining it, or at the function for an
  /// argument.
  InFlightDiagnostic emitErrorAt(Value v);
  /// Adds the precision plan, the side file's record and the module table,
  /// and finishes the buffer.
  void finishModule(const std::vector<PrecisionEntry> &precision,
                    const ModuleWriteOptions &options, const std::string &sideFileName,
                    const std::vector<uint8_t> &sideFile, const std::vector<uint32_t> &inputs,
                    const std::vector<uint32_t> &outputs,
                    const std::vector<fb::Offset<sc::Tensor>> &tensors,
                    const std::vector<fb::Offset<sc::StateBinding>> &states);

  LogicalResult visitKernel(kernel::KernelOp op) override { return addKernel(op); }
  LogicalResult visitGemm(kernel::GemmOp op) override { return addGemm(op); }
  LogicalResult visitCall(kernel::CallOp op) override { return addRoutine(op), success(); }
  /// An alias is no step: its tensor shares its input's place.
  LogicalResult visitAlias(kernel::AliasOp op) override {
    tensorOf(op.getOutput());
    return success();
  }
  /// Weight constants become tensors when a step reads them.
  LogicalResult visitOther(Operation *op) override;
  /// The kernels' CUDA code, or null.
  const CudaModuleCode *cuda = nullptr;
  /// Whether a routine kernel takes the error record (schema version 4).
  bool errorRecords = false;
  fb::Offset<fb::Vector<fb::Offset<fb::String>>> names(ArrayAttr ops);

  func::FuncOp func;
  ModuleStats &stats;
  llvm::DenseMap<Value, int32_t> tensorIndex;
  std::vector<Value> tensorValues;
  /// A graph output under a name its tensor does not have: one more tensor
  /// (numbered after tensorValues) at the place of `source`.
  struct OutputAlias {
    int32_t source;
    std::string name;
  };
  std::vector<OutputAlias> outputAliases;
  llvm::DenseMap<Value, int64_t> offsets;
  std::vector<fb::Offset<sc::Constant>> constants;
  std::vector<fb::Offset<sc::Kernel>> kernels;
  std::vector<fb::Offset<sc::Gemm>> gemms;
  std::vector<fb::Offset<sc::Routine>> routines;
  std::vector<fb::Offset<sc::Step>> steps;
};

std::string Writer::tensorName(Value v) {
  auto named = [](Attribute a) { return a ? cast<StringAttr>(a).str() : std::string(); };
  if (auto arg = dyn_cast<BlockArgument>(v))
    return named(func.getArgAttr(arg.getArgNumber(), graph::GraphDialect::kNameAttr));
  // The first graph output it is (a value returned twice is named once;
  // Writer::build adds an alias per other name).
  Operation *ret = func.getBody().front().getTerminator();
  for (OpOperand &operand : ret->getOpOperands())
    if (operand.get() == v)
      return named(func.getResultAttr(operand.getOperandNumber(), graph::GraphDialect::kNameAttr));
  return passes::opName(v.getDefiningOp());
}

int32_t Writer::tensorOf(Value v) {
  auto it = tensorIndex.find(v);
  if (it != tensorIndex.end())
    return it->second;
  int32_t index = static_cast<int32_t>(tensorValues.size());
  tensorIndex[v] = index;
  tensorValues.push_back(v);
  return index;
}

fb::Offset<fb::Vector<fb::Offset<fb::String>>> Writer::names(ArrayAttr ops) {
  std::vector<std::string> list;
  for (Attribute a : ops)
    list.push_back(cast<StringAttr>(a).str());
  return fbb.CreateVectorOfStrings(list);
}

/// Translates a kernel body into an expression program: a Load per input,
/// one instruction per body op in order, a Store per yielded value.
class ProgramBuilder {
public:
  ProgramBuilder(fb::FlatBufferBuilder &fbb, ArrayRef<int64_t> space,
                 std::function<int32_t(Value)> tensorOf)
      : fbb(fbb), space(space), tensorOf(tensorOf) {}

  /// Fails at the body op without an instruction, or at `op` when its
  /// program is longer than a module may hold.
  LogicalResult emit(kernel::KernelOp op);
  std::vector<fb::Offset<sc::Instruction>> program;

private:
  /// Appends one instruction and returns its register.
  int32_t add(sc::OpCode code, std::vector<int32_t> operands, sc::DType dtype, float fvalue = 0,
              int32_t tensor = -1, std::vector<int64_t> strides = {}) {
    auto ops = fbb.CreateVector(operands);
    auto st = strides.empty() ? 0 : fbb.CreateVector(strides);
    sc::InstructionBuilder b(fbb);
    b.add_opcode(code);
    b.add_operands(ops);
    if (tensor >= 0) {
      b.add_tensor(tensor);
      b.add_strides(st);
    }
    b.add_fvalue(fvalue);
    b.add_dtype(dtype);
    program.push_back(b.Finish());
    return static_cast<int32_t>(program.size() - 1);
  }
  /// The opcode of a body op other than a constant, or nullopt.
  std::optional<sc::OpCode> opCodeOfOp(Operation &op);
  LogicalResult emitOp(Operation &op);

  fb::FlatBufferBuilder &fbb;
  ArrayRef<int64_t> space;
  // Owned, not a function_ref: callers pass a temporary lambda, which a
  // function_ref would outlive (stack use after scope).
  std::function<int32_t(Value)> tensorOf;
  llvm::DenseMap<Value, int32_t> reg;
};

LogicalResult ProgramBuilder::emit(kernel::KernelOp op) {
  Block &body = op.getBody().front();
  for (auto [arg, input] : llvm::zip(body.getArguments(), op.getInputs()))
    reg[arg] = add(sc::OpCode::Load, {}, *dtypeOf(typeOf(input).getElementType()), 0,
                   tensorOf(input), broadcastStrides(typeOf(input).getShape(), space));
  for (Operation &inner : body.without_terminator())
    if (failed(emitOp(inner)))
      return failure();
  // A row value stored without its row dims is read with them: the yielded
  // value's shape gives the strides.
  auto yield = cast<kernel::YieldOp>(body.getTerminator());
  for (auto [value, result] : llvm::zip(yield.getValues(), op.getResults()))
    add(sc::OpCode::Store, {reg.lookup(value)}, *dtypeOf(typeOf(result).getElementType()), 0,
        tensorOf(result), broadcastStrides(typeOf(value).getShape(), space));
  // The runtime would refuse the module; say so now, naming the kernel.
  if (program.size() > runtime::kMaxProgramLength)
    return op.emitError() << "kernel '"
                          << (op.getOps().empty() ? StringRef("kernel")
                                                  : cast<StringAttr>(op.getOps()[0]).getValue())
                          << "': its program has " << program.size()
                          << " instructions, more than the " << runtime::kMaxProgramLength
                          << " a module may hold";
  return success();
}

std::optional<sc::OpCode> ProgramBuilder::opCodeOfOp(Operation &op) {
  if (auto elementwise = dyn_cast<graph::ElementwiseOpInterface>(op))
    return opCodeOf(elementwise.getScalarFn());
  if (auto reduce = dyn_cast<kernel::RowReduceOp>(op))
    return reduce.getKind() == kernel::RowReduceKind::sum ? sc::OpCode::RowSum
                                                          : sc::OpCode::RowMax;
  if (isa<kernel::AmaxOp>(op))
    return sc::OpCode::Amax;
  return std::nullopt;
}

LogicalResult ProgramBuilder::emitOp(Operation &op) {
  auto noForm = [&] {
    return op.emitError() << "op '" << passes::opName(&op) << "' (" << op.getName().getStringRef()
                          << ") has no expression-program form";
  };
  if (op.getNumResults() != 1)
    return noForm();
  Value out = op.getResult(0);
  if (std::optional<float> value = scalarConstantValue(op)) {
    reg[out] = add(sc::OpCode::Const, {}, sc::DType::F32, *value);
    return success();
  }
  std::optional<sc::OpCode> code = opCodeOfOp(op);
  std::optional<sc::DType> dtype = dtypeOf(typeOf(out).getElementType());
  if (!code || !dtype)
    return noForm();
  std::vector<int32_t> operands;
  for (Value operand : op.getOperands())
    operands.push_back(reg.lookup(operand));
  reg[out] = add(*code, operands, *dtype);
  return success();
}

fb::Offset<sc::CudaLaunch> Writer::addCudaLaunch(kernel::KernelOp op,
                                                 const CudaKernel &cudaKernel) {
  // The CUDA function's parameters: the kernel's inputs, then its results.
  std::vector<int32_t> params, zeroed;
  for (Value v : op.getInputs())
    params.push_back(tensorOf(v));
  for (Value v : op.getResults())
    params.push_back(tensorOf(v));
  for (int result : cudaKernel.launch.zeroedResults)
    zeroed.push_back(tensorOf(op.getResult(result)));
  return addCudaLaunch(cudaKernel, params, zeroed);
}

fb::Offset<sc::CudaLaunch> Writer::addCudaLaunch(const CudaKernel &cudaKernel,
                                                 const std::vector<int32_t> &params,
                                                 const std::vector<int32_t> &zeroed) {
  auto function = fbb.CreateString(cudaKernel.name);
  auto paramsV = fbb.CreateVector(params);
  auto zeroedV = fbb.CreateVector(zeroed);
  errorRecords |= cudaKernel.launch.errorRecord;
  return sc::CreateCudaLaunch(
      fbb, function, cudaKernel.launch.gridSize, static_cast<int32_t>(cudaKernel.launch.blockSize),
      cudaKernel.launch.rowKernel, paramsV, zeroedV, cudaKernel.launch.errorRecord);
}

fb::Offset<sc::CudaProgram> Writer::addCudaProgram() {
  if (!cuda)
    return 0;
  auto version = fbb.CreateString(cuda->nvrtcVersion);
  auto source = fbb.CreateString(cuda->source);
  auto ptx = fbb.CreateString(cuda->ptx);
  // An ELF image: aligned as the driver reads it in place.
  fbb.ForceVectorAlignment(cuda->cubin.size(), sizeof(uint8_t), 64);
  auto cubin = fbb.CreateVector(reinterpret_cast<const uint8_t *>(cuda->cubin.data()),
                                cuda->cubin.size());
  return sc::CreateCudaProgram(fbb, cuda->smVersion, version, source, ptx, cubin);
}

LogicalResult Writer::addKernel(kernel::KernelOp op) {
  ProgramBuilder pb(fbb, op.getShape(), [&](Value v) { return tensorOf(v); });
  if (failed(pb.emit(op)))
    return failure();
  fb::Offset<sc::CudaLaunch> launch = 0;
  if (cuda) {
    if (kernels.size() >= cuda->kernels.size())
      return op.emitError() << "the CUDA program has " << cuda->kernels.size()
                            << " kernels, the function more (a compiler bug)";
    launch = addCudaLaunch(op, cuda->kernels[kernels.size()]);
  }
  for (Value v : op.getInputs())
    stats.bytesMoved += bytesOf(v);
  for (Value v : op.getResults())
    stats.bytesMoved += bytesOf(v);
  auto name = fbb.CreateString(op.getOps().empty() ? "kernel"
                                                   : cast<StringAttr>(op.getOps()[0]).str());
  auto sources = names(op.getOps());
  auto shape = fbb.CreateVector(op.getShape().data(), op.getShape().size());
  auto program = fbb.CreateVector(pb.program);
  sc::KernelBuilder b(fbb);
  b.add_name(name);
  b.add_source_ops(sources);
  b.add_shape(shape);
  b.add_row_dims(static_cast<int32_t>(op.getRowDims()));
  b.add_program(program);
  if (cuda)
    b.add_cuda(launch);
  kernels.push_back(b.Finish()); // finish before building the step: no nesting
  steps.push_back(sc::CreateStep(fbb, sc::StepKind::Kernel, kernels.size() - 1));
  ++stats.kernels;
  return success();
}

LogicalResult Writer::addGemm(kernel::GemmOp op) {
  ArrayRef<int64_t> a = typeOf(op.getA()).getShape(), b = typeOf(op.getB()).getShape(),
                    out = typeOf(op.getOutput()).getShape();
  auto fail = [&](StringRef why) {
    StringRef name = op.getOps().empty() ? "gemm" : cast<StringAttr>(op.getOps()[0]).getValue();
    return op.emitError() << "GEMM '" << name << "': " << why;
  };
  if (a.size() < 2 || b.size() < 2 || out.size() < 2)
    return fail("vector operands have no module form yet (reshape to a matrix first)");
  int64_t k = a.back(), n = out.back();
  int64_t m = out[out.size() - 2];
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < out.size(); ++i)
    batch *= out[i];
  int64_t strideA = 0, strideB = 0;
  bool linearLike = b.size() == 2;
  if (linearLike) {
    // A linear layer: all leading dims of `a` are rows of one GEMM.
    m = 1;
    for (size_t i = 0; i + 1 < a.size(); ++i)
      m *= a[i];
    batch = 1;
  } else {
    auto batchStride = [&](ArrayRef<int64_t> s, int64_t matrix, int64_t &stride) {
      if (s.size() == 2) {
        stride = 0;
        return true;
      }
      if (s.drop_back(2) != out.drop_back(2))
        return false;
      stride = matrix;
      return true;
    };
    if (!batchStride(a, m * k, strideA) || !batchStride(b, k * n, strideB))
      return fail("batch dims that broadcast partially have no module form yet");
  }
  bool hasBias = static_cast<bool>(op.getBias());
  sc::Epilogue epilogue = sc::Epilogue::None;
  if (op.getEpilogue() == "relu")
    epilogue = hasBias ? sc::Epilogue::BiasRelu : sc::Epilogue::Relu;
  else if (op.getEpilogue() == "gelu")
    epilogue = hasBias ? sc::Epilogue::BiasGelu : sc::Epilogue::Gelu;
  else if (hasBias)
    epilogue = sc::Epilogue::Bias;
  for (Value v : op->getOperands())
    stats.bytesMoved += bytesOf(v);
  stats.bytesMoved += bytesOf(op.getOutput());
  int32_t ia = tensorOf(op.getA()), ib = tensorOf(op.getB()), io = tensorOf(op.getOutput());
  int32_t ibias = hasBias ? tensorOf(op.getBias()) : -1;
  int32_t sa = op.getAScale() ? tensorOf(op.getAScale()) : -1;
  int32_t sb = op.getBScale() ? tensorOf(op.getBScale()) : -1;
  auto name = fbb.CreateString(op.getOps().empty() ? "gemm" : cast<StringAttr>(op.getOps()[0]).str());
  auto sources = names(op.getOps());
  sc::GemmBuilder g(fbb);
  g.add_name(name);
  g.add_source_ops(sources);
  g.add_a(ia);
  g.add_b(ib);
  g.add_bias(ibias);
  g.add_out(io);
  g.add_m(m);
  g.add_n(n);
  g.add_k(k);
  g.add_batch(batch);
  g.add_batch_stride_a(strideA);
  g.add_batch_stride_b(strideB);
  g.add_batch_stride_out(linearLike ? 0 : m * n);
  g.add_trans_b(op.getTransB());
  g.add_epilogue(epilogue);
  g.add_a_scale(sa);
  g.add_b_scale(sb);
  g.add_tf32(op.getTf32());
  gemms.push_back(g.Finish());
  steps.push_back(sc::CreateStep(fbb, sc::StepKind::Gemm, gemms.size() - 1));
  ++stats.gemms;
  return success();
}

LogicalResult Writer::visitOther(Operation *op) {
  if (op->hasTrait<OpTrait::ConstantLike>() || op->hasTrait<OpTrait::IsTerminator>())
    return success();
  return op->emitError() << "op '" << passes::opName(op) << "' (" << op->getName().getStringRef()
                         << ") was not lowered to a kernel, GEMM or routine";
}

void Writer::addRoutine(kernel::CallOp op) {
  std::vector<int32_t> inputs, outputs;
  for (Value v : op.getInputs()) {
    inputs.push_back(tensorOf(v));
    stats.bytesMoved += bytesOf(v);
  }
  for (Value v : op.getOutputs()) {
    outputs.push_back(tensorOf(v));
    stats.bytesMoved += bytesOf(v);
  }
  StringRef routine = kernel::stringifyRoutine(op.getOpType());
  auto name = fbb.CreateString(op.getOps().empty() ? routine.str()
                                                   : cast<StringAttr>(op.getOps()[0]).str());
  auto type = fbb.CreateString(routine.str());
  auto in = fbb.CreateVector(inputs);
  auto outv = fbb.CreateVector(outputs);
  sc::RoutineOptionsUnion options = serializeRoutineOptions(op.getOptions());
  auto optionsTable = options.Pack(fbb);
  // Routine.cuda: the routine's kernel, passed its inputs then its output.
  fb::Offset<sc::CudaLaunch> launch = 0;
  if (cuda && routines.size() < cuda->routines.size() && cuda->routines[routines.size()]) {
    std::vector<int32_t> params = inputs;
    params.insert(params.end(), outputs.begin(), outputs.end());
    launch = addCudaLaunch(*cuda->routines[routines.size()], params, {});
  }
  steps.push_back(sc::CreateStep(fbb, sc::StepKind::Routine, routines.size()));
  routines.push_back(
      sc::CreateRoutine(fbb, name, type, in, outv, options.type, optionsTable, launch));
  ++stats.routines;
}

LogicalResult Writer::build(const std::vector<PrecisionEntry> &precision,
                            const ModuleWriteOptions &options, const std::string &sideFileName,
                            std::vector<uint8_t> &sideFile) {
  Block &body = func.getBody().front();
  cuda = options.cuda;
  std::vector<uint32_t> inputs, outputs;
  for (BlockArgument arg : body.getArguments()) {
    // State arguments are no inputs: the session binds them (below).
    int32_t t = tensorOf(arg);
    if (!func.getArgAttr(arg.getArgNumber(), graph::GraphDialect::kStateAttr))
      inputs.push_back(t);
    if (auto off = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), "mpk.offset"))
      offsets[arg] = off.getInt();
  }
  for (Operation &op : body) {
    if (auto offs = op.getAttrOfType<DenseI64ArrayAttr>(kernel::KernelDialect::kOffsetsAttr))
      for (auto [result, off] : llvm::zip(op.getResults(), offs.asArrayRef()))
        offsets[result] = off;
    if (failed(visit(&op)))
      return failure();
  }
  if (cuda && kernels.size() != cuda->kernels.size())
    return func.emitError() << "the CUDA program has " << cuda->kernels.size()
                            << " kernels, the function " << kernels.size() << " (a compiler bug)";
  if (cuda && routines.size() != cuda->routines.size())
    return func.emitError() << "the CUDA program has " << cuda->routines.size()
                            << " routines, the function " << routines.size() << " (a compiler bug)";
  outputs = graphOutputs(body);
  for (BlockArgument arg : body.getArguments())
    stats.minimumBytes += bytesOf(arg);
  for (Value v : body.getTerminator()->getOperands())
    stats.minimumBytes += bytesOf(v);

  // Tensors and constants, now that every value has an index.
  std::vector<fb::Offset<sc::Tensor>> tensors;
  if (failed(addTensors(options, sideFile, tensors)))
    return failure();

  // Module state (mp.state arguments, GraphBase.td): the state tensor, its
  // update and its initial value as a constant.
  std::vector<fb::Offset<sc::StateBinding>> states;
  if (failed(addStates(body, options, sideFile, states)))
    return failure();

  finishModule(precision, options, sideFileName, sideFile, inputs, outputs, tensors, states);
  return success();
}

/// The graph outputs' tensor indices; adds an alias for an output returned
/// under a name its tensor does not have.
std::vector<uint32_t> Writer::graphOutputs(Block &body) {
  std::vector<uint32_t> outputs;
  // Graph outputs. A value returned under a name its tensor does not have
  // (a value returned twice under two names, a returned input or constant)
  // is an alias tensor of that name at the same place: one output per graph
  // output, each under its name, as onnxruntime gives them. The same value
  // returned twice under one name is that tensor listed twice.
  Operation *ret = body.getTerminator();
  for (Value v : ret->getOperands())
    tensorOf(v); // every tensor has its index before aliases are numbered
  for (OpOperand &operand : ret->getOpOperands()) {
    // A state's update is no output: the session commits it (below).
    if (func.getResultAttr(operand.getOperandNumber(), graph::GraphDialect::kStateUpdateAttr))
      continue;
    int32_t t = tensorOf(operand.get());
    auto nameAttr = func.getResultAttrOfType<StringAttr>(operand.getOperandNumber(),
                                                         graph::GraphDialect::kNameAttr);
    if (nameAttr && !nameAttr.getValue().empty() &&
        nameAttr.getValue() != tensorName(operand.get())) {
      auto same = llvm::find_if(outputAliases, [&](const OutputAlias &a) {
        return a.source == t && a.name == nameAttr.getValue();
      });
      if (same == outputAliases.end()) {
        outputAliases.push_back({t, nameAttr.str()});
        same = std::prev(outputAliases.end());
      }
      t = static_cast<int32_t>(tensorValues.size() + (same - outputAliases.begin()));
    }
    outputs.push_back(t);
  }
  return outputs;
}

/// Adds a constant of `bytes`, inline or (beyond the threshold) in the side
/// file; its index.
int32_t Writer::addConstant(const std::vector<uint8_t> &bytes, const ModuleWriteOptions &options,
                            std::vector<uint8_t> &sideFile) {
  stats.constantBytes += bytes.size();
  fb::Offset<sc::Constant> entry;
  if (bytes.size() > options.sideFileThreshold) {
    // 64-byte aligned inside the side file, like the inline data.
    sideFile.resize((sideFile.size() + 63) / 64 * 64);
    uint64_t at = sideFile.size();
    sideFile.insert(sideFile.end(), bytes.begin(), bytes.end());
    entry = sc::CreateConstant(fbb, 0, at, bytes.size());
    stats.sideFileBytes += bytes.size();
  } else {
    // force_align: 64 in the schema; FlatBuffers 2.0.8 aligns on request.
    fbb.ForceVectorAlignment(bytes.size(), sizeof(uint8_t), 64);
    auto data = fbb.CreateVector(bytes);
    entry = sc::CreateConstant(fbb, data);
  }
  constants.push_back(entry);
  return static_cast<int32_t>(constants.size() - 1);
}

InFlightDiagnostic Writer::emitErrorAt(Value v) {
  if (Operation *def = v.getDefiningOp())
    return def->emitError();
  return func.emitError();
}

/// Adds a tensor per value (a constant's data as a constant) and per
/// output alias; fails at the op defining a value with no module form.
LogicalResult Writer::addTensors(const ModuleWriteOptions &options, std::vector<uint8_t> &sideFile,
                                 std::vector<fb::Offset<sc::Tensor>> &tensors) {
  std::vector<std::pair<uint64_t, int32_t>> placements; // offset, constant
  for (Value v : tensorValues) {
    auto type = typeOf(v);
    std::optional<sc::DType> dtype = dtypeOf(type.getElementType());
    if (!dtype)
      return emitErrorAt(v) << "a value has element type with no module form";
    int32_t constantIndex = -1;
    uint64_t offset = 0;
    if (auto c = v.getDefiningOp<graph::ConstantOp>()) {
      constantIndex = addConstant(denseBytes(cast<DenseElementsAttr>(c.getValue()), type), options,
                                  sideFile);
    } else {
      Value root = v;
      while (auto alias = root.getDefiningOp<kernel::AliasOp>())
        root = alias.getInput();
      if (!offsets.count(root))
        return emitErrorAt(root) << "value without an arena offset: run --mp-plan-memory first";
      offset = offsets[root];
    }
    auto shape = fbb.CreateVector(type.getShape().data(), type.getShape().size());
    auto name = fbb.CreateString(tensorName(v));
    tensors.push_back(sc::CreateTensor(fbb, name, *dtype, shape, offset, constantIndex));
    placements.push_back({offset, constantIndex});
  }
  for (const OutputAlias &alias : outputAliases) {
    auto type = typeOf(tensorValues[alias.source]);
    auto shape = fbb.CreateVector(type.getShape().data(), type.getShape().size());
    auto name = fbb.CreateString(alias.name);
    auto [offset, constantIndex] = placements[alias.source];
    tensors.push_back(sc::CreateTensor(fbb, name, *dtypeOf(type.getElementType()), shape, offset,
                                       constantIndex));
  }
  return success();
}

/// Adds a state binding per mp.state argument, its initial value as a
/// constant; fails at the function when its init or update is missing.
LogicalResult Writer::addStates(Block &body, const ModuleWriteOptions &options,
                                std::vector<uint8_t> &sideFile,
                                std::vector<fb::Offset<sc::StateBinding>> &states) {
  Operation *ret = body.getTerminator();
  for (BlockArgument arg : body.getArguments()) {
    auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                  graph::GraphDialect::kStateAttr);
    if (!name)
      continue;
    auto init = func.getArgAttrOfType<DenseElementsAttr>(arg.getArgNumber(),
                                                         graph::GraphDialect::kStateInitAttr);
    if (!init)
      return func.emitError() << "state '" << name.getValue()
                              << "': its initial value (mp.state_init) is not dense data";
    std::optional<uint32_t> update;
    for (OpOperand &operand : ret->getOpOperands())
      if (func.getResultAttr(operand.getOperandNumber(), graph::GraphDialect::kStateUpdateAttr) ==
          name)
        update = static_cast<uint32_t>(tensorOf(operand.get()));
    if (!update)
      return func.emitError() << "state '" << name.getValue()
                              << "' has no update (mp.state_update)";
    const int32_t initial = addConstant(denseBytes(init, typeOf(arg)), options, sideFile);
    states.push_back(sc::CreateStateBinding(fbb, fbb.CreateString(name.str()),
                                            static_cast<uint32_t>(tensorOf(arg)), *update,
                                            static_cast<uint32_t>(initial)));
  }
  return success();
}

/// Adds the precision plan, the side file's record and the module table,
/// and finishes the buffer.
void Writer::finishModule(const std::vector<PrecisionEntry> &precision,
                          const ModuleWriteOptions &options, const std::string &sideFileName,
                          const std::vector<uint8_t> &sideFile,
                          const std::vector<uint32_t> &inputs,
                          const std::vector<uint32_t> &outputs,
                          const std::vector<fb::Offset<sc::Tensor>> &tensors,
                          const std::vector<fb::Offset<sc::StateBinding>> &states) {
  std::vector<fb::Offset<sc::OpPrecision>> plan;
  for (const PrecisionEntry &p : precision) {
    std::optional<sc::DType> d =
        dtypeOf(*passes::parseDType(func.getContext(), p.dtype == "tf32" ? "f32" : p.dtype));
    plan.push_back(sc::CreateOpPrecision(fbb, fbb.CreateString(p.op), fbb.CreateString(p.opType),
                                         d.value_or(sc::DType::F32), fbb.CreateString(p.reason)));
  }
  fb::Offset<sc::SideFile> side = 0;
  if (!sideFile.empty())
    // XXH64 for readers that know it (the check at every load); FNV-1a 64
    // as well, for the readers before it.
    side = sc::CreateSideFile(fbb, fbb.CreateString(sideFileName), sideFile.size(),
                              runtime::fnv1a64(sideFile.data(), sideFile.size()),
                              runtime::xxh64(sideFile.data(), sideFile.size()));

  auto arena = func->getAttrOfType<IntegerAttr>(kernel::KernelDialect::kArenaBytesAttr);
  auto total = func->getAttrOfType<IntegerAttr>(kernel::KernelDialect::kBufferBytesAttr);
  stats.arenaBytes = arena ? arena.getInt() : 0;
  stats.bufferBytes = total ? total.getInt() : 0;
  auto producer = fbb.CreateString(options.producer);
  auto inputsV = fbb.CreateVector(inputs);
  auto outputsV = fbb.CreateVector(outputs);
  auto tensorsV = fbb.CreateVector(tensors);
  auto constantsV = fbb.CreateVector(constants);
  auto kernelsV = fbb.CreateVector(kernels);
  auto gemmsV = fbb.CreateVector(gemms);
  auto routinesV = fbb.CreateVector(routines);
  auto stepsV = fbb.CreateVector(steps);
  auto planV = fbb.CreateVector(plan);
  auto cudaProgram = addCudaProgram();
  auto statesV = fbb.CreateVector(states);
  sc::ModuleBuilder mb(fbb);
  // Each module is written as the oldest version that reads it right: 2
  // without state, 3 with it, 4 with a kernel that takes the error record
  // (which older runtimes would launch without it).
  mb.add_version(errorRecords     ? kErrorRecordSchemaVersion
                 : states.empty() ? kStatelessSchemaVersion
                                  : kStateSchemaVersion);
  mb.add_producer(producer);
  mb.add_inputs(inputsV);
  mb.add_outputs(outputsV);
  mb.add_tensors(tensorsV);
  mb.add_constants(constantsV);
  mb.add_kernels(kernelsV);
  mb.add_gemms(gemmsV);
  mb.add_routines(routinesV);
  mb.add_steps(stepsV);
  mb.add_arena_bytes(stats.arenaBytes);
  mb.add_buffer_bytes(stats.bufferBytes);
  mb.add_precision(planV);
  if (!sideFile.empty())
    mb.add_side_file(side);
  mb.add_content_hash(runtime::kContentHashPlaceholder);
  if (cuda)
    mb.add_cuda(cudaProgram);
  if (!states.empty())
    mb.add_state(statesV);
  fbb.Finish(mb.Finish(), sc::ModuleIdentifier());
}

} // namespace

namespace {

/// Loads `image` with the runtime's own loader (its side file given in
/// memory): compile never writes a module the runtime refuses, by the same
/// rules rather than a copy of them. The runtime names no op: its refusal
/// is an error at `func`, the graph the module was made of.
LogicalResult loadsInRuntime(const ModuleImage &image, func::FuncOp func) {
  mixprec_load_options_t options = MIXPREC_LOAD_OPTIONS_INIT;
  if (!image.sideFile.empty()) {
    options.side_file_data = image.sideFile.data();
    options.side_file_size = image.sideFile.size();
  }
  mixprec_module_t module = nullptr;
  if (mixprec_status_t s = mixprec_module_load_memory(image.module.data(), image.module.size(),
                                                      &options, &module)) {
    // A copy: the diagnostic keeps a `const char *` as a pointer.
    std::string why = mixprec_status_message(s);
    mixprec_status_free(s);
    return func.emitError() << "the runtime refuses the module: " << why;
  }
  mixprec_module_release(module);
  return success();
}

} // namespace

std::vector<PrecisionEntry> collectPrecisionPlan(func::FuncOp func) {
  std::vector<PrecisionEntry> plan;
  func.walk([&](Operation *op) {
    auto reason = op->getAttrOfType<StringAttr>(graph::GraphDialect::kReasonAttr);
    auto precision = op->getAttrOfType<TypeAttr>(graph::GraphDialect::kPrecisionAttr);
    if (reason && precision)
      plan.push_back({passes::opName(op), passes::opTypeName(op).str(),
                      passes::dtypeName(precision.getValue()), reason.str()});
  });
  return plan;
}

std::string sideFileNameFor(const std::string &path) {
  return llvm::sys::path::filename(path).str() + ".weights";
}

std::string sideFilePathFor(const std::string &path) {
  llvm::SmallString<256> sidePath(llvm::sys::path::parent_path(path));
  llvm::sys::path::append(sidePath, sideFileNameFor(path));
  return sidePath.str().str();
}

FailureOr<ModuleImage> buildModule(func::FuncOp func, const std::vector<PrecisionEntry> &precision,
                                   const std::string &sideFileName,
                                   const ModuleWriteOptions &options, ModuleStats &stats) {
  Writer writer(func, stats);
  ModuleImage image;
  if (failed(writer.build(precision, options, sideFileName, image.sideFile)))
    return failure();
  image.module.assign(writer.fbb.GetBufferPointer(),
                      writer.fbb.GetBufferPointer() + writer.fbb.GetSize());
  if (!runtime::sealModule(image.module.data(), image.module.size()))
    return func.emitError() << "the written module does not verify (a writer bug)";
  if (failed(loadsInRuntime(image, func)))
    return failure();
  return image;
}

bool writeModuleFiles(const std::string &path, const ModuleImage &image, std::string &error) {
  common::PendingFile module, side;
  if (!module.open(path, error))
    return false;
  module.write(image.module.data(), image.module.size());
  if (!image.sideFile.empty()) {
    if (!side.open(sideFilePathFor(path), error))
      return false;
    side.write(image.sideFile.data(), image.sideFile.size());
    // The side file first: a module is never in place without its weights.
    if (!side.commit(error))
      return false;
  }
  return module.commit(error);
}

} // namespace mixprec::codegen
