//===- Extension.cpp - mixprec._mixprec, the Python extension --------------===//
//
// nanobind bindings over the runtime's C API (runtime/include/mixprec/
// runtime.h: modules, sessions, state, checkpoints) and the compile API
// through Bridge.h. Built with exceptions and RTTI, and without LLVM or MLIR
// headers. Every status and compile failure becomes a MixprecFailure, which
// the translator below raises as the mixprec.Error subclass of its code
// (python/mixprec/_errors.py); the GIL is released while compiling and
// running. Arrays arrive C-contiguous on the CPU (mixprec/__init__.py makes
// them so from numpy or any DLPack producer).
//
//===----------------------------------------------------------------------===//
#include "python/src/Bridge.h"

#include "mixprec/runtime.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace mixprec::python;

namespace {

/// A failure on its way to Python: `code` is a mixprec_status_code_t, or
/// kCompileError for the compiler's.
struct MixprecFailure {
  int code;
  std::string message;
  std::vector<std::string> notes;
};
constexpr int kCompileError = -1;

/// Throws a status as a MixprecFailure (after freeing it); OK does nothing.
void check(mixprec_status_t status, const std::string &prefix = "") {
  if (!status)
    return;
  MixprecFailure f{mixprec_status_code(status), prefix + mixprec_status_message(status), {}};
  mixprec_status_free(status);
  throw f;
}

/// Throws a bridge failure as a MixprecFailure.
void check(const Failure &failure) {
  if (!failure)
    return;
  int code = failure.kind == Failure::Kind::Compile ? kCompileError
             : failure.kind == Failure::Kind::Io    ? MIXPREC_IO_ERROR
                                                    : MIXPREC_INVALID_ARGUMENT;
  throw MixprecFailure{code, failure.message, failure.notes};
}

/// An array from Python: read-only, C-contiguous, in host memory.
using InArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

/// The .npy dtype of an array (what the CLI's input rules are stated in);
/// other dtypes fail naming `what`.
mixprec::support::NpyDType npyDTypeOf(const InArray &a, const std::string &what) {
  using mixprec::support::NpyDType;
  nb::dlpack::dtype t = a.dtype();
  using Code = nb::dlpack::dtype_code;
  if (t.lanes == 1) {
    if (t.code == uint8_t(Code::Float) && t.bits == 32)
      return NpyDType::F32;
    if (t.code == uint8_t(Code::Float) && t.bits == 64)
      return NpyDType::F64;
    if (t.code == uint8_t(Code::Float) && t.bits == 16)
      return NpyDType::F16;
    if (t.code == uint8_t(Code::Int) && t.bits == 64)
      return NpyDType::I64;
    if (t.code == uint8_t(Code::Int) && t.bits == 32)
      return NpyDType::I32;
    if (t.code == uint8_t(Code::Int) && t.bits == 8)
      return NpyDType::I8;
    if (t.code == uint8_t(Code::UInt) && t.bits == 8)
      return NpyDType::U8;
    if (t.code == uint8_t(Code::Bool) && t.bits == 8)
      return NpyDType::Bool;
  }
  static const char *codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  std::string name = (t.code < 7 ? codes[t.code] : "code" + std::to_string(t.code)) +
                     std::to_string(t.bits);
  throw MixprecFailure{MIXPREC_DTYPE_MISMATCH,
                       what + " has dtype " + name +
                           ", which mixprec does not take (float16/32/64, int8/32/64, uint8, "
                           "bool)",
                       {}};
}

/// Copies an array into the .npy form the bridge converts from.
mixprec::support::NpyArray npyOf(const InArray &a, const std::string &what) {
  mixprec::support::NpyArray array;
  array.dtype = npyDTypeOf(a, what);
  for (size_t d = 0; d < a.ndim(); ++d)
    array.shape.push_back(a.shape(d));
  const uint8_t *p = static_cast<const uint8_t *>(a.data());
  array.data.assign(p, p + a.nbytes());
  return array;
}

/// Named arrays from a Python dict (name -> C-contiguous array).
NamedArrays namedArrays(const std::vector<std::pair<std::string, InArray>> &arrays,
                        const std::string &what) {
  NamedArrays out;
  for (const auto &[name, a] : arrays)
    out.emplace_back(name, npyOf(a, what + " '" + name + "'"));
  return out;
}

/// A numpy array that owns `bytes` (moved in), of `dtype` and `shape`.
nb::object ownedArray(std::vector<uint8_t> bytes, nb::dlpack::dtype dtype,
                      const std::vector<size_t> &shape) {
  auto *storage = new std::vector<uint8_t>(std::move(bytes));
  nb::capsule owner(storage, [](void *p) noexcept { delete static_cast<std::vector<uint8_t> *>(p); });
  return nb::cast(nb::ndarray<nb::numpy>(storage->data(), shape.size(), shape.data(), owner,
                                         nullptr, dtype));
}

/// The numpy dtype an output or state of `dtype` is returned in: float32
/// for every float dtype (decoded exactly), else its own.
nb::dlpack::dtype hostDType(mixprec_dtype_t dtype) {
  switch (dtype) {
  case MIXPREC_DTYPE_I64:
    return nb::dtype<int64_t>();
  case MIXPREC_DTYPE_I32:
    return nb::dtype<int32_t>();
  case MIXPREC_DTYPE_BOOL:
    return nb::dtype<bool>();
  default:
    return nb::dtype<float>();
  }
}

/// Whether a dtype is a float dtype (returned as float32).
bool isFloat(mixprec_dtype_t dtype) {
  return dtype != MIXPREC_DTYPE_I64 && dtype != MIXPREC_DTYPE_I32 && dtype != MIXPREC_DTYPE_BOOL;
}

/// (name, dtype name, shape) of a tensor info.
std::tuple<std::string, std::string, std::vector<int64_t>> describe(const mixprec_tensor_info_t &i) {
  return {i.name, mixprec_dtype_name(i.dtype), std::vector<int64_t>(i.dims, i.dims + i.rank)};
}

mixprec_backend_t backendOf(const std::string &name) {
  if (name == "cpu")
    return MIXPREC_BACKEND_CPU;
  if (name == "cuda")
    return MIXPREC_BACKEND_CUDA;
  if (name == "auto")
    return MIXPREC_BACKEND_AUTO;
  throw MixprecFailure{MIXPREC_INVALID_ARGUMENT,
                       "backend takes cpu, cuda or auto, got '" + name + "'", {}};
}

/// A loaded module and its sessions. Sessions run one call at a time, so
/// a stateless module keeps a pool (threads that run at once each take
/// one); a module with state has one session, whose state persists, and
/// its runs take turns.
/// The DLPack dtype of a module dtype kept as it is on the device; false
/// for the FP8 dtypes, which DLPack has no code for.
bool deviceDType(mixprec_dtype_t dtype, nb::dlpack::dtype &out) {
  using Code = nb::dlpack::dtype_code;
  auto make = [&](Code code, int bits) {
    out = nb::dlpack::dtype{uint8_t(code), uint8_t(bits), 1};
    return true;
  };
  switch (dtype) {
  case MIXPREC_DTYPE_F32:
    return make(Code::Float, 32);
  case MIXPREC_DTYPE_F16:
    return make(Code::Float, 16);
  case MIXPREC_DTYPE_BF16:
    return make(Code::Bfloat, 16);
  case MIXPREC_DTYPE_I64:
    return make(Code::Int, 64);
  case MIXPREC_DTYPE_I32:
    return make(Code::Int, 32);
  case MIXPREC_DTYPE_BOOL:
    return make(Code::Bool, 8);
  default:
    return false;
  }
}

class Module {
public:
  Module(mixprec_module_t module, std::unique_ptr<CompiledModel> compiled, std::string name,
         const std::string &backend)
      : module(module), compiled(std::move(compiled)), name(std::move(name)),
        backend(backendOf(backend)) {
    sources = this->compiled ? this->compiled->sources() : loadedModuleSources(this->name);
    stateful = mixprec_module_state_count(module) > 0;
    mixprec_session_t first = nullptr;
    try {
      first = createSession(); // a backend that cannot run fails here
    } catch (...) {
      mixprec_module_release(module);
      throw;
    }
    reason = mixprec_session_backend_reason(first);
    chosen = mixprec_backend_name(mixprec_session_backend(first));
    idle.push_back(first);
  }
  ~Module() {
    for (mixprec_session_t s : idle)
      mixprec_session_release(s);
    mixprec_module_release(module);
  }
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> inputs() const {
    std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> out;
    for (size_t i = 0; i < mixprec_module_input_count(module); ++i)
      out.push_back(describe(inputInfo(i)));
    return out;
  }
  std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> outputs() const {
    std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> out;
    for (size_t i = 0; i < mixprec_module_output_count(module); ++i) {
      mixprec_tensor_info_t info;
      check(mixprec_module_output_info(module, i, &info));
      out.push_back(describe(info));
    }
    return out;
  }
  std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> states() const {
    std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> out;
    for (size_t i = 0; i < mixprec_module_state_count(module); ++i)
      out.push_back(describe(stateInfo(i)));
    return out;
  }

