//===- Module.cpp - .mpk loading and verification --------------------------===//
//
// Loading, in order (each step only reads what the previous ones checked):
//  1. size and file identifier ("MPK1");
//  2. the FlatBuffers verifier (every offset, vector and string in bounds),
//     and the root table's fields inside the table;
//  3. the schema version (outside [kOldestSchemaVersion, kSchemaVersion]:
//     UNSUPPORTED_VERSION);
//  4. the content hash, when the writer sealed the module;
//  5. semantic verification: every index and size a backend will use
//     (tensors, arena placement, constants, kernel programs, the kernels'
//     CUDA program and launches, GEMMs, routine routines, steps, inputs,
//     outputs and state bindings);
//  6. the side file: size and FNV-1a 64, then constants point into it.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Module.h"

#include "runtime/format/KernelProgram.h"
#include "runtime/format/ModuleHash.h"
#include "runtime/src/Routines.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <sys/stat.h>
#include <unistd.h>

namespace mixprec::runtime {

/// FlatBuffers uses 32-bit offsets: no valid module is larger (and its
/// verifier asserts on larger buffers).
constexpr size_t kMaxModuleBytes = FLATBUFFERS_MAX_BUFFER_SIZE - 1;
/// Row reductions feeding row reductions (softmax 2, layer norm 2-3): each
/// level is one more pass over the row on a CPU.
constexpr int kMaxRowReductionDepth = 16;
/// Bounds on what one module may hold (kMaxProgramLength is another), far
/// above real plans, so that a forged count cannot make verification itself
/// run for hours.
constexpr size_t kMaxTables = 1 << 24;

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

AlignedBytes::~AlignedBytes() { std::free(data_); }

bool AlignedBytes::allocate(size_t size) {
  std::free(data_);
  data_ = nullptr;
  size_ = 0;
  void *p = nullptr;
  // At least one byte, so that an empty buffer still has an address.
  if (posix_memalign(&p, 64, size == 0 ? 1 : size) != 0)
    return false;
  data_ = static_cast<uint8_t *>(p);
  size_ = size;
  return true;
}

size_t dtypeSize(schema::DType dtype) {
  switch (dtype) {
  case schema::DType::F32:
  case schema::DType::I32:
    return 4;
  case schema::DType::F16:
  case schema::DType::BF16:
    return 2;
  case schema::DType::F8E4M3FN:
  case schema::DType::F8E5M2:
  case schema::DType::Bool:
    return 1;
  case schema::DType::I64:
    return 8;
  }
  return 0;
}

const char *dtypeName(schema::DType dtype) {
  switch (dtype) {
  case schema::DType::F32:
    return "f32";
  case schema::DType::F16:
    return "f16";
  case schema::DType::BF16:
    return "bf16";
  case schema::DType::F8E4M3FN:
    return "f8E4M3FN";
  case schema::DType::F8E5M2:
    return "f8E5M2";
  case schema::DType::I64:
    return "i64";
  case schema::DType::I32:
    return "i32";
  case schema::DType::Bool:
    return "bool";
  }
  return "unknown";
}

bool isFloatDType(schema::DType dtype) {
  return dtype == schema::DType::F32 || dtype == schema::DType::F16 ||
         dtype == schema::DType::BF16 || dtype == schema::DType::F8E4M3FN ||
         dtype == schema::DType::F8E5M2;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

bool shapeElements(const std::vector<int64_t> &shape, int64_t &elements) {
  elements = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxElements)
      return false;
    if (d == 0)
      empty = true;
    else if (__builtin_mul_overflow(elements, d, &elements) || elements > kMaxElements)
      return false;
  }
  if (empty)
    elements = 0;
  return true;
}

namespace {

std::string hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016" PRIx64, v);
  return buf;
}

/// The shape stored in a flatbuffers vector (null = rank 0).
std::vector<int64_t> toShape(const flatbuffers::Vector<int64_t> *v) {
  return v ? std::vector<int64_t>(v->begin(), v->end()) : std::vector<int64_t>();
}

/// Whether `from` broadcasts to `to` under numpy rules (right-aligned, each
/// dim equal or 1).
bool broadcastsTo(const std::vector<int64_t> &from, const std::vector<int64_t> &to) {
  if (from.size() > to.size())
    return false;
  size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[offset + i])
      return false;
  return true;
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// Reads a whole file into aligned memory. `what` names it in messages.
Status readFile(const std::string &path, size_t maxBytes, mixprec_status_code_t openError,
                const std::string &what, AlignedBytes &out) {
  // O_NONBLOCK: a FIFO is refused below instead of blocking the open.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return Status(openError, what + " '" + path + "' cannot be opened: " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status(openError, what + " '" + path + "' is not a regular file");
  }
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    ::close(fd);
    return Status(openError, what + " '" + path + "' cannot be opened: " + std::strerror(errno));
  }
  if (static_cast<uint64_t>(st.st_size) > maxBytes) {
    std::fclose(f);
    return Status(MIXPREC_INVALID_MODULE, what + " '" + path + "' is " +
                                              std::to_string(st.st_size) +
                                              " bytes, more than the " +
                                              std::to_string(maxBytes) + " it may have");
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (!out.allocate(size)) {
    std::fclose(f);
    return Status(MIXPREC_OUT_OF_MEMORY,
                  "cannot allocate " + std::to_string(size) + " bytes for " + what + " '" + path +
                      "'");
  }
  size_t got = size ? std::fread(out.data(), 1, size, f) : 0;
  std::fclose(f);
  if (got != size)
    return Status(MIXPREC_IO_ERROR, what + " '" + path + "': read " + std::to_string(got) +
                                        " of " + std::to_string(size) + " bytes");
  return okStatus();
}

/// The file identifier as text, hex-escaping anything unprintable.
std::string describeIdentifier(const uint8_t *id) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    char c = static_cast<char>(id[i]);
    if (c >= 0x20 && c < 0x7f) {
      s += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", id[i]);
      s += buf;
    }
  }
  return s;
}

/// Checks that every field of the verified root table lies inside the
/// table's own bytes. The FlatBuffers verifier keeps fields inside the
/// buffer only: a corrupted vtable entry could move content_hash onto zero
/// bytes elsewhere, which read as "unsealed" and switch the hash check off.
Status verifyRootFieldsInsideTable(const uint8_t *data) {
  const auto *table = reinterpret_cast<const flatbuffers::Table *>(schema::GetModule(data));
  const uint8_t *vtable = table->GetVTable();
  const auto vtableBytes = flatbuffers::ReadScalar<flatbuffers::voffset_t>(vtable);
  const auto tableBytes = flatbuffers::ReadScalar<flatbuffers::voffset_t>(vtable + 2);
  for (size_t i = 0; 4 + 2 * i + 2 <= vtableBytes; ++i) {
    const auto offset = flatbuffers::ReadScalar<flatbuffers::voffset_t>(vtable + 4 + 2 * i);
    // content_hash is 8 bytes; other fields at least start inside.
    const size_t bytes = 4 + 2 * i == schema::Module::VT_CONTENT_HASH ? 8 : 1;
    if (offset != 0 && offset + bytes > tableBytes)
      return invalidModule("field #" + std::to_string(i) + " of the module table lies outside it "
                           "(offset " + std::to_string(offset) + " of a " +
                           std::to_string(tableBytes) + "-byte table)");
  }
  return okStatus();
}

} // namespace

