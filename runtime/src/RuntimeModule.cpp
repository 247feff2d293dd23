//===- RuntimeModule.cpp - the C API's module handles -----------------------===//
//
// Loading, retaining and releasing modules, and their input and output
// queries.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/RuntimeHandles.h"

#include <cstring>
#include <new>
#include <string>
#include <vector>

using mixprec::runtime::LoadedModule;
using mixprec::runtime::Status;
using mixprec::runtime::TensorDesc;
namespace rt = mixprec::runtime;
using namespace mixprec::runtime::capi;

namespace {

mixprec_status_t toLoadOptions(const mixprec_load_options_t *options, rt::LoadOptions &out) {
  if (mixprec_status_t s = checkOptionsSize(options, "mixprec_load_options_t",
                                            "MIXPREC_LOAD_OPTIONS_INIT"))
    return s;
  if (!options)
    return nullptr;
  if (MIXPREC_HAS_FIELD(mixprec_load_options_t, options, side_file_dir) &&
      options->side_file_dir)
    out.sideFileDir = options->side_file_dir;
  if (MIXPREC_HAS_FIELD(mixprec_load_options_t, options, side_file_size)) {
    out.sideFileData = options->side_file_data;
    out.sideFileSize = options->side_file_size;
    if (!out.sideFileData && out.sideFileSize)
      return invalidArgument("side_file_data is NULL but side_file_size is " +
                             std::to_string(out.sideFileSize));
  }
  return nullptr;
}

mixprec_status_t finishLoad(const Status &s, std::shared_ptr<const LoadedModule> loaded,
                            mixprec_module_t *out_module) {
  if (!s.ok())
    return toC(s);
  auto *module = new (std::nothrow) mixprec_module_s();
  if (!module)
    return makeStatus(MIXPREC_OUT_OF_MEMORY, "cannot allocate a module handle");
  module->module = std::move(loaded);
  for (uint32_t t : module->module->inputs())
    module->inputs.push_back(describe(module->module->tensors()[t]));
  for (uint32_t t : module->module->outputs())
    module->outputs.push_back(describe(module->module->tensors()[t]));
  for (const rt::StateDesc &state : module->module->states()) {
    module->states.push_back(describe(module->module->tensors()[state.tensor]));
    module->states.back().name = state.name.c_str();
  }
  *out_module = module;
  return nullptr;
}

/// "x, mask" (the names a lookup could have matched).
std::string nameList(const std::vector<mixprec_tensor_info_t> &infos) {
  std::string list;
  for (const mixprec_tensor_info_t &info : infos)
    list += (list.empty() ? "" : ", ") + std::string(info.name);
  return list.empty() ? "(none)" : list;
}

} // namespace

namespace mixprec::runtime::capi {

mixprec_tensor_info_t describe(const TensorDesc &t) {
  mixprec_tensor_info_t info;
  info.name = t.name.c_str();
  info.dtype = static_cast<mixprec_dtype_t>(t.dtype);
  info.rank = t.shape.size();
  info.dims = t.shape.data();
  info.element_count = static_cast<size_t>(t.elements);
  info.byte_size = static_cast<size_t>(t.bytes);
  return info;
}

mixprec_status_t findByName(const std::vector<mixprec_tensor_info_t> &infos, const char *name,
                            const char *role, size_t *out_index) {
  if (!name || !out_index)
    return invalidArgument(std::string("find_") + role + ": name and out_index must not be NULL");
  for (size_t i = 0; i < infos.size(); ++i)
    if (std::strcmp(infos[i].name, name) == 0) {
      *out_index = i;
      return nullptr;
    }
  return makeStatus(MIXPREC_NOT_FOUND, std::string("no ") + role + " named '" + name +
                                           "'; the module's " + role + "s are: " +
                                           nameList(infos));
}

/// Info `index` of `infos` (the module's `role`s) into `out_info`;
/// INVALID_ARGUMENT for a NULL module or an index out of range.
mixprec_status_t tensorInfo(mixprec_module_t module, size_t index, const char *role,
                            const std::vector<mixprec_tensor_info_t> *infos,
                            mixprec_tensor_info_t *out_info) {
  if (!module || !out_info)
    return invalidArgument(std::string(role) + "_info: module and out_info must not be NULL");
  if (index >= infos->size())
    return invalidArgument(std::string(role) + " index " + std::to_string(index) +
                           " out of range: the module has " + std::to_string(infos->size()) +
                           " " + role + "s");
  *out_info = (*infos)[index];
  return nullptr;
}

} // namespace mixprec::runtime::capi

void mixprec_load_options_init(mixprec_load_options_t *options) {
  if (options)
    *options = mixprec_load_options_t MIXPREC_LOAD_OPTIONS_INIT;
}

mixprec_status_t mixprec_module_load_file(const char *path, const mixprec_load_options_t *options,
                                          mixprec_module_t *out_module) {
  if (!path || !out_module)
    return invalidArgument("mixprec_module_load_file: path and out_module must not be NULL");
  rt::LoadOptions loadOptions;
  if (mixprec_status_t s = toLoadOptions(options, loadOptions))
    return s;
  std::shared_ptr<const LoadedModule> loaded;
  Status s = LoadedModule::loadFile(path, loadOptions, loaded);
  return finishLoad(s, std::move(loaded), out_module);
}

mixprec_status_t mixprec_module_load_memory(const void *data, size_t size,
                                            const mixprec_load_options_t *options,
                                            mixprec_module_t *out_module) {
  if ((!data && size) || !out_module)
    return invalidArgument("mixprec_module_load_memory: data and out_module must not be NULL");
  rt::LoadOptions loadOptions;
  if (mixprec_status_t s = toLoadOptions(options, loadOptions))
    return s;
  std::shared_ptr<const LoadedModule> loaded;
  Status s = LoadedModule::loadMemory(data, size, loadOptions, loaded);
  return finishLoad(s, std::move(loaded), out_module);
}

void mixprec_module_retain(mixprec_module_t module) {
  if (module)
    module->references.fetch_add(1, std::memory_order_relaxed);
}

void mixprec_module_release(mixprec_module_t module) {
  if (module && module->references.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete module;
}

uint32_t mixprec_module_schema_version(mixprec_module_t module) {
  return module ? module->module->version() : 0;
}

const char *mixprec_module_producer(mixprec_module_t module) {
  return module ? module->module->producer().c_str() : "";
}

size_t mixprec_module_input_count(mixprec_module_t module) {
  return module ? module->inputs.size() : 0;
}

size_t mixprec_module_output_count(mixprec_module_t module) {
  return module ? module->outputs.size() : 0;
}

mixprec_status_t mixprec_module_input_info(mixprec_module_t module, size_t index,
                                           mixprec_tensor_info_t *out_info) {
  return tensorInfo(module, index, "input", module ? &module->inputs : nullptr, out_info);
}

mixprec_status_t mixprec_module_output_info(mixprec_module_t module, size_t index,
                                            mixprec_tensor_info_t *out_info) {
  return tensorInfo(module, index, "output", module ? &module->outputs : nullptr, out_info);
}

mixprec_status_t mixprec_module_find_input(mixprec_module_t module, const char *name,
                                           size_t *out_index) {
  if (!module)
    return invalidArgument("find_input: module must not be NULL");
  return findByName(module->inputs, name, "input", out_index);
}

mixprec_status_t mixprec_module_find_output(mixprec_module_t module, const char *name,
                                            size_t *out_index) {
  if (!module)
    return invalidArgument("find_output: module must not be NULL");
  return findByName(module->outputs, name, "output", out_index);
}