  /// The given arrays in input order; fails naming an unknown or missing
  /// input.
  std::vector<mixprec::support::NpyArray>
  inputArrays(const std::vector<std::pair<std::string, InArray>> &given) const {
    size_t count = mixprec_module_input_count(module);
    std::vector<mixprec::support::NpyArray> arrays(count);
    std::vector<bool> have(count, false);
    for (const auto &[inputName, a] : given) {
      size_t index = 0;
      check(mixprec_module_find_input(module, inputName.c_str(), &index),
            name + ": input '" + inputName + "': ");
      arrays[index] = npyOf(a, name + ": input '" + inputName + "'");
      have[index] = true;
    }
    for (size_t i = 0; i < count; ++i)
      if (!have[i])
        throw MixprecFailure{MIXPREC_INVALID_ARGUMENT,
                             name + ": input '" + std::string(inputInfo(i).name) +
                                 "' not given (the module's inputs: " + inputNames() + ")",
                             {}};
    return arrays;
  }

  /// Each input's bytes in its module dtype (the CLI's rules).
  std::vector<std::vector<uint8_t>>
  encodeInputs(const std::vector<mixprec::support::NpyArray> &arrays) const {
    std::vector<std::vector<uint8_t>> bytes(arrays.size());
    for (size_t i = 0; i < arrays.size(); ++i)
      check(encodeInput(inputInfo(i), arrays[i], name, bytes[i]));
    return bytes;
  }