//===----------------------------------------------------------------------===//
// Semantic verification
//===----------------------------------------------------------------------===//

/// Checks every index and size of a FlatBuffers-verified module and fills
/// the module's decoded tables (tensors, gemms, routines, inputs, outputs).
class ModuleVerifier {
public:
  explicit ModuleVerifier(LoadedModule &module)
      : module(module), root(*module.root_), tensors(module.tensors_) {}

  Status run();

private:
  Status verifyAlignment();
  Status verifyTensors();
  Status verifyConstants();
  Status verifySideFileRecord();
  Status verifyKernel(size_t index);
  Status verifyAccess(const std::string &where, const schema::Instruction &inst,
                      const std::vector<int64_t> &space, int64_t spaceElements,
                      uint64_t &varyMask);
  /// Checks instruction #`j`'s operands (earlier instructions with a value;
  /// an Amax only stored, with all strides 0) and sets `mask` to the dims
  /// they vary along and `depth[j]` to their row-reduction depth.
  Status verifyOperands(const std::string &where, const schema::Instruction &inst, size_t j,
                        const flatbuffers::Vector<flatbuffers::Offset<schema::Instruction>> &program,
                        const std::vector<uint64_t> &vary, std::vector<int> &depth,
                        uint64_t &mask);
  /// Checks a Store of a value varying along `mask`: into a tensor that is no
  /// constant, in its dtype, an Amax only into a tensor with an element, and
  /// (when it runs over `runSpace`) no value varying along a dim it stays on.
  Status verifyStore(const std::string &where, const schema::Instruction &inst, bool storesAmax,
                     const std::vector<int64_t> &runSpace, bool runs, bool outerOnly,
                     uint64_t mask, uint64_t rowMask);
  Status verifyCudaProgram();
  Status verifyCudaLaunch(size_t index);
  /// Reads the fields every CudaLaunch has (function name unique among
  /// `cudaFunctions`, grid, block, params in range) into `d`, recording the
  /// function as `owner`'s; `fail` builds the error.
  Status readCudaLaunch(const schema::CudaLaunch &launch, const std::string &owner,
                        const std::function<Status(const std::string &)> &fail,
                        CudaLaunchDesc &d);
  Status verifyRoutineCudaLaunch(size_t index);
  Status verifyGemm(size_t index);
  Status verifySteps();
  Status verifyInputsOutputs();
  Status verifyStates();

  /// "tensor #3 'h'".
  std::string tensorName(size_t i) const {
    return "tensor #" + std::to_string(i) + " '" + tensors[i].name + "'";
  }
  bool validTensor(int64_t index) const {
    return index >= 0 && static_cast<uint64_t>(index) < tensors.size();
  }

  LoadedModule &module;
  const schema::Module &root;
  std::vector<TensorDesc> &tensors;
  /// Every CUDA function name so far, and the step whose it is.
  std::vector<std::string> cudaFunctions, cudaFunctionOwners;
};

/// The FlatBuffers verifier checks a vector's length word (4-byte
/// alignment) but not that 8-byte elements are 8-byte aligned; a forged
/// offset can misalign them, and reading them would be undefined behaviour.
Status ModuleVerifier::verifyAlignment() {
  auto aligned = [](const flatbuffers::Vector<int64_t> *v) {
    // Empty vectors have no element to read (and FlatBuffers does not align
    // them).
    return !v || v->size() == 0 ||
           reinterpret_cast<uintptr_t>(v->data()) % alignof(int64_t) == 0;
  };
  for (size_t i = 0; root.tensors() && i < root.tensors()->size(); ++i)
    if (!aligned(root.tensors()->Get(i)->shape()))
      return invalidModule("tensor #" + std::to_string(i) + ": shape vector is misaligned");
  for (size_t i = 0; root.kernels() && i < root.kernels()->size(); ++i) {
    const schema::Kernel *k = root.kernels()->Get(i);
    if (!aligned(k->shape()))
      return invalidModule("kernel #" + std::to_string(i) + ": shape vector is misaligned");
    for (size_t j = 0; k->program() && j < k->program()->size(); ++j)
      if (!aligned(k->program()->Get(j)->strides()))
        return invalidModule("kernel #" + std::to_string(i) + " instruction #" +
                             std::to_string(j) + ": strides vector is misaligned");
  }
  // Routine options lists: Routines.cpp checks them as it reads them.
  return okStatus();
}

Status ModuleVerifier::verifyTensors() {
  const auto *list = root.tensors();
  const size_t count = list ? list->size() : 0;
  const uint64_t arenaBytes = root.arena_bytes();
  const size_t constantCount = root.constants() ? root.constants()->size() : 0;
  tensors.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const schema::Tensor *t = list->Get(i);
    TensorDesc &d = tensors[i];
    d.name = t->name() && t->name()->size() ? t->name()->str() : "tensor#" + std::to_string(i);
    d.dtype = t->dtype();
    if (dtypeSize(d.dtype) == 0)
      return invalidModule(tensorName(i) + " has unknown dtype " +
                           std::to_string(static_cast<int>(d.dtype)));
    d.shape = toShape(t->shape());
    if (d.shape.size() > kMaxRank)
      return invalidModule(tensorName(i) + " has rank " + std::to_string(d.shape.size()) +
                           ", more than " + std::to_string(kMaxRank));
    if (!shapeElements(d.shape, d.elements))
      return invalidModule(tensorName(i) + " has shape " + formatShape(d.shape) +
                           " (a negative dim, or more than 2^48 elements)");
    d.bytes = static_cast<uint64_t>(d.elements) * dtypeSize(d.dtype);
    const int32_t c = t->constant();
    if (c < -1 || (c >= 0 && static_cast<size_t>(c) >= constantCount))
      return invalidModule(tensorName(i) + " refers to constant " + std::to_string(c) +
                           " of " + std::to_string(constantCount));
    d.constantIndex = c;
    if (c >= 0)
      continue;
    d.offset = t->offset();
    if (d.offset % kArenaAlignment != 0)
      return invalidModule(tensorName(i) + " has arena offset " + std::to_string(d.offset) +
                           ", not a multiple of " + std::to_string(kArenaAlignment));
    if (d.offset > arenaBytes || d.bytes > arenaBytes - d.offset)
      return invalidModule(tensorName(i) + " occupies arena bytes [" + std::to_string(d.offset) +
                           ", " + std::to_string(d.offset + d.bytes) + "), beyond arena_bytes " +
                           std::to_string(arenaBytes));
    uint64_t end = d.offset + d.bytes;
    end = (end + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    module.arenaBytesNeeded_ = std::max(module.arenaBytesNeeded_, std::min(end, arenaBytes));
  }
  return okStatus();
}

