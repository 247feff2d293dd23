//===- OnnxTensors.cpp - TensorProto decoding and constant helpers ---------===//
//
// Turns ONNX tensors (initializers, Constant node values) into
// DenseElementsAttr of the importer's element types. Every size taken from
// the file is checked before it is used: dims, element-count overflow,
// typed-field counts, raw_data length and external file extents.
//
//===----------------------------------------------------------------------===//
#include "common/FileIO.h"
#include "compiler/Import/OnnxImporterImpl.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/SwapByteOrder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>
#include <limits>

using namespace mlir;

namespace mixprec::compiler::onnx_import {

std::string dataTypeName(int32_t dtype) {
  switch (dtype) {
  case 0:
    return "UNDEFINED";
  case 1:
    return "FLOAT";
  case 2:
    return "UINT8";
  case 3:
    return "INT8";
  case 4:
    return "UINT16";
  case 5:
    return "INT16";
  case 6:
    return "INT32";
  case 7:
    return "INT64";
  case 8:
    return "STRING";
  case 9:
    return "BOOL";
  case 10:
    return "FLOAT16";
  case 11:
    return "DOUBLE";
  case 12:
    return "UINT32";
  case 13:
    return "UINT64";
  case 14:
    return "COMPLEX64";
  case 15:
    return "COMPLEX128";
  case 16:
    return "BFLOAT16";
  // Types newer than the ONNX 1.12 headers: the field is an int32, so they
  // parse; name them for diagnostics.
  case 17:
    return "FLOAT8E4M3FN";
  case 18:
    return "FLOAT8E4M3FNUZ";
  case 19:
    return "FLOAT8E5M2";
  case 20:
    return "FLOAT8E5M2FNUZ";
  case 21:
    return "UINT4";
  case 22:
    return "INT4";
  case 23:
    return "FLOAT4E2M1";
  default:
    return "data type " + std::to_string(dtype);
  }
}

std::string elementTypeName(Type type) {
  if (type.isF32())
    return "FLOAT";
  if (type.isInteger(64))
    return "INT64";
  if (type.isInteger(32))
    return "INT32";
  if (type.isInteger(1))
    return "BOOL";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return os.str();
}

Type valueElementType(MLIRContext &ctx, int32_t dtype) {
  switch (dtype) {
  case onnx::TensorProto::FLOAT:
    return Float32Type::get(&ctx);
  case onnx::TensorProto::INT64:
    return IntegerType::get(&ctx, 64);
  case onnx::TensorProto::INT32:
    return IntegerType::get(&ctx, 32);
  case onnx::TensorProto::BOOL:
    return IntegerType::get(&ctx, 1);
  default:
    return nullptr;
  }
}

namespace {

/// How one ONNX data type is stored and what it becomes.
struct DTypeInfo {
  size_t rawBytes; // bytes per element in raw_data / external data
  enum Target { F32, I64, I32, I1 } target;
};

std::optional<DTypeInfo> dtypeInfo(int32_t dtype) {
  using T = onnx::TensorProto;
  switch (dtype) {
  case T::FLOAT:
    return DTypeInfo{4, DTypeInfo::F32};
  case T::DOUBLE:
    return DTypeInfo{8, DTypeInfo::F32};
  case T::FLOAT16:
    return DTypeInfo{2, DTypeInfo::F32};
  case T::BFLOAT16:
    return DTypeInfo{2, DTypeInfo::F32};
  case T::INT64:
    return DTypeInfo{8, DTypeInfo::I64};
  case T::UINT32:
    return DTypeInfo{4, DTypeInfo::I64};
  case T::UINT64:
    return DTypeInfo{8, DTypeInfo::I64};
  case T::INT32:
    return DTypeInfo{4, DTypeInfo::I32};
  case T::INT16:
    return DTypeInfo{2, DTypeInfo::I32};
  case T::UINT16:
    return DTypeInfo{2, DTypeInfo::I32};
  case T::INT8:
    return DTypeInfo{1, DTypeInfo::I32};
  case T::UINT8:
    return DTypeInfo{1, DTypeInfo::I32};
  case T::BOOL:
    return DTypeInfo{1, DTypeInfo::I1};
  default:
    return std::nullopt;
  }
}

float halfToFloat(uint16_t bits) {
  llvm::APFloat f(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits));
  bool losesInfo = false;
  f.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return f.convertToFloat();
}

float bf16ToFloat(uint16_t bits) {
  uint32_t w = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

/// Decoded values in one of the four target representations.
struct Decoded {
  std::vector<float> f32;
  std::vector<int64_t> i64;
  std::vector<int32_t> i32;
  llvm::SmallVector<bool, 0> i1;
};

/// Reports the errors about the tensor `what` names: "WHAT: message".
struct TensorErrors {
  const std::string &what;
  llvm::function_ref<void(const std::string &)> report;

  LogicalResult fail(const llvm::Twine &msg) const {
    report(what + ": " + msg.str());
    return failure();
  }
};

class TensorDecoder {
public:
  TensorDecoder(const onnx::TensorProto &t, DTypeInfo info, int64_t count,
                const TensorErrors &errors)
      : t(t), info(info), count(count), errors(errors) {}

  void reserve() {
    switch (info.target) {
    case DTypeInfo::F32:
      out.f32.resize(count);
      break;
    case DTypeInfo::I64:
      out.i64.resize(count);
      break;
    case DTypeInfo::I32:
      out.i32.resize(count);
      break;
    case DTypeInfo::I1:
      out.i1.resize(count);
      break;
    }
  }

  /// Little-endian bytes, exactly count * rawBytes of them.
  LogicalResult fromRaw(const char *data) {
    using namespace llvm::support;
    reserve();
    const auto *p = reinterpret_cast<const unsigned char *>(data);
    using T = onnx::TensorProto;
    for (int64_t i = 0; i < count; ++i, p += info.rawBytes) {
      switch (t.data_type()) {
      case T::FLOAT: {
        uint32_t w = endian::read32le(p);
        std::memcpy(&out.f32[i], &w, 4);
        break;
      }
      case T::DOUBLE: {
        uint64_t w = endian::read64le(p);
        double d;
        std::memcpy(&d, &w, 8);
        out.f32[i] = static_cast<float>(d);
        break;
      }
      case T::FLOAT16:
        out.f32[i] = halfToFloat(endian::read16le(p));
        break;
      case T::BFLOAT16:
        out.f32[i] = bf16ToFloat(endian::read16le(p));
        break;
      case T::INT64:
        out.i64[i] = static_cast<int64_t>(endian::read64le(p));
        break;
      case T::UINT32:
        out.i64[i] = endian::read32le(p);
        break;
      case T::UINT64:
        if (failed(checkedU64(endian::read64le(p), i, out.i64[i])))
          return failure();
        break;
      case T::INT32:
        out.i32[i] = static_cast<int32_t>(endian::read32le(p));
        break;
      case T::INT16:
        out.i32[i] = static_cast<int16_t>(endian::read16le(p));
        break;
      case T::UINT16:
        out.i32[i] = endian::read16le(p);
        break;
      case T::INT8:
        out.i32[i] = static_cast<int8_t>(*p);
        break;
      case T::UINT8:
        out.i32[i] = *p;
        break;
      case T::BOOL:
        out.i1[i] = *p != 0;
        break;
      }
    }
    return success();
  }

  /// The typed repeated fields (float_data, int32_data, ...).
  LogicalResult fromFields() {
    using T = onnx::TensorProto;
    reserve();
    auto checkCount = [&](const char *field, int size) -> LogicalResult {
      if (size != count)
        return errors.fail(llvm::Twine(field) + " has " + llvm::Twine(size) + " values, expected " +
                           llvm::Twine(count));
      return success();
    };
    switch (t.data_type()) {
    case T::FLOAT:
      if (failed(checkCount("float_data", t.float_data_size())))
        return failure();
      for (int64_t i = 0; i < count; ++i)
        out.f32[i] = t.float_data(static_cast<int>(i));
      break;
    case T::DOUBLE:
      if (failed(checkCount("double_data", t.double_data_size())))
        return failure();
      for (int64_t i = 0; i < count; ++i)
        out.f32[i] = static_cast<float>(t.double_data(static_cast<int>(i)));
      break;
    case T::FLOAT16:
    case T::BFLOAT16:
      // 16-bit floats travel as their bit patterns in int32_data.
      if (failed(checkCount("int32_data", t.int32_data_size())))
        return failure();
      for (int64_t i = 0; i < count; ++i) {
        auto bits = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
        out.f32[i] = t.data_type() == T::FLOAT16 ? halfToFloat(bits) : bf16ToFloat(bits);
      }
      break;
    case T::INT64:
      if (failed(checkCount("int64_data", t.int64_data_size())))
        return failure();
      for (int64_t i = 0; i < count; ++i)
        out.i64[i] = t.int64_data(static_cast<int>(i));
      break;
    case T::UINT32:
    case T::UINT64:
      if (failed(checkCount("uint64_data", t.uint64_data_size())))
        return failure();
      for (int64_t i = 0; i < count; ++i)
        if (failed(checkedU64(t.uint64_data(static_cast<int>(i)), i, out.i64[i])))
          return failure();
      break;
    case T::INT32:
    case T::INT16:
    case T::UINT16:
    case T::INT8:
    case T::UINT8:
      if (failed(checkCount("int32_data", t.int32_data_size())))
        return failure();
      for (int64_t i = 0; i < count; ++i)
        out.i32[i] = t.int32_data(static_cast<int>(i));
      break;
    case T::BOOL:
      if (failed(checkCount("int32_data", t.int32_data_size())))
        return failure();
      for (int64_t i = 0; i < count; ++i)
        out.i1[i] = t.int32_data(static_cast<int>(i)) != 0;
      break;
    }
    return success();
  }

  Decoded out;

private:
  LogicalResult checkedU64(uint64_t v, int64_t index, int64_t &result) const {
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return errors.fail("element " + llvm::Twine(index) + " (" + llvm::Twine(v) +
                         ") does not fit INT64, the type unsigned integers are imported as");
    result = static_cast<int64_t>(v);
    return success();
  }

  const onnx::TensorProto &t;
  DTypeInfo info;
  int64_t count;
  const TensorErrors &errors;
};

/// Whether `file` (resolved: no symlinks, no "..") lies inside `dir`
/// (resolved too).
bool isInside(llvm::StringRef file, llvm::StringRef dir) {
  if (!file.starts_with(dir))
    return false;
  llvm::StringRef rest = file.drop_front(dir.size());
  return dir.ends_with("/") || rest.starts_with("/");
}

/// The external file of a tensor, named `location` relative to `modelDir`:
/// refused when the location is absolute or resolves (following ".." and
/// symlinks, as onnxruntime does) outside the model's directory, so that a
/// model cannot read arbitrary files.
FailureOr<std::string> externalFilePath(llvm::StringRef modelDir, const std::string &location,
                                        const TensorErrors &errors) {
  auto fail = [&](const llvm::Twine &msg) { return errors.fail(msg); };
  if (location.empty())
    return fail("external data has no 'location'");
  if (location.find('\0') != std::string::npos)
    return fail("external data location " + quotedName(location) + " contains a NUL byte");
  if (llvm::sys::path::is_absolute(location))
    return fail("external data location " + quotedName(location) +
                " must be relative to the model's directory");
  llvm::SmallString<256> file(modelDir);
  llvm::sys::path::append(file, location);
  std::string fileName = std::string(file.str());
  llvm::SmallString<256> realFile, realDir;
  if (llvm::sys::fs::real_path(file, realFile))
    return fail("cannot read external data file " + quotedName(fileName) + ": " +
                common::whyNotReadable(fileName));
  if (std::error_code ec = llvm::sys::fs::real_path(modelDir, realDir))
    return fail("cannot resolve the model's directory " + quotedName(modelDir) + ": " +
                ec.message());
  if (!isInside(realFile, realDir))
    return fail("external data location " + quotedName(location) +
                " is outside the model's directory " + quotedName(modelDir));
  return fileName;
}

/// Reads `bytes` bytes of the tensor's external file into `buffer`.
LogicalResult readExternal(const onnx::TensorProto &t, llvm::StringRef modelDir, uint64_t bytes,
                           const TensorErrors &errors, std::unique_ptr<llvm::MemoryBuffer> &buffer,
                           const std::function<void(const std::string &)> &onExternalFile) {
  auto fail = [&](const llvm::Twine &msg) { return errors.fail(msg); };
  std::string location;
  std::optional<uint64_t> offset, length;
  for (const auto &kv : t.external_data()) {
    auto parse = [&](std::optional<uint64_t> &field) -> LogicalResult {
      uint64_t v;
      if (llvm::StringRef(kv.value()).getAsInteger(10, v))
        return fail("external data " + quotedName(kv.key()) +
                    " is not a non-negative integer: " + quotedName(kv.value()));
      field = v;
      return success();
    };
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset" && failed(parse(offset)))
      return failure();
    else if (kv.key() == "length" && failed(parse(length)))
      return failure();
    // "checksum" and unknown keys are informational.
  }
  FailureOr<std::string> resolved = externalFilePath(modelDir, location, errors);
  if (failed(resolved))
    return failure();
  const std::string &fileName = *resolved;
  if (length && *length != bytes)
    return fail("external data length " + llvm::Twine(*length) + " in " + quotedName(fileName) +
                " does not match the " + llvm::Twine(bytes) + " bytes of its shape and type");
  if (std::string why = common::whyNotReadable(fileName); !why.empty())
    return fail("cannot read external data file " + quotedName(fileName) + ": " + why);
  if (onExternalFile)
    onExternalFile(fileName);
  RegularFile file;
  std::string error;
  if (!file.open(fileName, error)) // it changed since: the reason as it stands
    return fail(escapeControls(error));
  uint64_t start = offset.value_or(0);
  if (start > file.size() || file.size() - start < bytes)
    return fail("external data file " + quotedName(fileName) + " is too short: need " +
                llvm::Twine(bytes) + " bytes at offset " + llvm::Twine(start) + ", the file has " +
                llvm::Twine(file.size()));
  if (bytes == 0)
    return success();
  std::error_code ec;
  buffer = file.read(start, bytes, ec);
  if (!buffer)
    return fail("cannot read external data file " + quotedName(fileName) + ": " + ec.message());
  if (buffer->getBufferSize() != bytes)
    return fail("external data file " + quotedName(fileName) + " is too short");
  return success();
}

} // namespace

FailureOr<DenseElementsAttr>
decodeTensor(MLIRContext &ctx, const onnx::TensorProto &t, llvm::StringRef modelDir,
             const std::string &what, llvm::function_ref<void(const std::string &)> onError,
             const std::function<void(const std::string &)> &onExternalFile) {
  TensorErrors errors{what, onError};
  auto fail = [&](const llvm::Twine &msg) { return errors.fail(msg); };
  std::optional<DTypeInfo> info = dtypeInfo(t.data_type());
  if (!info)
    return fail("unsupported data type " + dataTypeName(t.data_type()));
  if (t.has_segment())
    return fail("segmented tensors are not supported");
  Shape shape;
  for (int64_t d : t.dims()) {
    if (d < 0)
      return fail("negative dimension in shape " + shapes::formatShape(llvm::to_vector(t.dims())));
    shape.push_back(d);
  }
  int64_t count = shapes::numElements(shape);
  // Element count and byte size must both fit; 2^62 elements is far beyond
  // any real tensor and keeps count * 8 from overflowing.
  if (count < 0 || count > (int64_t(1) << 60))
    return fail("shape " + shapes::formatShape(shape) + " has too many elements");
  uint64_t bytes = static_cast<uint64_t>(count) * info->rawBytes;

  TensorDecoder decoder(t, *info, count, errors);
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::unique_ptr<llvm::MemoryBuffer> buffer;
    if (failed(readExternal(t, modelDir, bytes, errors, buffer, onExternalFile)) ||
        failed(decoder.fromRaw(buffer ? buffer->getBufferStart() : nullptr)))
      return failure();
  } else if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      return fail("raw_data has " + llvm::Twine(t.raw_data().size()) + " bytes, expected " +
                  llvm::Twine(bytes) + " for " + dataTypeName(t.data_type()) + " " +
                  shapes::formatShape(shape));
    // FLOAT and INT64 weights are already in the attribute's layout on a
    // little-endian host: one copy into the attribute, no decoding loop or
    // intermediate vector (most of a large model's import).
    if (llvm::sys::IsLittleEndianHost && bytes > 0 &&
        (t.data_type() == onnx::TensorProto::FLOAT ||
         t.data_type() == onnx::TensorProto::INT64)) {
      Type elem = t.data_type() == onnx::TensorProto::FLOAT ? Type(Float32Type::get(&ctx))
                                                             : Type(IntegerType::get(&ctx, 64));
      return DenseElementsAttr::getFromRawBuffer(
          RankedTensorType::get(shape, elem),
          llvm::ArrayRef<char>(t.raw_data().data(), t.raw_data().size()));
    }
    if (failed(decoder.fromRaw(t.raw_data().data())))
      return failure();
  } else if (failed(decoder.fromFields())) {
    return failure();
  }

  Decoded &d = decoder.out;
  switch (info->target) {
  case DTypeInfo::F32:
    return DenseElementsAttr::get(RankedTensorType::get(shape, Float32Type::get(&ctx)),
                                  llvm::ArrayRef<float>(d.f32));
  case DTypeInfo::I64:
    return DenseElementsAttr::get(RankedTensorType::get(shape, IntegerType::get(&ctx, 64)),
                                  llvm::ArrayRef<int64_t>(d.i64));
  case DTypeInfo::I32:
    return DenseElementsAttr::get(RankedTensorType::get(shape, IntegerType::get(&ctx, 32)),
                                  llvm::ArrayRef<int32_t>(d.i32));
  case DTypeInfo::I1:
    return DenseElementsAttr::get(RankedTensorType::get(shape, IntegerType::get(&ctx, 1)),
                                  llvm::ArrayRef<bool>(d.i1));
  }
  return DenseElementsAttr();
}