  /// Binds the encoded inputs to `session`.
  void bindInputs(mixprec_session_t session, const std::vector<std::vector<uint8_t>> &bytes) {
    for (size_t i = 0; i < bytes.size(); ++i) {
      mixprec_tensor_info_t info = inputInfo(i);
      check(mixprec_session_bind_input(session, i, info.dtype, info.rank, info.dims,
                                       bytes[i].data(), bytes[i].size()),
            name + ": ");
    }
  }

  /// Binds every input, runs, and returns the outputs by name.
  nb::dict run(const std::vector<std::pair<std::string, InArray>> &given) {
    std::vector<mixprec::support::NpyArray> arrays = inputArrays(given);
    size_t outputCount = mixprec_module_output_count(module);
    std::vector<std::vector<uint8_t>> results(outputCount);
    {
      nb::gil_scoped_release release;
      std::vector<std::vector<uint8_t>> bytes = encodeInputs(arrays);
      std::unique_lock<std::mutex> turn(runLock, std::defer_lock);
      if (stateful)
        turn.lock();
      mixprec_session_t session = takeSession();
      try {
        bindInputs(session, bytes);
        check(mixprec_session_run(session), name + ": ");
        for (size_t i = 0; i < outputCount; ++i) {
          mixprec_tensor_info_t info;
          check(mixprec_module_output_info(module, i, &info));
          mixprec_dtype_t as = isFloat(info.dtype) ? MIXPREC_DTYPE_F32 : info.dtype;
          results[i].resize(info.element_count * mixprec_dtype_size(as));
          check(mixprec_session_copy_output(session, i, as, results[i].data(),
                                            results[i].size()));
        }
      } catch (...) {
        giveBack(session);
        throw;
      }
      giveBack(session);
    }
    nb::dict out;
    for (size_t i = 0; i < outputCount; ++i) {
      mixprec_tensor_info_t info;
      check(mixprec_module_output_info(module, i, &info));
      std::vector<size_t> shape(info.dims, info.dims + info.rank);
      out[info.name] = ownedArray(std::move(results[i]), hostDType(info.dtype), shape);
    }
    return out;
  }

