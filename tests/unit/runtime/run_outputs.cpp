//===- run_outputs.cpp - run a module, write every output to a file -------===//
//
// The runner of the `gpu` test (tests/e2e/run_cuda.py) where the mixprec
// CLI is not built (the runtime-only build on a GPU machine): through
// runtime.hpp only, it binds inputs from files, runs on one backend and
// writes each output.
//
//   run_outputs MODULE.mpk --backend cpu|cuda|auto --out DIR
//               [--input NAME=FILE]... [--repeat N] [--no-graphs]
//
// FILE holds f32 values for a float input (the runtime rounds them to the
// input's dtype), else the input's raw bytes in its own dtype. Outputs go to
// DIR/NAME.f32 (float outputs, decoded exactly) or DIR/NAME.raw (the
// output's own bytes). --repeat runs N times (the outputs of the last run
// are written: on CUDA, runs after the first replay the captured graph);
// --no-graphs sets the session's disable_cuda_graphs. Prints the backend
// and its reason. Exit status: 0 on success, 1 on a runtime or file error
// (printed with its code), 2 on bad usage.
//
//===----------------------------------------------------------------------===//
#include "mixprec/runtime.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

int usage() {
  std::fprintf(stderr, "usage: run_outputs MODULE.mpk --backend cpu|cuda|auto --out DIR "
                       "[--input NAME=FILE]... [--repeat N] [--no-graphs]\n");
  return 2;
}

int fail(const std::string &what, const mixprec::Status &s) {
  std::fprintf(stderr, "run_outputs: %s: %s: %s\n", what.c_str(), s.codeName(), s.message());
  return 1;
}

bool isFloat(mixprec_dtype_t d) {
  return d == MIXPREC_DTYPE_F32 || d == MIXPREC_DTYPE_F16 || d == MIXPREC_DTYPE_BF16 ||
         d == MIXPREC_DTYPE_F8E4M3FN || d == MIXPREC_DTYPE_F8E5M2;
}

bool readFile(const std::string &path, std::vector<unsigned char> &out) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return false;
  unsigned char chunk[65536];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof(chunk), f)) > 0)
    out.insert(out.end(), chunk, chunk + n);
  const bool ok = !std::ferror(f);
  std::fclose(f);
  return ok;
}

bool writeFile(const std::string &path, const void *data, size_t size) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  const bool ok = std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

} // namespace

int main(int argc, char **argv) {
  const char *modulePath = nullptr;
  std::string outDir;
  std::vector<std::pair<std::string, std::string>> files;
  mixprec_session_options_t options = MIXPREC_SESSION_OPTIONS_INIT;
  long repeat = 1;
  bool backendGiven = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--backend" && i + 1 < argc) {
      const std::string name = argv[++i];
      backendGiven = true;
      if (name == "cpu")
        options.backend = MIXPREC_BACKEND_CPU;
      else if (name == "cuda")
        options.backend = MIXPREC_BACKEND_CUDA;
      else if (name != "auto")
        return usage();
    } else if (arg == "--out" && i + 1 < argc) {
      outDir = argv[++i];
    } else if (arg == "--input" && i + 1 < argc) {
      const std::string spec = argv[++i];
      const size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0)
        return usage();
      files.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
    } else if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::strtol(argv[++i], nullptr, 10);
      if (repeat < 1)
        return usage();
    } else if (arg == "--no-graphs") {
      options.disable_cuda_graphs = 1;
    } else if (!modulePath && arg[0] != '-') {
      modulePath = argv[i];
    } else {
      return usage();
    }
  }
  if (!modulePath || outDir.empty() || !backendGiven)
    return usage();

  mixprec::Module module;
  if (mixprec::Status s = mixprec::Module::load(modulePath, module); !s.ok())
    return fail(modulePath, s);
  mixprec::Session session;
  if (mixprec::Status s = mixprec::Session::create(module, session, options); !s.ok())
    return fail("session", s);
  std::printf("backend %s: %s\n", mixprec_backend_name(session.backend()),
              session.backendReason());

  for (const auto &[name, path] : files) {
    size_t index = 0;
    if (mixprec::Status s = module.findInput(name.c_str(), index); !s.ok())
      return fail("--input " + name, s);
    mixprec_tensor_info_t info;
    (void)module.inputInfo(index, info);
    std::vector<unsigned char> bytes;
    if (!readFile(path, bytes)) {
      std::fprintf(stderr, "run_outputs: cannot read '%s'\n", path.c_str());
      return 1;
    }
    const mixprec_dtype_t dtype = isFloat(info.dtype) ? MIXPREC_DTYPE_F32 : info.dtype;
    const std::vector<int64_t> dims(info.dims, info.dims + info.rank);
    if (mixprec::Status s = session.bindInputAt(index, dtype, dims, bytes.data(), bytes.size());
        !s.ok())
      return fail(path, s);
  }
  for (long r = 0; r < repeat; ++r)
    if (mixprec::Status s = session.run(); !s.ok())
      return fail("run", s);

  for (size_t i = 0; i < module.outputCount(); ++i) {
    mixprec_tensor_info_t info;
    (void)module.outputInfo(i, info);
    std::string path = outDir + "/" + info.name;
    std::vector<unsigned char> bytes;
    if (isFloat(info.dtype)) {
      bytes.resize(info.element_count * sizeof(float));
      path += ".f32";
      if (mixprec::Status s = session.copyOutput(i, MIXPREC_DTYPE_F32, bytes.data(), bytes.size());
          !s.ok())
        return fail(std::string("output ") + info.name, s);
    } else {
      bytes.resize(info.byte_size);
      path += ".raw";
      if (mixprec::Status s = session.copyOutput(i, info.dtype, bytes.data(), bytes.size());
          !s.ok())
        return fail(std::string("output ") + info.name, s);
    }
    if (!writeFile(path, bytes.data(), bytes.size())) {
      std::fprintf(stderr, "run_outputs: cannot write '%s'\n", path.c_str());
      return 1;
    }
  }
  return 0;
}