llvm::SmallVector<int64_t> intValues(DenseElementsAttr attr) {
  llvm::SmallVector<int64_t> out;
  Type elem = attr.getElementType();
  if (elem.isInteger(1)) {
    for (bool b : attr.getValues<bool>())
      out.push_back(b);
  } else {
    for (const llvm::APInt &v : attr.getValues<llvm::APInt>())
      out.push_back(v.getSExtValue());
  }
  return out;
}

llvm::SmallVector<float> floatValues(DenseElementsAttr attr) {
  llvm::SmallVector<float> out;
  for (float v : attr.getValues<float>())
    out.push_back(v);
  return out;
}

DenseElementsAttr makeIntAttr(llvm::ArrayRef<int64_t> shape, Type elem,
                              llvm::ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get(shape, elem);
  if (elem.isInteger(1)) {
    llvm::SmallVector<bool, 0> b(values.size());
    for (size_t i = 0; i < values.size(); ++i)
      b[i] = values[i] != 0;
    return DenseElementsAttr::get(type, llvm::ArrayRef<bool>(b));
  }
  if (elem.isInteger(32)) {
    llvm::SmallVector<int32_t, 0> v(values.begin(), values.end());
    return DenseElementsAttr::get(type, llvm::ArrayRef<int32_t>(v));
  }
  return DenseElementsAttr::get(type, values);
}

DenseElementsAttr makeF32Attr(MLIRContext &ctx, llvm::ArrayRef<int64_t> shape,
                              llvm::ArrayRef<float> values) {
  return DenseElementsAttr::get(RankedTensorType::get(shape, Float32Type::get(&ctx)), values);
}

} // namespace mixprec::compiler::onnx_import