  /// Binds every input, runs with each output written into a buffer of
  /// the session's backend (device memory on CUDA, host memory on the CPU
  /// backend), and returns them as DLPack-capable arrays over that memory:
  /// nothing is copied out. Each keeps `self` (the Python Module, whose
  /// sessions own the device) alive and releases its buffer when dropped.
  nb::dict runOnDevice(nb::handle self, const std::vector<std::pair<std::string, InArray>> &given) {
    std::vector<mixprec::support::NpyArray> arrays = inputArrays(given);
    size_t outputCount = mixprec_module_output_count(module);
    std::vector<mixprec_tensor_info_t> infos(outputCount);
    std::vector<nb::dlpack::dtype> dtypes(outputCount);
    for (size_t i = 0; i < outputCount; ++i) {
      check(mixprec_module_output_info(module, i, &infos[i]));
      if (!deviceDType(infos[i].dtype, dtypes[i]))
        throw MixprecFailure{MIXPREC_UNIMPLEMENTED,
                             name + ": output '" + std::string(infos[i].name) + "' is " +
                                 mixprec_dtype_name(infos[i].dtype) +
                                 ", which DLPack cannot describe: read it with run() (decoded "
                                 "to float32)",
                             {}};
    }
    std::vector<mixprec_buffer_t> buffers(outputCount, nullptr);
    auto releaseAll = [&] {
      for (mixprec_buffer_t b : buffers)
        mixprec_buffer_release(b);
    };
    {
      nb::gil_scoped_release release;
      std::vector<std::vector<uint8_t>> bytes = encodeInputs(arrays);
      std::unique_lock<std::mutex> turn(runLock, std::defer_lock);
      if (stateful)
        turn.lock();
      mixprec_session_t session = takeSession();
      auto unbind = [&] {
        for (size_t i = 0; i < outputCount; ++i)
          mixprec_status_free(mixprec_session_bind_output_buffer(session, i, nullptr));
      };
      try {
        bindInputs(session, bytes);
        for (size_t i = 0; i < outputCount; ++i) {
          check(mixprec_buffer_create(session, infos[i].byte_size, &buffers[i]), name + ": ");
          check(mixprec_session_bind_output_buffer(session, i, buffers[i]), name + ": ");
        }
        check(mixprec_session_run(session), name + ": ");
      } catch (...) {
        unbind();
        giveBack(session);
        releaseAll();
        throw;
      }
      // The buffers now hold the outputs; the session's next runs write
      // its own memory again.
      unbind();
      giveBack(session);
    }
    nb::dict out;
    for (size_t i = 0; i < outputCount; ++i) {
      struct Owner {
        mixprec_buffer_t buffer;
        nb::object module;
      };
      mixprec_buffer_t buffer = buffers[i];
      buffers[i] = nullptr;
      auto *owner = new Owner{buffer, nb::borrow(self)};
      nb::capsule capsule(owner, [](void *p) noexcept {
        auto *o = static_cast<Owner *>(p);
        mixprec_buffer_release(o->buffer);
        delete o;
      });
      int32_t deviceType = mixprec_buffer_backend(buffer) == MIXPREC_BACKEND_CUDA
                               ? nb::device::cuda::value
                               : nb::device::cpu::value;
      std::vector<size_t> shape(infos[i].dims, infos[i].dims + infos[i].rank);
      void *data = reinterpret_cast<void *>(
          static_cast<uintptr_t>(mixprec_buffer_device_address(buffer)));
      out[infos[i].name] = nb::cast(nb::ndarray<nb::array_api>(data, shape.size(), shape.data(), capsule,
                                                  nullptr, dtypes[i], deviceType, 0));
    }
    releaseAll(); // the handed-over ones are null
    return out;
  }

  std::string ir(bool elide) {
    if (!compiled)
      throw MixprecFailure{MIXPREC_FAILED_PRECONDITION,
                           name + ": a module loaded from a .mpk file has no IR (compile the "
                                  "model with mixprec.compile for Module.ir)",
                           {}};
    std::lock_guard<std::mutex> guard(compileLock);
    return compiled->ir(elide);
  }

  void save(const std::string &path) {
    if (!compiled)
      throw MixprecFailure{MIXPREC_FAILED_PRECONDITION,
                           name + ": a module loaded from a .mpk file is saved already (copy "
                                  "the file and its .weights)",
                           {}};
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> guard(compileLock);
    check(compiled->save(path, smVersion));
  }

  nb::object readState(const std::string &stateName) {
    mixprec_tensor_info_t info = stateInfo(findState(stateName));
    std::vector<uint8_t> raw(info.byte_size);
    {
      std::lock_guard<std::mutex> turn(runLock);
      check(mixprec_session_read_state(stateSession(), stateName.c_str(), raw.data(),
                                       raw.size()));
    }
    std::vector<size_t> shape(info.dims, info.dims + info.rank);
    if (isFloat(info.dtype) && info.dtype != MIXPREC_DTYPE_F32) {
      std::vector<uint8_t> floats(info.element_count * sizeof(float));
      decodeFloats(info.dtype, raw.data(), reinterpret_cast<float *>(floats.data()),
                   info.element_count);
      raw = std::move(floats);
    }
    return ownedArray(std::move(raw), hostDType(info.dtype), shape);
  }

  void writeState(const std::string &stateName, const InArray &a) {
    mixprec_tensor_info_t info = stateInfo(findState(stateName));
    std::vector<uint8_t> bytes;
    check(encodeInput(info, npyOf(a, name + ": state '" + stateName + "'"), name, bytes));
    std::lock_guard<std::mutex> turn(runLock);
    check(mixprec_session_write_state(stateSession(), stateName.c_str(), bytes.data(),
                                      bytes.size()));
  }