Status ModuleVerifier::verifySideFileRecord() {
  const schema::SideFile *side = root.side_file();
  if (!side)
    return okStatus();
  std::string path = side->path() ? side->path()->str() : "";
  if (path.empty())
    return invalidModule("the side file record has no path");
  // Relative and inside the module's directory: a module cannot make the
  // runtime read arbitrary files, and stays relocatable.
  if (path[0] == '/')
    return invalidModule("side file path '" + path + "' is absolute; it must be relative");
  if (path == ".." || path.rfind("../", 0) == 0 || path.find("/../") != std::string::npos ||
      (path.size() >= 3 && path.compare(path.size() - 3, 3, "/..") == 0))
    return invalidModule("side file path '" + path + "' leaves the module's directory");
  if (path.find('\0') != std::string::npos)
    return invalidModule("side file path contains a NUL byte");
  return okStatus();
}

Status ModuleVerifier::verifyConstants() {
  const auto *list = root.constants();
  const size_t count = list ? list->size() : 0;
  const schema::SideFile *side = root.side_file();
  std::vector<uint64_t> sizes(count);
  for (size_t c = 0; c < count; ++c) {
    const schema::Constant *k = list->Get(c);
    const std::string what = "constant #" + std::to_string(c);
    if (k->data()) {
      if (k->external_offset() != 0 || k->external_size() != 0)
        return invalidModule(what + " has both inline data and a side-file range");
      sizes[c] = k->data()->size();
      continue;
    }
    sizes[c] = k->external_size();
    if (sizes[c] == 0)
      continue;
    if (!side)
      return invalidModule(what + " lives in a side file, but the module names none");
    if (k->external_offset() > side->size() || sizes[c] > side->size() - k->external_offset())
      return invalidModule(what + " reads side-file bytes [" +
                           std::to_string(k->external_offset()) + ", +" +
                           std::to_string(sizes[c]) + ") of a " + std::to_string(side->size()) +
                           "-byte side file");
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorDesc &d = tensors[i];
    if (!d.isConstant())
      continue;
    if (sizes[d.constantIndex] != d.bytes)
      return invalidModule(tensorName(i) + " (" + dtypeName(d.dtype) + " " +
                           formatShape(d.shape) + ") needs " + std::to_string(d.bytes) +
                           " bytes, constant #" + std::to_string(d.constantIndex) + " holds " +
                           std::to_string(sizes[d.constantIndex]));
    if (d.bytes == 0)
      continue;
    // Backends read elements in place: they must be naturally aligned.
    const schema::Constant *k = list->Get(d.constantIndex);
    uint64_t position = k->data() ? static_cast<uint64_t>(k->data()->data() -
                                                          module.buffer_.data())
                                  : k->external_offset();
    if (position % dtypeSize(d.dtype) != 0)
      return invalidModule(tensorName(i) + ": constant #" + std::to_string(d.constantIndex) +
                           " data at byte " + std::to_string(position) +
                           " is not aligned to its " + std::to_string(dtypeSize(d.dtype)) +
                           "-byte elements");
  }
  return okStatus();
}

/// Checks a Load/Store: tensor index, stride count, and that every point of
/// the iteration space addresses an element inside the tensor.
Status ModuleVerifier::verifyAccess(const std::string &where, const schema::Instruction &inst,
                                    const std::vector<int64_t> &space, int64_t spaceElements,
                                    uint64_t &varyMask) {
  const int32_t t = inst.tensor();
  if (!validTensor(t))
    return invalidModule(where + ": tensor index " + std::to_string(t) + " out of range (" +
                         std::to_string(tensors.size()) + " tensors)");
  const TensorDesc &d = tensors[t];
  const auto *strides = inst.strides();
  const size_t rank = space.size();
  if ((strides ? strides->size() : 0) != rank)
    return invalidModule(where + ": " + std::to_string(strides ? strides->size() : 0) +
                         " strides for a rank-" + std::to_string(rank) + " iteration space");
  varyMask = 0;
  if (spaceElements == 0)
    return okStatus();
  // Lowest and highest element offset over the space, in 128 bits.
  __int128 low = 0, high = 0;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t s = strides->Get(i);
    if (space[i] > 1 && s != 0)
      varyMask |= uint64_t(1) << i;
    const __int128 reach = static_cast<__int128>(space[i] - 1) * s;
    (s < 0 ? low : high) += reach;
  }
  if (low < 0 || high >= d.elements)
    return invalidModule(where + ": strides reach element offsets [" +
                         std::to_string(static_cast<long long>(low)) + ", " +
                         std::to_string(static_cast<long long>(high)) + "] of " + tensorName(t) +
                         ", which has " + std::to_string(d.elements) + " elements");
  return okStatus();
}