  void resetState() {
    std::lock_guard<std::mutex> turn(runLock);
    check(mixprec_session_reset_state(stateSession()));
  }

  void saveCheckpoint(const std::string &path, const nb::bytes &blob) {
    check(checkNotASource(sources, path, name));
    std::string data(blob.c_str(), blob.size());
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> turn(runLock);
    check(mixprec_session_save_checkpoint(stateSession(), path.c_str(), data.data(), data.size()));
  }

  nb::bytes loadCheckpoint(const std::string &path, size_t capacity) {
    std::vector<char> blob(capacity + 1);
    size_t size = 0;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> turn(runLock);
      check(mixprec_session_load_checkpoint(stateSession(), path.c_str(), blob.data(),
                                            blob.size(), &size));
    }
    return nb::bytes(blob.data(), size);
  }

  std::string backendName() const { return chosen; }
  std::string backendReason() const { return reason; }
  std::string displayName() const { return name; }
  int smVersion = 0;

private:
  mixprec_tensor_info_t inputInfo(size_t i) const {
    mixprec_tensor_info_t info;
    check(mixprec_module_input_info(module, i, &info));
    return info;
  }
  mixprec_tensor_info_t stateInfo(size_t i) const {
    mixprec_tensor_info_t info;
    check(mixprec_module_state_info(module, i, &info));
    return info;
  }
  std::string inputNames() const {
    std::string names;
    for (size_t i = 0; i < mixprec_module_input_count(module); ++i)
      names += (names.empty() ? "" : ", ") + std::string(inputInfo(i).name);
    return names;
  }
  size_t findState(const std::string &stateName) const {
    std::string names;
    for (size_t i = 0; i < mixprec_module_state_count(module); ++i) {
      if (stateInfo(i).name == stateName)
        return i;
      names += (names.empty() ? "" : ", ") + std::string(stateInfo(i).name);
    }
    throw MixprecFailure{MIXPREC_NOT_FOUND,
                         name + ": no state '" + stateName + "' (its states: " +
                             (names.empty() ? "none" : names) + ")",
                         {}};
  }
  /// The session that holds the state (a stateful module has one).
  mixprec_session_t stateSession() {
    std::lock_guard<std::mutex> guard(poolLock);
    return idle.front();
  }
  mixprec_session_t createSession() {
    mixprec_session_options_t options;
    mixprec_session_options_init(&options);
    options.backend = backend;
    mixprec_session_t session = nullptr;
    check(mixprec_session_create(module, &options, &session), name + ": ");
    return session;
  }
  mixprec_session_t takeSession() {
    {
      std::lock_guard<std::mutex> guard(poolLock);
      if (stateful)
        return idle.front();
      if (!idle.empty()) {
        mixprec_session_t s = idle.back();
        idle.pop_back();
        return s;
      }
    }
    return createSession();
  }
  void giveBack(mixprec_session_t session) {
    if (stateful)
      return;
    std::lock_guard<std::mutex> guard(poolLock);
    idle.push_back(session);
  }

  mixprec_module_t module;
  std::unique_ptr<CompiledModel> compiled;
  std::string name;
  /// The files it was made from (save and save_checkpoint refuse them).
  std::vector<std::string> sources;
  mixprec_backend_t backend;
  bool stateful = false;
  std::string reason, chosen;
  std::mutex poolLock, runLock, compileLock;
  std::vector<mixprec_session_t> idle;
};

/// The request the Python arguments describe.
CompileRequest request(const std::string &path, const std::string &display,
                       const std::string &options, bool precisionGiven,
                       const std::map<std::string, std::vector<int64_t>> &shapes,
                       const std::vector<std::pair<std::string, InArray>> &calibrate) {
  CompileRequest r;
  r.path = path;
  r.displayName = display;
  r.options = options;
  r.precisionGiven = precisionGiven;
  r.shapes = shapes;
  r.calibrate = namedArrays(calibrate, "calibrate input");
  return r;
}

/// Loads a module image from memory with its side file.
mixprec_module_t loadImage(const std::vector<uint8_t> &bytes, const std::vector<uint8_t> &side,
                           const std::string &name) {
  mixprec_load_options_t options;
  mixprec_load_options_init(&options);
  options.side_file_data = side.data();
  options.side_file_size = side.size();
  mixprec_module_t module = nullptr;
  check(mixprec_module_load_memory(bytes.data(), bytes.size(), &options, &module), name + ": ");
  return module;
}

/// Sets a TrainRequest field from a keyword of mixprec.train (its CLI
/// option's name with '_' for '-'); an unknown keyword is an error.
void setTrainOption(TrainRequest &r, const std::string &key, nb::handle value) {
  // A value of the wrong type is an InvalidArgumentError naming the keyword
  // and what it takes (nanobind's own cast would raise std::bad_cast).
  auto wrong = [&](const std::string &takes) {
    std::string given = nb::cast<std::string>(nb::repr(value));
    if (given.size() > 60)
      given = given.substr(0, 57) + "...";
    throw MixprecFailure{MIXPREC_INVALID_ARGUMENT,
                         "train: " + key + " takes " + takes + ", got " +
                             nb::cast<std::string>(nb::type_name(value.type())) + " " + given,
                         {}};
  };
  auto isBool = [&] { return PyBool_Check(value.ptr()); };
  auto str = [&](std::string &field) {
    if (!nb::try_cast(value, field))
      wrong("a string");
  };
  auto real = [&](double &field) {
    if (isBool() || !PyNumber_Check(value.ptr()) || PyUnicode_Check(value.ptr()) ||
        !nb::try_cast(value, field))
      wrong("a number");
  };
  auto integer = [&](int64_t &field) {
    if (isBool() || !PyIndex_Check(value.ptr()) || !nb::try_cast(value, field))
      wrong("an integer in [-2^63, 2^63-1]");
  };
  if (key == "loss") return str(r.loss);
  if (key == "output") return str(r.output);
  if (key == "optimizer") return str(r.optimizer);
  if (key == "loss_scale") return str(r.lossScale);
  if (key == "backend") return str(r.backend);
  if (key == "csv") return str(r.loop.csv);
  if (key == "checkpoint") return str(r.loop.checkpoint);
  if (key == "resume") return str(r.loop.resume);
  if (key == "state_dir") return str(r.loop.stateDir);
  if (key == "compare") return str(r.compare);
  if (key == "metrics") return str(r.loop.metrics);
  if (key == "report") return str(r.loop.report);
  if (key == "seeds") return integer(r.loop.seeds);
  if (key == "compare_every") return integer(r.loop.compareEvery);
  if (key == "fp32_samples_per_s") return real(r.loop.fp32SamplesPerSecond);
  if (key == "lr") return real(r.lr);
  if (key == "momentum") return real(r.momentum);
  if (key == "weight_decay") return real(r.weightDecay);
  if (key == "beta1") return real(r.beta1);
  if (key == "beta2") return real(r.beta2);
  if (key == "eps") return real(r.eps);
  if (key == "init_scale") return real(r.initScale);
  if (key == "growth_factor") return real(r.growthFactor);
  if (key == "backoff_factor") return real(r.backoffFactor);
  if (key == "min_scale") return real(r.minScale);
  if (key == "clip_norm") return real(r.clipNorm);
  if (key == "growth_interval") return integer(r.growthInterval);
  if (key == "hysteresis") return integer(r.hysteresis);
  if (key == "accumulate") return integer(r.accumulate);
  if (key == "batch") return integer(r.batch);
  if (key == "steps") return integer(r.loop.steps);
  if (key == "epochs") return integer(r.loop.epochs);
  if (key == "log_every") return integer(r.loop.logEvery);
  if (key == "eval_every") return integer(r.loop.evalEvery);
  if (key == "checkpoint_every") return integer(r.loop.checkpointEvery);
  if (key == "world")
    return integer(r.world);
  if (key == "data_parallel") {
    if (!isBool())
      wrong("True or False");
    r.dataParallel = nb::cast<bool>(value);
    return;
  }
  if (key == "shard_optimizer") {
    if (!isBool())
      wrong("True or False");
    r.shardOptimizer = nb::cast<bool>(value);
    return;
  }
  if (key == "allreduce_dtype")
    return str(r.allreduceDType);
  if (key == "bucket_mb")
    return real(r.bucketMB);
  if (key == "collective_timeout")
    return real(r.collectiveTimeout);
  if (key == "max_skipped_in_a_row") return integer(r.loop.maxSkippedInARow);
  if (key == "seed") {
    if (isBool() || !PyIndex_Check(value.ptr()) || !nb::try_cast(value, r.loop.seed))
      wrong("an integer in [0, 2^64-1]");
    return;
  }
  if (key == "reinit" || key == "shuffle") {
    if (!isBool())
      wrong("True or False");
    (key == "reinit" ? r.loop.reinit : r.loop.shuffle) = value.ptr() == Py_True;
    return;
  }
  if (key == "frozen") {
    if (!nb::try_cast(value, r.frozen))
      wrong("a list of globs (strings)");
    return;
  }
  throw MixprecFailure{MIXPREC_INVALID_ARGUMENT, "train: unknown option '" + key + "'", {}};
}