Status ModuleVerifier::verifyKernel(size_t index) {
  const schema::Kernel &kernel = *root.kernels()->Get(index);
  const std::string name = module.kernelName(index);
  const std::vector<int64_t> space = toShape(kernel.shape());
  if (space.size() > kMaxRank)
    return invalidModule(name + ": iteration space has rank " + std::to_string(space.size()) +
                         ", more than " + std::to_string(kMaxRank));
  int64_t spaceElements = 0;
  if (!shapeElements(space, spaceElements))
    return invalidModule(name + ": iteration space " + formatShape(space) +
                         " has a negative dim or more than 2^48 points");
  const int32_t rowDims = kernel.row_dims();
  if (rowDims < 0 || static_cast<size_t>(rowDims) > space.size())
    return invalidModule(name + ": row_dims " + std::to_string(rowDims) +
                         " out of range for a rank-" + std::to_string(space.size()) + " space");
  uint64_t rowMask = 0;
  for (size_t d = space.size() - rowDims; d < space.size(); ++d)
    rowMask |= uint64_t(1) << d;
  // Empty rows in a non-empty outer space: each row reduction is its
  // identity, and the backends store the values that do not walk the row
  // dims once per outer point, over the space with the row dims as 1.
  std::vector<int64_t> outerSpace = space;
  for (size_t d = space.size() - rowDims; d < space.size(); ++d)
    outerSpace[d] = 1;
  int64_t outerElements = 0;
  shapeElements(outerSpace, outerElements);
  const bool emptyRows = spaceElements == 0 && outerElements > 0;
  auto walksRow = [&](const schema::Instruction &inst) {
    if (!inst.strides() || inst.strides()->size() != space.size())
      return false; // verifyAccess reports it
    for (size_t d = space.size() - rowDims; d < space.size(); ++d)
      if (inst.strides()->Get(d) != 0)
        return true;
    return false;
  };

  const auto *program = kernel.program();
  const size_t length = program ? program->size() : 0;
  if (length > kMaxProgramLength)
    return invalidModule(name + ": program has " + std::to_string(length) +
                         " instructions, more than " + std::to_string(kMaxProgramLength));
  // Per instruction: the dims along which its value varies, and how many
  // nested row reductions it depends on.
  std::vector<uint64_t> vary(length, 0);
  std::vector<int> depth(length, 0);
  uint64_t walked = 0; // dims some Load or Store advances along
  for (size_t j = 0; j < length; ++j) {
    const schema::Instruction &inst = *program->Get(j);
    const schema::OpCode op = inst.opcode();
    const std::string where = name + " instruction #" + std::to_string(j) + " (" +
                              opcodeName(op) + ")";
    const int expected = operandCount(op);
    if (expected < 0)
      return invalidModule(name + " instruction #" + std::to_string(j) + ": unknown opcode " +
                           std::to_string(static_cast<int>(op)));
    const auto *operands = inst.operands();
    const size_t got = operands ? operands->size() : 0;
    if (got != static_cast<size_t>(expected))
      return invalidModule(where + ": takes " + std::to_string(expected) + " operands, has " +
                           std::to_string(got));
    uint64_t mask = 0;
    if (Status s = verifyOperands(where, inst, j, *program, vary, depth, mask); !s.ok())
      return s;
    if (isRowReduction(op) && ++depth[j] > kMaxRowReductionDepth)
      return invalidModule(where + ": row reductions nest more than " +
                           std::to_string(kMaxRowReductionDepth) + " deep");
    switch (op) {
    case schema::OpCode::Load:
    case schema::OpCode::Store: {
      // With empty rows, an access that does not walk them runs once per
      // outer point (bounded there); one that walks them never runs.
      const bool outerOnly = emptyRows && !walksRow(inst);
      const std::vector<int64_t> &runSpace = outerOnly ? outerSpace : space;
      uint64_t accessMask = 0;
      if (Status s = verifyAccess(where, inst, runSpace,
                                  outerOnly ? outerElements : spaceElements, accessMask);
          !s.ok())
        return s;
      walked |= accessMask;
      if (emptyRows && !outerOnly)
        accessMask |= rowMask; // reads the elements of an empty row
      if (op == schema::OpCode::Load) {
        mask = accessMask;
        break;
      }
      const bool storesAmax =
          program->Get(operands->Get(0))->opcode() == schema::OpCode::Amax;
      if (Status s = verifyStore(where, inst, storesAmax, runSpace,
                                 !(spaceElements == 0 && !outerOnly), outerOnly, mask, rowMask);
          !s.ok())
        return s;
      break;
    }
    case schema::OpCode::Cast:
      if (dtypeSize(inst.dtype()) == 0)
        return invalidModule(where + ": unknown dtype " +
                             std::to_string(static_cast<int>(inst.dtype())));
      break;
    case schema::OpCode::Quantize:
      if (inst.dtype() != schema::DType::F8E4M3FN && inst.dtype() != schema::DType::F8E5M2)
        return invalidModule(where + ": dtype must be F8E4M3FN or F8E5M2, got " +
                             dtypeName(inst.dtype()));
      break;
    case schema::OpCode::RowSum:
    case schema::OpCode::RowMax:
      mask &= ~rowMask;
      break;
    case schema::OpCode::Amax:
      mask = 0;
      break;
    default:
      break;
    }
    vary[j] = mask;
  }
  // Every dim of the space must be walked by some access: one that none
  // walks only repeats work. A space larger than every tensor it touches is
  // legitimate (a[N,1] + b[1,M] summed: N*M points, no N*M tensor); this
  // bounds it by the products of the tensors' extents.
  for (size_t i = 0; spaceElements > 0 && i < space.size(); ++i)
    if (space[i] > 1 && !(walked & (uint64_t(1) << i)))
      return invalidModule(name + ": iteration space " + formatShape(space) + ": no Load or " +
                           "Store walks dim " + std::to_string(i) + " (size " +
                           std::to_string(space[i]) + "), which would only repeat work");
  return okStatus();
}

/// Checks instruction #`j`'s operands (earlier instructions with a value;
/// an Amax only stored, with all strides 0) and sets `mask` to the dims
/// they vary along and `depth[j]` to their row-reduction depth.
Status ModuleVerifier::verifyOperands(
    const std::string &where, const schema::Instruction &inst, size_t j,
    const flatbuffers::Vector<flatbuffers::Offset<schema::Instruction>> &program,
    const std::vector<uint64_t> &vary, std::vector<int> &depth, uint64_t &mask) {
  const schema::OpCode op = inst.opcode();
  const auto *operands = inst.operands();
  const size_t got = operands ? operands->size() : 0;
  for (size_t o = 0; o < got; ++o) {
    const int32_t r = operands->Get(o);
    if (r < 0 || static_cast<size_t>(r) >= j)
      return invalidModule(where + ": operand " + std::to_string(r) +
                           " is not an earlier instruction");
    const schema::OpCode producer = program.Get(r)->opcode();
    if (producer == schema::OpCode::Store)
      return invalidModule(where + ": operand " + std::to_string(r) +
                           " is a Store, which has no value");
    if (producer == schema::OpCode::Amax &&
        !(op == schema::OpCode::Store && inst.strides() &&
          std::all_of(inst.strides()->begin(), inst.strides()->end(),
                      [](int64_t s) { return s == 0; })))
      return invalidModule(where + ": the Amax of instruction #" + std::to_string(r) +
                           " may only be stored, with all strides 0 (it is known only when "
                           "the whole kernel has run)");
    mask |= vary[r];
    depth[j] = std::max(depth[j], depth[r]);
  }
  return okStatus();
}

/// Checks a Store of a value varying along `mask`: into a tensor that is no
/// constant, in its dtype, an Amax only into a tensor with an element, and
/// (when it runs over `runSpace`) no value varying along a dim it stays on.
Status ModuleVerifier::verifyStore(const std::string &where, const schema::Instruction &inst,
                                   bool storesAmax, const std::vector<int64_t> &runSpace,
                                   bool runs, bool outerOnly, uint64_t mask,
                                   uint64_t rowMask) {
  const TensorDesc &d = tensors[inst.tensor()];
  if (d.isConstant())
    return invalidModule(where + ": stores to " + tensorName(inst.tensor()) +
                         ", a constant");
  if (inst.dtype() != d.dtype)
    return invalidModule(where + ": dtype " + dtypeName(inst.dtype()) + " but " +
                         tensorName(inst.tensor()) + " is " + dtypeName(d.dtype));
  // An Amax's Store writes element 0 once the kernel has run, even over
  // an empty space (the amax of no values is 0).
  if (storesAmax && d.elements == 0)
    return invalidModule(where + ": stores an Amax into " + tensorName(inst.tensor()) +
                         ", which has no element");
  if (!runs)
    return okStatus(); // never runs
  // A value that varies along a dim the Store does not advance on would
  // be written to one element from many points: a race on a GPU.
  uint64_t fixedDims = 0;
  for (size_t i = 0; i < runSpace.size(); ++i)
    if (runSpace[i] > 1 && inst.strides()->Get(i) == 0)
      fixedDims |= uint64_t(1) << i;
  if (uint64_t clash = mask & fixedDims) {
    int dim = __builtin_ctzll(clash);
    return invalidModule(where + ": the stored value varies along dim " +
                         std::to_string(dim) + " but the stride there is 0");
  }
  if (outerOnly && (mask & rowMask))
    return invalidModule(where + ": the stored value reads the elements of an empty row, "
                                 "but the Store does not walk the row dims");
  return okStatus();
}