/// The train call's request: the model, its data and labels, and the
/// settings (setTrainOption).
TrainRequest trainRequest(const std::string &path, const std::string &display,
                          const std::string &options, bool precisionGiven,
                          const std::map<std::string, std::vector<int64_t>> &shapes,
                          const std::vector<std::pair<std::string, InArray>> &data,
                          const std::vector<std::pair<std::string, InArray>> &testData,
                          nb::object labels, nb::object testLabels,
                          const std::map<std::string, nb::object> &settings) {
  TrainRequest r;
  r.path = path;
  r.displayName = display;
  r.options = options;
  r.precisionGiven = precisionGiven;
  r.shapes = shapes;
  r.data = namedArrays(data, "data");
  r.testData = namedArrays(testData, "test data");
  if (!labels.is_none()) {
    r.hasLabels = true;
    r.labels = npyOf(nb::cast<InArray>(labels), "labels");
  }
  if (!testLabels.is_none()) {
    r.hasTestLabels = true;
    r.testLabels = npyOf(nb::cast<InArray>(testLabels), "test labels");
  }
  for (const auto &[key, value] : settings)
    setTrainOption(r, key, value);
  return r;
}

/// The dict the train callback gets for a step (the test and compare
/// losses only when measured).
nb::dict stepRecord(const TrainStepInfo &info) {
  nb::dict record;
  record["seed"] = info.seed;
  record["step"] = info.step;
  record["epoch"] = info.epoch;
  record["loss"] = info.loss;
  record["loss_scale"] = info.lossScale;
  record["grad_norm"] = info.gradNorm;
  record["skipped"] = info.skipped;
  if (!std::isnan(info.testLoss))
    record["test_loss"] = info.testLoss;
  if (!std::isnan(info.testAccuracy))
    record["test_accuracy"] = info.testAccuracy;
  if (!std::isnan(info.compareLoss))
    record["compare_loss"] = info.compareLoss;
  return record;
}

/// The dict train returns: the run's summary.
nb::dict summaryDict(const TrainSummary &summary) {
  nb::dict out;
  out["status"] = summary.status;
  out["message"] = summary.message;
  out["notes"] = summary.notes;
  out["steps"] = summary.steps;
  out["skipped"] = summary.skipped;
  out["last_loss"] = summary.lastLoss;
  out["test_loss"] = summary.testLoss;
  out["test_accuracy"] = summary.testAccuracy;
  out["compare_last_loss"] = summary.compareLastLoss;
  out["verdict"] = summary.verdict;
  out["metrics_json"] = summary.metricsJson;
  return out;
}

/// Makes failures raise the mixprec.Error subclass of their code.
void registerErrors() {
  // Failures become the mixprec.Error subclass of their code, with notes.
  nb::register_exception_translator([](const std::exception_ptr &p, void *) {
    try {
      std::rethrow_exception(p);
    } catch (const MixprecFailure &f) {
      nb::object errors = nb::module_::import_("mixprec._errors");
      nb::object cls = errors.attr("error_class")(f.code);
      nb::object exc = cls(f.message);
      exc.attr("notes") = nb::cast(f.notes);
      PyErr_SetObject(cls.ptr(), exc.ptr());
    }
  });
}

/// Binds the Module class: a loaded module and its session.
void bindModule(nb::module_ &m) {
  nb::class_<Module>(m, "Module")
      .def("inputs", &Module::inputs)
      .def("outputs", &Module::outputs)
      .def("states", &Module::states)
      .def("run", &Module::run)
      .def("run_on_device",
           [](nb::handle self, const std::vector<std::pair<std::string, InArray>> &given) {
             return nb::cast<Module &>(self).runOnDevice(self, given);
           })
      .def("ir", &Module::ir)
      .def("save", &Module::save)
      .def("read_state", &Module::readState)
      .def("write_state", &Module::writeState)
      .def("reset_state", &Module::resetState)
      .def("save_checkpoint", &Module::saveCheckpoint)
      .def("load_checkpoint", &Module::loadCheckpoint)
      .def_prop_ro("backend", &Module::backendName)
      .def_prop_ro("backend_reason", &Module::backendReason)
      .def_prop_ro("name", &Module::displayName);
}

/// Binds compile, load, report and validate.
void bindCompile(nb::module_ &m) {
  m.def("compile",
        [](const std::string &path, const std::string &display, const std::string &options,
           bool precisionGiven, const std::map<std::string, std::vector<int64_t>> &shapes,
           const std::vector<std::pair<std::string, InArray>> &calibrate,
           const std::string &backend) {
          backendOf(backend);
          CompileRequest r = request(path, display, options, precisionGiven, shapes, calibrate);
          std::unique_ptr<CompiledModel> compiled;
          std::vector<uint8_t> bytes, side;
          int sm = 0;
          {
            nb::gil_scoped_release release;
            sm = backend == "cpu" ? 0 : deviceSmVersion();
            check(compileModel(r, compiled));
            check(compiled->image("module.mpk.weights", sm, bytes, side));
          }
          mixprec_module_t module = loadImage(bytes, side, display);
          auto *result = new Module(module, std::move(compiled), display, backend);
          result->smVersion = sm;
          return result;
        },
        nb::rv_policy::take_ownership);

  m.def("load",
        [](const std::string &path, const std::string &backend) {
          backendOf(backend);
          mixprec_module_t module = nullptr;
          {
            nb::gil_scoped_release release;
            mixprec_status_t status = mixprec_module_load_file(path.c_str(), nullptr, &module);
            check(status);
          }
          return new Module(module, nullptr, path, backend);
        },
        nb::rv_policy::take_ownership);

  m.def("report", [](const std::string &path, const std::string &display,
                     const std::string &options, bool precisionGiven,
                     const std::map<std::string, std::vector<int64_t>> &shapes,
                     const std::vector<std::pair<std::string, InArray>> &calibrate, bool graph) {
    CompileRequest r = request(path, display, options, precisionGiven, shapes, calibrate);
    std::string json, text;
    {
      nb::gil_scoped_release release;
      check(report(r, graph, json, text));
    }
    return std::make_pair(json, text);
  });

  m.def("validate", [](const std::string &path, const std::string &display,
                       const std::string &options, bool precisionGiven,
                       const std::map<std::string, std::vector<int64_t>> &shapes,
                       const std::vector<std::pair<std::string, InArray>> &calibrate,
                       const std::vector<std::pair<std::string, InArray>> &inputs,
                       uint64_t seed, double tolerance) {
    CompileRequest r = request(path, display, options, precisionGiven, shapes, calibrate);
    NamedArrays arrays = namedArrays(inputs, "input");
    std::string json, text;
    int status = 0;
    {
      nb::gil_scoped_release release;
      check(validate(r, arrays, seed, tolerance, json, text, status));
    }
    return std::make_tuple(json, text, status);
  });
}

/// Binds train.
void bindTrain(nb::module_ &m) {
  m.def("train",
        [](const std::string &path, const std::string &display, const std::string &options,
           bool precisionGiven, const std::map<std::string, std::vector<int64_t>> &shapes,
           const std::vector<std::pair<std::string, InArray>> &data,
           const std::vector<std::pair<std::string, InArray>> &testData, nb::object labels,
           nb::object testLabels, const std::map<std::string, nb::object> &settings,
           nb::object print, nb::object callback) {
          TrainRequest r = trainRequest(path, display, options, precisionGiven, shapes, data,
                                        testData, labels, testLabels, settings);
          // The callbacks run with the GIL; a Python exception in one stops
          // the run and is raised once the trainer has returned.
          std::exception_ptr raised;
          std::function<void(const std::string &)> printLine = [&](const std::string &line) {
            nb::gil_scoped_acquire gil;
            if (raised || print.is_none())
              return;
            try {
              print(line);
            } catch (...) {
              raised = std::current_exception();
            }
          };
          std::function<bool(const TrainStepInfo &)> onStep;
          if (!callback.is_none())
            onStep = [&](const TrainStepInfo &info) {
              nb::gil_scoped_acquire gil;
              if (raised)
                return false;
              try {
                nb::object answer = callback(stepRecord(info));
                return answer.is_none() || nb::cast<bool>(answer);
              } catch (...) {
                raised = std::current_exception();
                return false;
              }
            };
          TrainSummary summary;
          Failure failed;
          {
            nb::gil_scoped_release release;
            failed = train(r, printLine, onStep, summary);
          }
          if (raised)
            std::rethrow_exception(raised);
          check(failed);
          return summaryDict(summary);
        },
        nb::arg("path"), nb::arg("display"), nb::arg("options"), nb::arg("precision_given"),
        nb::arg("shapes"), nb::arg("data"), nb::arg("test_data"), nb::arg("labels").none(),
        nb::arg("test_labels").none(), nb::arg("settings"), nb::arg("print").none(),
        nb::arg("callback").none());
}

} // namespace

NB_MODULE(_mixprec, m) {
  m.doc() = "mixprec's compiler and runtime (use the mixprec package, not this module)";
  registerErrors();
  bindModule(m);
  bindCompile(m);
  bindTrain(m);

  m.def("runtime_version", [] { return std::string(mixprec_runtime_version()); });
  m.def("version", [] { return producer(); });
}