Status ModuleVerifier::verifyGemm(size_t index) {
  const schema::Gemm &g = *root.gemms()->Get(index);
  GemmDesc d;
  d.name = "gemm #" + std::to_string(index);
  if (g.name() && g.name()->size())
    d.name += " '" + g.name()->str() + "'";
  auto fail = [&](const std::string &what) { return invalidModule(d.name + ": " + what); };

  struct Operand {
    const char *role;
    int32_t index;
    bool optional;
  } operands[] = {{"a", g.a(), false},          {"b", g.b(), false},
                  {"out", g.out(), false},      {"bias", g.bias(), true},
                  {"a_scale", g.a_scale(), true}, {"b_scale", g.b_scale(), true}};
  for (const Operand &o : operands) {
    if (o.optional && o.index == -1)
      continue;
    if (!validTensor(o.index))
      return fail(std::string(o.role) + " tensor index " + std::to_string(o.index) +
                  " out of range (" + std::to_string(tensors.size()) + " tensors)");
    if (!isFloatDType(tensors[o.index].dtype))
      return fail(std::string(o.role) + " " + tensorName(o.index) + " must be a float tensor, got " +
                  dtypeName(tensors[o.index].dtype));
  }
  d.a = g.a();
  d.b = g.b();
  d.out = g.out();
  d.bias = g.bias();
  d.aScale = g.a_scale();
  d.bScale = g.b_scale();
  if (tensors[d.out].isConstant())
    return fail("out " + tensorName(d.out) + " is a constant");
  if ((d.aScale == -1) != (d.bScale == -1))
    return fail("a_scale and b_scale come in pairs");
  for (int32_t s : {d.aScale, d.bScale})
    if (s != -1 && (tensors[s].dtype != schema::DType::F32 || tensors[s].elements != 1))
      return fail("scale " + tensorName(s) + " must be one f32 element");

  d.m = g.m();
  d.n = g.n();
  d.k = g.k();
  d.batch = g.batch();
  d.strideA = g.batch_stride_a();
  d.strideB = g.batch_stride_b();
  d.strideOut = g.batch_stride_out();
  d.transB = g.trans_b();
  d.tf32 = g.tf32();
  for (int64_t v : {d.m, d.n, d.k, d.strideA, d.strideB, d.strideOut})
    if (v < 0 || v > kMaxElements)
      return fail("m, n, k and batch strides must lie in [0, 2^48]; got m=" +
                  std::to_string(d.m) + " n=" + std::to_string(d.n) + " k=" +
                  std::to_string(d.k) + " strides " + std::to_string(d.strideA) + "/" +
                  std::to_string(d.strideB) + "/" + std::to_string(d.strideOut));
  if (d.batch < 1 || d.batch > kMaxElements)
    return fail("batch " + std::to_string(d.batch) + " out of range [1, 2^48]");

  // Each operand's last batch must end inside its tensor (also when a
  // batch is empty: the backend still offsets pointers by the strides).
  auto extent = [&](int64_t rows, int64_t cols, int64_t stride, int32_t t,
                    const char *role) -> Status {
    const __int128 per = static_cast<__int128>(rows) * cols;
    const __int128 end = static_cast<__int128>(d.batch - 1) * stride + per;
    if (end > tensors[t].elements)
      return fail(std::string(role) + " needs " + std::to_string(static_cast<long long>(end)) +
                  " elements (batch " + std::to_string(d.batch) + ", stride " +
                  std::to_string(stride) + ", " + std::to_string(rows) + "x" +
                  std::to_string(cols) + "), " + tensorName(t) + " has " +
                  std::to_string(tensors[t].elements));
    return okStatus();
  };
  if (Status s = extent(d.m, d.k, d.strideA, d.a, "a"); !s.ok())
    return s;
  if (Status s = extent(d.k, d.n, d.strideB, d.b, "b"); !s.ok())
    return s;
  if (Status s = extent(d.m, d.n, d.strideOut, d.out, "out"); !s.ok())
    return s;
  const int64_t mn = d.m * d.n; // both <= 2^48 and m*n <= out elements
  if (d.batch > 1 && mn > 0 && d.strideOut < mn)
    return fail("batch_stride_out " + std::to_string(d.strideOut) +
                " makes the batches' outputs overlap (m*n = " + std::to_string(mn) + ")");

  const auto epilogue = g.epilogue();
  const bool hasBias = epilogue == schema::Epilogue::Bias ||
                       epilogue == schema::Epilogue::BiasRelu ||
                       epilogue == schema::Epilogue::BiasGelu;
  if (static_cast<int>(epilogue) > static_cast<int>(schema::Epilogue::BiasGelu))
    return fail("unknown epilogue " + std::to_string(static_cast<int>(epilogue)));
  d.relu = epilogue == schema::Epilogue::Relu || epilogue == schema::Epilogue::BiasRelu;
  d.gelu = epilogue == schema::Epilogue::Gelu || epilogue == schema::Epilogue::BiasGelu;
  if (hasBias != (d.bias != -1))
    return fail(std::string("epilogue ") + schema::EnumNameEpilogue(epilogue) +
                (hasBias ? " needs a bias tensor" : " takes no bias, but one is given"));
  if (d.bias != -1) {
    const TensorDesc &out = tensors[d.out], &bias = tensors[d.bias];
    const __int128 total = static_cast<__int128>(d.batch) * mn;
    if (out.elements != total || (d.batch > 1 && d.strideOut != mn))
      return fail("a bias needs a dense output of batch*m*n = " +
                  std::to_string(static_cast<long long>(total)) + " elements; " +
                  tensorName(d.out) + " has " + std::to_string(out.elements) +
                  " with batch stride " + std::to_string(d.strideOut));
    const std::vector<int64_t> flat = {d.batch * d.m, d.n};
    if (broadcastsTo(bias.shape, out.shape))
      d.biasTarget = out.shape;
    else if (broadcastsTo(bias.shape, flat))
      d.biasTarget = flat;
    else
      return fail("bias " + tensorName(d.bias) + " " + formatShape(bias.shape) +
                  " broadcasts neither to the output " + formatShape(out.shape) + " nor to " +
                  formatShape(flat));
  }
  module.gemms_.push_back(std::move(d));
  return okStatus();
}

/// Whether `name` is a C identifier (what cuModuleGetFunction can find).
static bool isCIdentifier(const std::string &name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

Status ModuleVerifier::verifyCudaProgram() {
  const schema::CudaProgram *cuda = root.cuda();
  const size_t kernels = root.kernels() ? root.kernels()->size() : 0;
  if (!cuda) {
    // Launches without a program to launch them from.
    for (size_t i = 0; i < kernels; ++i)
      if (root.kernels()->Get(i)->cuda())
        return invalidModule(module.kernelName(i) +
                             " has a CUDA launch, but the module has no CUDA program");
    return okStatus();
  }
  if (cuda->sm_version() <= 0)
    return invalidModule("the CUDA program's sm_version " + std::to_string(cuda->sm_version()) +
                         " is not an architecture");
  const bool hasPtx = cuda->ptx() && cuda->ptx()->size() > 0;
  const bool hasCubin = cuda->cubin() && cuda->cubin()->size() > 0;
  if (!hasPtx && !hasCubin)
    return invalidModule("the CUDA program has neither PTX nor a CUBIN");
  for (size_t i = 0; i < kernels; ++i)
    if (Status s = verifyCudaLaunch(i); !s.ok())
      return s;
  return okStatus();
}

Status ModuleVerifier::readCudaLaunch(const schema::CudaLaunch &launch, const std::string &owner,
                                      const std::function<Status(const std::string &)> &fail,
                                      CudaLaunchDesc &d) {
  d.function = launch.function() ? launch.function()->str() : "";
  if (!isCIdentifier(d.function))
    return fail("function name '" + d.function + "' is not a C identifier");
  for (size_t i = 0; i < cudaFunctions.size(); ++i)
    if (cudaFunctions[i] == d.function)
      return fail("function '" + d.function + "' is also " + cudaFunctionOwners[i] + "'s");
  cudaFunctions.push_back(d.function);
  cudaFunctionOwners.push_back(owner);
  d.gridSize = launch.grid_size();
  if (d.gridSize < 0 || d.gridSize > INT32_MAX)
    return fail("grid_size " + std::to_string(d.gridSize) + " out of range [0, 2^31-1]");
  d.blockSize = launch.block_size();
  if (d.blockSize < 32 || d.blockSize > 1024 || d.blockSize % 32 != 0)
    return fail("block_size " + std::to_string(d.blockSize) +
                " is not a multiple of 32 in [32, 1024]");
  d.rowKernel = launch.row_kernel();
  if (launch.params())
    d.params.assign(launch.params()->begin(), launch.params()->end());
  for (size_t i = 0; i < d.params.size(); ++i)
    if (!validTensor(d.params[i]))
      return fail("parameter #" + std::to_string(i) + " is tensor " +
                  std::to_string(d.params[i]) + " of " + std::to_string(tensors.size()));
  d.errorRecord = launch.error_record();
  // A v3 reader would launch the kernel without the record: the writer
  // says version 4.
  if (d.errorRecord && root.version() < 4)
    return fail("takes the error record, which needs schema version 4 (the module says " +
                std::to_string(root.version()) + ")");
  return okStatus();
}

/// Checks Routine.cuda of (verified) routine `index`: a launch like a
/// kernel's, passed the routine's inputs then its output, which overlaps
/// none of them (the CPU routine copies through scratch then; a kernel
/// cannot); records it.
Status ModuleVerifier::verifyRoutineCudaLaunch(size_t index) {
  const RoutineOp &op = module.routines_[index];
  const schema::CudaLaunch *launch = root.routines()->Get(index)->cuda();
  if (!launch) {
    module.routineCudaLaunches_.push_back(std::nullopt);
    return okStatus();
  }
  if (!root.cuda())
    return invalidModule(op.name + " has a CUDA launch, but the module has no CUDA program");
  auto fail = [&](const std::string &why) {
    return invalidModule(op.name + ": CUDA launch: " + why);
  };
  CudaLaunchDesc d;
  if (Status s = readCudaLaunch(*launch, op.name, fail, d); !s.ok())
    return s;
  std::vector<int32_t> expected;
  for (int32_t t : op.inputs)
    if (t >= 0)
      expected.push_back(t);
  expected.push_back(op.output);
  if (d.params != expected)
    return fail(std::to_string(d.params.size()) + " parameters are not the routine's " +
                std::to_string(expected.size() - 1) + " inputs and its output, in order");
  if (launch->zeroed() && launch->zeroed()->size())
    return fail("a routine zeroes no tensor");
  // The CUDA backend words the errors of these routines only.
  if (d.errorRecord && op.kind != RoutineKind::Gather && op.kind != RoutineKind::GatherElements &&
      op.kind != RoutineKind::ScatterNd)
    return fail("takes the error record, which only gather, gather_elements and scatter_nd "
                "kernels report into");
  const TensorDesc &y = tensors[op.output];
  for (int32_t t : expected) {
    const TensorDesc &x = tensors[t];
    if (t == op.output || x.isConstant() || !x.bytes || !y.bytes)
      continue;
    if (x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes)
      return fail("the output " + tensorName(op.output) + " overlaps the input " +
                  tensorName(t) + " (a kernel cannot copy through scratch)");
  }
  module.routineCudaLaunches_.push_back(std::move(d));
  return okStatus();
}

/// Checks Kernel.cuda of kernel `index` against its (verified) program and
/// the names in `functions` (each kernel's, so far); records it.
Status ModuleVerifier::verifyCudaLaunch(size_t index) {
  const schema::Kernel &kernel = *root.kernels()->Get(index);
  const std::string name = module.kernelName(index);
  const schema::CudaLaunch *launch = kernel.cuda();
  if (!launch)
    return invalidModule(name + " has no CUDA launch, but the module has a CUDA program (every "
                                "kernel needs one)");
  auto fail = [&](const std::string &why) { return invalidModule(name + ": CUDA launch: " + why); };
  CudaLaunchDesc d;
  if (Status s = readCudaLaunch(*launch, name, fail, d); !s.ok())
    return s;
  // The parameters are the program's Load tensors, then its Store tensors;
  // the zeroed ones are F32 tensors an Amax is stored into.
  std::vector<int32_t> loads, stores, amaxStores;
  const auto *program = kernel.program();
  for (size_t j = 0; program && j < program->size(); ++j) {
    const schema::Instruction &inst = *program->Get(j);
    if (inst.opcode() == schema::OpCode::Load)
      loads.push_back(inst.tensor());
    if (inst.opcode() != schema::OpCode::Store)
      continue;
    stores.push_back(inst.tensor());
    if (program->Get(inst.operands()->Get(0))->opcode() == schema::OpCode::Amax)
      amaxStores.push_back(inst.tensor());
  }
  std::vector<int32_t> expected = loads;
  expected.insert(expected.end(), stores.begin(), stores.end());
  if (d.errorRecord)
    return fail("only routine kernels take the error record");
  if (d.params != expected)
    return fail(std::to_string(d.params.size()) + " parameters do not match the program's " +
                std::to_string(loads.size()) + " loaded and " + std::to_string(stores.size()) +
                " stored tensors, in order");
  if (launch->zeroed())
    d.zeroed.assign(launch->zeroed()->begin(), launch->zeroed()->end());
  for (int32_t t : d.zeroed) {
    if (!validTensor(t))
      return fail("zeroed tensor " + std::to_string(t) + " of " + std::to_string(tensors.size()));
    if (std::find(amaxStores.begin(), amaxStores.end(), t) == amaxStores.end() ||
        tensors[t].dtype != schema::DType::F32)
      return fail("zeroes " + tensorName(t) +
                  ", which is not an F32 tensor the kernel stores an Amax into");
  }
  module.cudaLaunches_.push_back(std::move(d));
  return okStatus();
}

Status ModuleVerifier::verifySteps() {
  const auto *steps = root.steps();
  const size_t count = steps ? steps->size() : 0;
  const size_t kernels = root.kernels() ? root.kernels()->size() : 0;
  const size_t gemms = root.gemms() ? root.gemms()->size() : 0;
  const size_t routines = root.routines() ? root.routines()->size() : 0;
  for (size_t i = 0; i < count; ++i) {
    const schema::Step *step = steps->Get(i);
    size_t limit = 0;
    switch (step->kind()) {
    case schema::StepKind::Kernel:
      limit = kernels;
      break;
    case schema::StepKind::Gemm:
      limit = gemms;
      break;
    case schema::StepKind::Routine:
      limit = routines;
      break;
    default:
      return invalidModule("step #" + std::to_string(i) + " has unknown kind " +
                           std::to_string(static_cast<int>(step->kind())));
    }
    if (step->index() >= limit)
      return invalidModule("step #" + std::to_string(i) + " runs " +
                           schema::EnumNameStepKind(step->kind()) + " #" +
                           std::to_string(step->index()) + " of " + std::to_string(limit));
  }
  return okStatus();
}

Status ModuleVerifier::verifyInputsOutputs() {
  // Names identify inputs and outputs (find_input/find_output): two of one
  // name must be one tensor, listed twice (an ONNX graph may list an output
  // twice; only outputs may repeat, as binding one input twice means nothing).
  auto collect = [&](const flatbuffers::Vector<uint32_t> *list, const char *role,
                     std::vector<uint32_t> &out) -> Status {
    const bool repeatable = std::string(role) == "output";
    for (size_t i = 0; list && i < list->size(); ++i) {
      uint32_t t = list->Get(i);
      if (t >= tensors.size())
        return invalidModule(std::string(role) + " #" + std::to_string(i) + " is tensor " +
                             std::to_string(t) + " of " + std::to_string(tensors.size()));
      for (uint32_t other : out)
        if (tensors[other].name == tensors[t].name && !(repeatable && other == t))
          return invalidModule("two " + std::string(role) + "s are named '" + tensors[t].name +
                               "'");
      out.push_back(t);
    }
    return okStatus();
  };
  if (Status s = collect(root.inputs(), "input", module.inputs_); !s.ok())
    return s;
  for (uint32_t t : module.inputs_)
    if (tensors[t].isConstant())
      return invalidModule("input " + tensorName(t) + " is a constant");
  return collect(root.outputs(), "output", module.outputs_);
}

/// State bindings (v3): indices in range, a unique non-empty name, a state
/// tensor that is an activation and no input, an update of its dtype and
/// shape, an initial constant of exactly its bytes. A state's bytes are
/// replaced after every run, so no input or output may share them, and no
/// update may share another state's (committing one would change the next).
Status ModuleVerifier::verifyStates() {
  const auto *list = root.state();
  const size_t constants = root.constants() ? root.constants()->size() : 0;
  auto shares = [&](uint32_t a, uint32_t b) {
    const TensorDesc &x = tensors[a], &y = tensors[b];
    if (x.isConstant() || y.isConstant() || x.bytes == 0 || y.bytes == 0)
      return false;
    return x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
  };
  for (size_t i = 0; list && i < list->size(); ++i) {
    const schema::StateBinding *b = list->Get(i);
    std::string what = "state #" + std::to_string(i);
    if (!b->name() || b->name()->size() == 0)
      return invalidModule(what + " has no name");
    StateDesc d;
    d.name = b->name()->str();
    what += " '" + d.name + "'";
    for (const StateDesc &other : module.states_)
      if (other.name == d.name)
        return invalidModule("two states are named '" + d.name + "'");
    if (b->input() >= tensors.size() || b->output() >= tensors.size())
      return invalidModule(what + ": tensor " + std::to_string(b->input()) + " (state) or " +
                           std::to_string(b->output()) + " (update) of " +
                           std::to_string(tensors.size()));
    if (b->initial() >= constants)
      return invalidModule(what + ": initial value is constant " +
                           std::to_string(b->initial()) + " of " + std::to_string(constants));
    d.tensor = b->input();
    d.update = b->output();
    const TensorDesc &t = tensors[d.tensor], &u = tensors[d.update];
    if (t.isConstant())
      return invalidModule(what + " is " + tensorName(d.tensor) + ", a constant");
    if (u.dtype != t.dtype || u.shape != t.shape)
      return invalidModule(what + " is " + dtypeName(t.dtype) + " " + formatShape(t.shape) +
                           ", its update " + tensorName(d.update) + " is " +
                           dtypeName(u.dtype) + " " + formatShape(u.shape));
    const schema::Constant *c = root.constants()->Get(b->initial());
    const uint64_t size = c->data() ? c->data()->size() : c->external_size();
    if (size != t.bytes)
      return invalidModule(what + " (" + dtypeName(t.dtype) + " " + formatShape(t.shape) +
                           ") needs " + std::to_string(t.bytes) + " bytes, its initial value "
                           "(constant #" + std::to_string(b->initial()) + ") holds " +
                           std::to_string(size));
    for (uint32_t in : module.inputs_)
      if (in == d.tensor || shares(in, d.tensor))
        return invalidModule(what + " shares its bytes with input " + tensorName(in));
    for (uint32_t out : module.outputs_)
      if (out == d.tensor || shares(out, d.tensor))
        return invalidModule(what + " shares its bytes with output " + tensorName(out) +
                             ", which a run would replace after writing it");
    module.states_.push_back(std::move(d));
  }
  for (const StateDesc &a : module.states_)
    for (const StateDesc &b : module.states_)
      if (&a != &b && shares(a.update, b.tensor))
        return invalidModule("the update of state '" + a.name + "' shares its bytes with state '" +
                             b.name + "'");
  return okStatus();
}

Status ModuleVerifier::run() {
  if (Status s = verifyAlignment(); !s.ok())
    return s;
  if (Status s = verifyTensors(); !s.ok())
    return s;
  if (Status s = verifySideFileRecord(); !s.ok())
    return s;
  if (Status s = verifyConstants(); !s.ok())
    return s;
  for (size_t i = 0; root.kernels() && i < root.kernels()->size(); ++i)
    if (Status s = verifyKernel(i); !s.ok())
      return s;
  if (Status s = verifyCudaProgram(); !s.ok())
    return s;
  for (size_t i = 0; root.gemms() && i < root.gemms()->size(); ++i)
    if (Status s = verifyGemm(i); !s.ok())
      return s;
  for (size_t i = 0; root.routines() && i < root.routines()->size(); ++i) {
    RoutineOp op;
    if (Status s = verifyRoutine(*root.routines()->Get(i), i, tensors, op); !s.ok())
      return s;
    module.routines_.push_back(std::move(op));
  }
  // Routine kernels after every kernel's: their function names are checked
  // against the kernels'.
  for (size_t i = 0; root.routines() && i < root.routines()->size(); ++i)
    if (Status s = verifyRoutineCudaLaunch(i); !s.ok())
      return s;
  if (!root.cuda())
    module.routineCudaLaunches_.clear();
  if (Status s = verifySteps(); !s.ok())
    return s;
  if (Status s = verifyInputsOutputs(); !s.ok())
    return s;
  return verifyStates();
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

LoadedModule::LoadedModule() = default;
LoadedModule::~LoadedModule() = default;

std::string LoadedModule::kernelName(size_t index) const {
  std::string name = "kernel #" + std::to_string(index);
  const schema::Kernel *k = root_->kernels()->Get(index);
  if (k->name() && k->name()->size())
    name += " '" + k->name()->str() + "'";
  return name;
}

Status LoadedModule::loadSideFile(const std::string &moduleDir, const LoadOptions &options) {
  const schema::SideFile *side = root_->side_file();
  if (!side)
    return okStatus();
  const std::string relative = side->path()->str();
  std::string path;
  if (options.sideFileData) {
    path = "(given in memory for '" + relative + "')";
    if (options.sideFileSize != side->size())
      return Status(MIXPREC_SIDE_FILE_ERROR,
                    "side file " + path + " is " + std::to_string(options.sideFileSize) +
                        " bytes, the module expects " + std::to_string(side->size()));
    if (!sideFile_.allocate(options.sideFileSize))
      return Status(MIXPREC_OUT_OF_MEMORY, "cannot allocate " +
                                               std::to_string(options.sideFileSize) +
                                               " bytes for the side file");
    if (options.sideFileSize)
      std::memcpy(sideFile_.data(), options.sideFileData, options.sideFileSize);
  } else {
    const std::string &dir = options.sideFileDir.empty() ? moduleDir : options.sideFileDir;
    path = dir + "/" + relative;
    // Check the size before reading a possibly large file.
    struct stat st;
    if (stat(path.c_str(), &st) != 0)
      return Status(MIXPREC_SIDE_FILE_ERROR,
                    "side file '" + path + "' cannot be opened: " + std::strerror(errno));
    if (static_cast<uint64_t>(st.st_size) != side->size())
      return Status(MIXPREC_SIDE_FILE_ERROR,
                    "side file '" + path + "' is " + std::to_string(st.st_size) +
                        " bytes, the module expects " + std::to_string(side->size()));
    Status s = readFile(path, static_cast<size_t>(side->size()), MIXPREC_SIDE_FILE_ERROR,
                        "side file", sideFile_);
    if (!s.ok())
      return s.code() == MIXPREC_INVALID_MODULE ? Status(MIXPREC_SIDE_FILE_ERROR, s.message())
                                                : s;
    if (sideFile_.size() != side->size())
      return Status(MIXPREC_SIDE_FILE_ERROR,
                    "side file '" + path + "' changed size while being read");
    path = "'" + path + "'";
  }
  // XXH64 where the writer stored it (several GB/s), else FNV-1a 64 (a
  // module from a writer before SideFile.xxh64).
  const flatbuffers::Optional<uint64_t> xxh = side->xxh64();
  const uint64_t expected = xxh ? *xxh : side->fnv1a64();
  const uint64_t hash =
      xxh ? xxh64(sideFile_.data(), sideFile_.size()) : fnv1a64(sideFile_.data(), sideFile_.size());
  if (hash != expected)
    return Status(MIXPREC_SIDE_FILE_ERROR,
                  "side file " + path + " has " + (xxh ? "XXH64 " : "FNV-1a 64 ") + hex64(hash) +
                      ", the module expects " + hex64(expected) +
                      " (the file was changed or belongs to another module)");
  return okStatus();
}

Status LoadedModule::fromOwnedBytes(std::unique_ptr<LoadedModule> module,
                                    const std::string &moduleDir, const LoadOptions &options,
                                    std::shared_ptr<const LoadedModule> &out) {
  const uint8_t *data = module->buffer_.data();
  const size_t size = module->buffer_.size();
  if (size < 8)
    return invalidModule("truncated: " + std::to_string(size) +
                         " bytes, a module has at least 8 (root offset and file identifier)");
  if (!flatbuffers::BufferHasIdentifier(data, schema::ModuleIdentifier()))
    return invalidModule("not a mixprec module: file identifier is '" +
                         describeIdentifier(data + 4) + "', expected '" +
                         schema::ModuleIdentifier() + "'");
  flatbuffers::Verifier::Options verifierOptions;
  verifierOptions.max_depth = 64;
  verifierOptions.max_tables = kMaxTables;
  flatbuffers::Verifier verifier(data, size, verifierOptions);
  if (!schema::VerifyModuleBuffer(verifier))
    return invalidModule("the FlatBuffers verifier rejects the " + std::to_string(size) +
                         "-byte buffer (truncated, or an offset, vector or string out of "
                         "bounds)");
  if (Status s = verifyRootFieldsInsideTable(data); !s.ok())
    return s;
  module->root_ = schema::GetModule(data);
  const uint32_t version = module->root_->version();
  if (version == 0)
    return invalidModule("schema version 0 does not exist (versions start at 1)");
  if (version > kSchemaVersion)
    return Status(MIXPREC_UNSUPPORTED_VERSION,
                  "module schema version " + std::to_string(version) +
                      " is newer than this runtime reads (version " +
                      std::to_string(kSchemaVersion) + ", runtime " +
                      mixprec_runtime_version() + "); upgrade libmixprec_runtime");
  if (version < kOldestSchemaVersion)
    return Status(MIXPREC_UNSUPPORTED_VERSION,
                  "module schema version " + std::to_string(version) +
                      " is older than this runtime reads (version " +
                      std::to_string(kOldestSchemaVersion) + ", runtime " +
                      mixprec_runtime_version() + "); recompile the module");
  size_t hashOffset = 0;
  const uint64_t stored = module->root_->content_hash();
  if (stored != 0 && findContentHashField(data, size, &hashOffset)) {
    const uint64_t computed = moduleContentHash(data, size, hashOffset);
    if (computed != stored)
      return invalidModule("content hash mismatch: the module stores " + hex64(stored) +
                           ", its bytes hash to " + hex64(computed) +
                           (stored == kContentHashPlaceholder
                                ? " (the writer did not seal it)"
                                : " (changed or truncated after it was written)"));
  }
  module->producer_ = module->root_->producer() ? module->root_->producer()->str() : "";
  if (Status s = ModuleVerifier(*module).run(); !s.ok())
    return s;
  if (Status s = module->loadSideFile(moduleDir, options); !s.ok())
    return s;
  // Constants point at their bytes only now that the side file is checked.
  const auto *constants = module->root_->constants();
  for (TensorDesc &t : module->tensors_) {
    if (!t.isConstant() || t.bytes == 0)
      continue;
    const schema::Constant *c = constants->Get(t.constantIndex);
    t.constantData = c->data() ? c->data()->data()
                               : module->sideFile_.data() + c->external_offset();
  }
  for (size_t i = 0; i < module->states_.size(); ++i) {
    StateDesc &d = module->states_[i];
    const schema::Constant *c = constants->Get(module->root_->state()->Get(i)->initial());
    if (module->tensors_[d.tensor].bytes)
      d.initial = c->data() ? c->data()->data() : module->sideFile_.data() + c->external_offset();
  }
  out = std::shared_ptr<const LoadedModule>(module.release());
  return okStatus();
}

Status LoadedModule::loadFile(const std::string &path, const LoadOptions &options,
                              std::shared_ptr<const LoadedModule> &out) {
  std::unique_ptr<LoadedModule> module(new LoadedModule());
  if (Status s = readFile(path, kMaxModuleBytes, MIXPREC_IO_ERROR, "module file",
                          module->buffer_);
      !s.ok())
    return s;
  return fromOwnedBytes(std::move(module), directoryOf(path), options, out)
      .withContext(path + ": ");
}

Status LoadedModule::loadMemory(const void *data, size_t size, const LoadOptions &options,
                                std::shared_ptr<const LoadedModule> &out) {
  if (size > kMaxModuleBytes)
    return invalidModule(std::to_string(size) + " bytes, more than the " +
                         std::to_string(kMaxModuleBytes) + " a module may have");
  std::unique_ptr<LoadedModule> module(new LoadedModule());
  if (!module->buffer_.allocate(size))
    return Status(MIXPREC_OUT_OF_MEMORY,
                  "cannot allocate " + std::to_string(size) + " bytes for the module");
  if (size)
    std::memcpy(module->buffer_.data(), data, size);
  return fromOwnedBytes(std::move(module), ".", options, out);
}

} // namespace mixprec::runtime
