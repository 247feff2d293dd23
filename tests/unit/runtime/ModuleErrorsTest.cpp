//===- ModuleErrorsTest.cpp - bad modules and side files ------------------===//
//
// Each case forges one defect into an otherwise valid module and checks the
// status code and that the message names what is wrong.
//
//===----------------------------------------------------------------------===//
#include "runtime/format/ModuleHash.h"
#include "tests/unit/runtime/TestModules.h"
#include "tests/unit/runtime/TestUtil.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <sys/stat.h>

namespace mixprec::testing {
namespace {

/// Expects loading `built` to fail with `code` and a message containing
/// `fragment`.
void expectLoadError(const BuiltModule &built, mixprec_status_code_t code,
                     const std::string &fragment) {
  std::string message;
  EXPECT_EQ(loadCode(built, &message), code) << message;
  EXPECT_NE(message.find(fragment), std::string::npos)
      << "message: " << message << "\nexpected to contain: " << fragment;
}

//===----------------------------------------------------------------------===//
// Side files
//===----------------------------------------------------------------------===//

class SideFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = makeTempDir();
    ASSERT_FALSE(dir.empty());
    built = mlpBuilder(true).build();
    ASSERT_FALSE(built.sideFile.empty());
    modulePath = dir + "/mlp.mpk";
    ASSERT_TRUE(writeFile(modulePath, built.module));
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  Status load(Module &module) { return Module::load(modulePath.c_str(), module); }
  /// Expects loading to fail with SIDE_FILE_ERROR and a message containing
  /// each of `fragments`.
  void expectRefused(std::initializer_list<std::string> fragments) {
    Module module;
    Status s = load(module);
    EXPECT_EQ(s.code(), MIXPREC_SIDE_FILE_ERROR) << s.message();
    for (const std::string &fragment : fragments)
      EXPECT_NE(std::string(s.message()).find(fragment), std::string::npos)
          << "message: " << s.message() << "\nexpected to contain: " << fragment;
  }

  std::string dir, modulePath;
  BuiltModule built;
};

TEST_F(SideFileTest, LoadsAndRunsBesideTheModule) {
  ASSERT_TRUE(writeFile(dir + "/weights.bin", built.sideFile));
  Module module;
  ASSERT_OK(load(module));
  Session session;
  ASSERT_OK(Session::create(module, session, MIXPREC_BACKEND_CPU));
  std::vector<float> x(5 * 24, 0.5f);
  ASSERT_OK(session.bindInput("x", {5, 24}, x.data()));
  ASSERT_OK(session.run());
}

TEST_F(SideFileTest, Missing) { expectRefused({dir + "/weights.bin' cannot be opened"}); }

TEST_F(SideFileTest, WrongSize) {
  std::vector<uint8_t> shorter(built.sideFile.begin(), built.sideFile.end() - 1);
  ASSERT_TRUE(writeFile(dir + "/weights.bin", shorter));
  expectRefused({"is " + std::to_string(shorter.size()) + " bytes, the module expects " +
                 std::to_string(built.sideFile.size())});
}

TEST_F(SideFileTest, WrongHash) {
  std::vector<uint8_t> altered = built.sideFile;
  altered[altered.size() / 2] ^= 0x10;
  ASSERT_TRUE(writeFile(dir + "/weights.bin", altered));
  expectRefused({"XXH64", "weights.bin"});
}

// A module from a writer before SideFile.xxh64 is checked by FNV-1a 64.
TEST_F(SideFileTest, WithoutXxh64TheFnvIsChecked) {
  ModuleBuilder b = mlpBuilder(true);
  b.omitSideFileXxh64 = true;
  BuiltModule old = b.build();
  ASSERT_EQ(old.sideFile, built.sideFile);
  ASSERT_TRUE(writeFile(modulePath, old.module));
  ASSERT_TRUE(writeFile(dir + "/weights.bin", old.sideFile));
  Module module;
  ASSERT_OK(load(module));
  std::vector<uint8_t> altered = old.sideFile;
  altered[altered.size() / 3] ^= 0x01;
  ASSERT_TRUE(writeFile(dir + "/weights.bin", altered));
  expectRefused({"FNV-1a 64"});
}

// Where SideFile.xxh64 is present it decides: a wrong FNV-1a beside the
// right XXH64 loads, the right FNV-1a beside a wrong XXH64 does not.
TEST_F(SideFileTest, Xxh64DecidesWherePresent) {
  ASSERT_TRUE(writeFile(dir + "/weights.bin", built.sideFile));
  ModuleBuilder wrongFnv = mlpBuilder(true);
  wrongFnv.sideFileHash = 0x0123456789abcdefull;
  ASSERT_TRUE(writeFile(modulePath, wrongFnv.build().module));
  Module module;
  ASSERT_OK(load(module));
  ModuleBuilder wrongXxh = mlpBuilder(true);
  wrongXxh.sideFileXxh64 = runtime::xxh64(built.sideFile.data(), built.sideFile.size()) ^ 1u;
  ASSERT_TRUE(writeFile(modulePath, wrongXxh.build().module));
  expectRefused({"XXH64"});
}

TEST_F(SideFileTest, DirectoryAndBytesFromOptions) {
  const std::string other = dir + "/elsewhere";
  ASSERT_EQ(mkdir(other.c_str(), 0700), 0);
  ASSERT_TRUE(writeFile(other + "/weights.bin", built.sideFile));
  mixprec_load_options_t options;
  mixprec_load_options_init(&options);
  options.side_file_dir = other.c_str();
  Module module;
  ASSERT_OK(Module::load(modulePath.c_str(), module, &options));
  // From memory without the bytes, the side file is looked up in the
  // current directory, where it is not.
  Module fromMemory;
  EXPECT_EQ(Module::loadFromMemory(built.module.data(), built.module.size(), fromMemory).code(),
            MIXPREC_SIDE_FILE_ERROR);
  ASSERT_OK(loadBuilt(built, fromMemory));
  std::vector<uint8_t> altered = built.sideFile;
  altered[0] ^= 1;
  mixprec_load_options_t bytes = MIXPREC_LOAD_OPTIONS_INIT;
  bytes.side_file_data = altered.data();
  bytes.side_file_size = altered.size();
  EXPECT_EQ(Module::loadFromMemory(built.module.data(), built.module.size(), fromMemory, &bytes)
                .code(),
            MIXPREC_SIDE_FILE_ERROR);
}

TEST(SideFilePath, MustStayInTheModuleDirectory) {
  for (const char *path : {"/etc/weights.bin", "../weights.bin", "a/../../w.bin"}) {
    ModuleBuilder b = mlpBuilder(true);
    b.sideFilePath = path;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, std::string("'") + path + "'");
  }
}

//===----------------------------------------------------------------------===//
// Files and versions
//===----------------------------------------------------------------------===//

TEST(ModuleFile, MissingFileIsAnIoError) {
  Module module;
  Status s = Module::load("/nonexistent/dir/model.mpk", module);
  EXPECT_EQ(s.code(), MIXPREC_IO_ERROR);
  EXPECT_NE(std::string(s.message()).find("/nonexistent/dir/model.mpk"), std::string::npos);
}

TEST(ModuleFile, NewerSchemaVersion) {
  ModuleBuilder b = mlpBuilder(false);
  b.version = 5;
  std::string message;
  EXPECT_EQ(loadCode(b.build(), &message), MIXPREC_UNSUPPORTED_VERSION);
  EXPECT_NE(message.find("version 5 is newer"), std::string::npos) << message;
  EXPECT_NE(message.find("(version 4"), std::string::npos) << message;
  // Versions 3 and 4 only added state and the CUDA error record: a module
  // without either loads as 2, 3 or 4.
  for (uint32_t readable : {2u, 3u, 4u}) {
    b.version = readable;
    EXPECT_EQ(loadCode(b.build(), &message), MIXPREC_OK) << message;
  }
  b.version = 0;
  expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "version 0");
}

TEST(ModuleFile, OlderSchemaVersion) {
  // Version 1 flattened routine attributes into int_attrs/float_attrs; a v2
  // runtime refuses it (naming both versions) rather than reading routines
  // without their options. tests/lit/cli/module-version.test loads a real
  // v1 module.
  ModuleBuilder b = convBuilder();
  b.version = 1;
  expectLoadError(b.build(), MIXPREC_UNSUPPORTED_VERSION,
                  "module schema version 1 is older than this runtime reads (version 2, "
                  "runtime 0.1.0); recompile the module");
}

//===----------------------------------------------------------------------===//
// State bindings (schema v3)
//===----------------------------------------------------------------------===//

/// x [4] -> s_new = x + s (s: state [4], from 1..4) -> y = s_new; the MLP
/// plan's shape of things with one state.
ModuleBuilder stateBuilder() {
  ModuleBuilder b;
  const int x = b.input("x", fb::DType::F32, {4});
  const int s = b.state("s", fb::DType::F32, {4}, {1, 2, 3, 4});
  const int next = b.activation("s_new", fb::DType::F32, {4});
  const int y = b.activation("y", fb::DType::F32, {4});
  KernelSpec &k = b.kernel("step", {4}, 0);
  const int sum = k.binary(fb::OpCode::Add, k.load(x, {1}), k.load(s, {1}));
  k.store(next, sum, {1}, fb::DType::F32);
  k.store(y, sum, {1}, fb::DType::F32);
  b.states.back().update = static_cast<uint32_t>(next);
  b.output(y);
  return b;
}

TEST(ModuleState, ValidModuleLoadsWithoutStateAmongInputsAndOutputs) {
  Module module;
  ASSERT_OK(loadBuilt(stateBuilder().build(), module));
  EXPECT_EQ(module.schemaVersion(), 3u);
  EXPECT_EQ(module.inputCount(), 1u);
  EXPECT_EQ(module.outputCount(), 1u);
  ASSERT_EQ(module.stateCount(), 1u);
  mixprec_tensor_info_t info;
  ASSERT_OK(module.stateInfo(0, info));
  EXPECT_STREQ(info.name, "s");
  EXPECT_EQ(info.byte_size, 16u);
  EXPECT_EQ(module.stateInfo(1, info).code(), MIXPREC_INVALID_ARGUMENT);
  // Each run adds x to the state the session keeps.
  Session session;
  ASSERT_OK(Session::create(module, session, MIXPREC_BACKEND_CPU));
  std::vector<float> x(4, 1.0f), y, state(4);
  ASSERT_OK(session.bindInput("x", {4}, x.data()));
  for (int run = 1; run <= 3; ++run) {
    ASSERT_OK(session.run());
    ASSERT_OK(session.copyOutput(0, y));
    ASSERT_OK(session.readState("s", state.data(), 16));
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(y[i], float(i + 1 + run)) << "run " << run;
      EXPECT_EQ(state[i], y[i]);
    }
  }
}

TEST(ModuleState, IndicesOutOfRangeAreRefused) {
  for (int field = 0; field < 3; ++field) {
    ModuleBuilder b = stateBuilder();
    StateSpec &st = b.states.back();
    (field == 0 ? st.tensor : field == 1 ? st.update : st.initial) = 1000;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    field == 2 ? "state #0 's': initial value is constant 1000 of"
                               : "state #0 's': tensor ");
  }
}

TEST(ModuleState, InconsistentBindingsAreRefused) {
  ModuleBuilder b = stateBuilder();
  b.states.back().name = "";
  expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "state #0 has no name");
  b = stateBuilder();
  b.states.push_back(b.states.back());
  expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "two states are named 's'");
  b = stateBuilder();
  b.states.back().update = static_cast<uint32_t>(
      b.activation("wide", fb::DType::F32, {5}));
  expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "its update tensor #");
  b = stateBuilder();
  b.states.back().initial = 0; // the only constant is s.init (16 bytes): fine
  b.constantFloats("short", fb::DType::F32, {2}, {1, 2});
  b.states.back().initial = 1;
  expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "its initial value (constant #1) holds 8");
  b = stateBuilder();
  b.states.back().tensor = b.inputs[0];
  expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "shares its bytes with input");
  b = stateBuilder();
  b.output(static_cast<int>(b.states.back().tensor));
  expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "shares its bytes with output");
  b = stateBuilder();
  b.states.back().tensor = 2; // s.init, a constant
  expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "a constant");
}

TEST(ModuleFile, ContentHashEntryMovedOutOfTheTable) {
  // A one-bit flip in the vtable can move content_hash past the module
  // table onto zero bytes (which read as "unsealed", skipping the hash
  // check); the FlatBuffers verifier only keeps it inside the buffer.
  // Found by ContentHashCatchesAnyChangedByte on clang's layout of the MLP.
  BuiltModule moved = mlpBuilder(false).build();
  uint8_t *data = moved.module.data();
  const auto *table = reinterpret_cast<const flatbuffers::Table *>(fb::GetModule(data));
  const size_t root = reinterpret_cast<const uint8_t *>(table) - data;
  const uint8_t *vtable = table->GetVTable();
  const uint16_t tableBytes = flatbuffers::ReadScalar<uint16_t>(vtable + 2);
  size_t zeros = (root + tableBytes + 7) / 8 * 8;
  while (zeros + 8 <= moved.module.size() &&
         std::any_of(data + zeros, data + zeros + 8, [](uint8_t b) { return b != 0; }))
    zeros += 8;
  ASSERT_LE(zeros + 8, moved.module.size()) << "no 8 zero bytes after the module table";
  const uint16_t entry = static_cast<uint16_t>(zeros - root);
  std::memcpy(const_cast<uint8_t *>(vtable) + fb::Module::VT_CONTENT_HASH, &entry, 2);
  expectLoadError(moved, MIXPREC_INVALID_MODULE, "of the module table lies outside it");
}

TEST(ModuleFile, TruncatedAndForeignBytes) {
  const BuiltModule built = mlpBuilder(false).build();
  BuiltModule cut = built;
  cut.module.resize(5);
  expectLoadError(cut, MIXPREC_INVALID_MODULE, "truncated: 5 bytes");
  cut.module.assign(built.module.begin(), built.module.begin() + built.module.size() / 2);
  expectLoadError(cut, MIXPREC_INVALID_MODULE, "FlatBuffers verifier");
  BuiltModule foreign = built;
  std::memcpy(foreign.module.data() + 4, "ONNX", 4);
  expectLoadError(foreign, MIXPREC_INVALID_MODULE, "file identifier is 'ONNX', expected 'MPK1'");
}

TEST(ModuleFile, ContentHashCatchesAnyChangedByte) {
  const BuiltModule built = mlpBuilder(false).build();
  // Every single-byte change of a sealed module is reported (a flip in a
  // weight, a padding byte, a name...).
  size_t detected = 0;
  for (size_t i = 0; i < built.module.size(); i += 7) {
    BuiltModule changed = built;
    changed.module[i] ^= 0x01;
    std::string message;
    if (loadCode(changed, &message) != MIXPREC_OK)
      ++detected;
    else
      ADD_FAILURE() << "a change at byte " << i << " went unnoticed";
  }
  EXPECT_GT(detected, 0u);
  // An unsealed module (no hash) still loads; a writer that forgot to seal
  // (the placeholder is still there) is told so.
  ModuleBuilder unsealed = mlpBuilder(false);
  unsealed.seal = false;
  EXPECT_EQ(loadCode(unsealed.build()), MIXPREC_OK);
  BuiltModule placeholder = built;
  size_t offset = 0;
  ASSERT_TRUE(runtime::findContentHashField(placeholder.module.data(), placeholder.module.size(),
                                            &offset));
  std::memcpy(placeholder.module.data() + offset, &runtime::kContentHashPlaceholder, 8);
  expectLoadError(placeholder, MIXPREC_INVALID_MODULE, "the writer did not seal it");
}

//===----------------------------------------------------------------------===//
// Semantic verification: one forged defect each
//===----------------------------------------------------------------------===//

/// A small valid plan: y = bf16(x + c); the tests break one thing in it.
struct Small {
  ModuleBuilder b;
  int x, c, y;
  Small() {
    x = b.input("x", fb::DType::F32, {4, 8});
    c = b.constantFloats("c", fb::DType::F32, {8}, seededFloats(8, 1, 0, 1));
    y = b.activation("y", fb::DType::BF16, {4, 8});
    // Instructions: 0 load x, 1 load c, 2 add, 3 store y.
    KernelSpec &k = b.kernel("add", {4, 8}, 0);
    const int vx = k.load(x, {8, 1});
    const int vc = k.load(c, {0, 1});
    k.store(y, k.binary(fb::OpCode::Add, vx, vc), {8, 1}, fb::DType::BF16);
    b.output(y);
  }
  KernelSpec &kernel() { return b.kernels[0]; }
};

TEST(Verify, SmallPlanIsValid) {
  Small s;
  EXPECT_EQ(loadCode(s.b.build()), MIXPREC_OK);
}

TEST(Verify, TensorsAndArena) {
  {
    Small s;
    (void)s.b.build(); // lays out the arena
    s.b.tensors[s.y].offset = 100;
    expectLoadError(s.b.build(true), MIXPREC_INVALID_MODULE,
                    "tensor #2 'y' has arena offset 100, not a multiple of 256");
  }
  {
    Small s;
    s.b.arenaBytes = 300;
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE, "beyond arena_bytes 300");
  }
  {
    Small s;
    s.b.tensors[s.x].shape = {4, -8};
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE, "'x' has shape [4,-8]");
  }
  {
    Small s;
    s.b.tensors[s.x].shape = {1 << 30, 1 << 30};
    expectLoadError(s.b.build(true), MIXPREC_INVALID_MODULE, "more than 2^48 elements");
  }
  {
    Small s;
    s.b.tensors[s.x].dtype = static_cast<fb::DType>(9);
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE, "unknown dtype 9");
  }
  {
    Small s;
    s.b.tensors[s.c].constant = 5;
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE, "refers to constant 5 of 1");
  }
  {
    Small s;
    s.b.constants[0].data.resize(28);
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE,
                    "'c' (f32 [8]) needs 32 bytes, constant #0 holds 28");
  }
}

TEST(Verify, KernelPrograms) {
  {
    Small s;
    s.kernel().program[2].operands = {5, 0};
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE,
                    "kernel #0 'add' instruction #2 (Add): operand 5 is not an earlier instruction");
  }
  {
    Small s;
    s.kernel().program[0].strides = {8, 1, 0};
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE,
                    "3 strides for a rank-2 iteration space");
  }
  {
    Small s;
    s.kernel().program[0].strides = {9, 1};
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE,
                    "strides reach element offsets [0, 34] of tensor #0 'x', which has 32");
  }
  {
    Small s;
    s.kernel().program[1].strides = {0, -1};
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE, "element offsets [-7, 0]");
  }
  {
    Small s;
    s.kernel().program[0].tensor = 17;
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE, "tensor index 17 out of range");
  }
  {
    Small s;
    s.kernel().program[3].tensor = s.c;
    s.kernel().program[3].strides = {0, 1};
    s.kernel().program[3].dtype = fb::DType::F32;
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE, "stores to tensor #1 'c', a constant");
  }
  {
    Small s;
    s.kernel().program[3].dtype = fb::DType::F16;
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE, "dtype f16 but tensor #2 'y' is bf16");
  }
  {
    Small s;
    s.kernel().program[3].strides = {8, 0};
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE,
                    "the stored value varies along dim 1 but the stride there is 0");
  }
  {
    Small s;
    s.kernel().program[2].opcode = static_cast<fb::OpCode>(99);
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE, "unknown opcode 99");
  }
  {
    Small s;
    s.kernel().program[2].operands = {0};
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE, "takes 2 operands, has 1");
  }
  {
    Small s;
    s.kernel().rowDims = 3;
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE, "row_dims 3 out of range");
  }
  {
    // A dim that no access walks only repeats work.
    Small s;
    s.kernel().shape = {400, 8};
    for (int i : {0, 3})
      s.kernel().program[i].strides = {0, 1};
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE,
                    "no Load or Store walks dim 0 (size 400)");
  }
  {
    // Empty rows: a Store that runs once per outer point (it does not walk
    // the rows) must not store a value read from the rows' elements.
    ModuleBuilder b;
    const int e = b.activation("e", fb::DType::F32, {2, 0});
    const int y = b.activation("y", fb::DType::F32, {2});
    KernelSpec &k = b.kernel("bad_rows", {2, 0}, 1);
    k.store(y, k.unary(fb::OpCode::Exp, k.load(e, {0, 1})), {1, 0}, fb::DType::F32);
    b.output(y);
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "reads the elements of an empty row");
  }
  {
    // ... and it is bounded over the outer points.
    ModuleBuilder b;
    const int e = b.activation("e", fb::DType::F32, {2, 0});
    const int y = b.activation("y", fb::DType::F32, {2});
    KernelSpec &k = b.kernel("far_rows", {2, 0}, 1);
    k.store(y, k.unary(fb::OpCode::RowSum, k.load(e, {0, 1})), {5, 0}, fb::DType::F32);
    b.output(y);
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "strides reach element offsets [0, 5]");
  }
  {
    // An Amax's Store writes element 0 even over an empty space.
    ModuleBuilder b;
    const int e = b.activation("e", fb::DType::F32, {0});
    const int y = b.activation("y", fb::DType::F32, {0});
    KernelSpec &k = b.kernel("amax_nowhere", {0}, 0);
    k.store(y, k.unary(fb::OpCode::Amax, k.load(e, {1})), {0}, fb::DType::F32);
    b.output(y);
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "stores an Amax into tensor #1 'y'");
  }
  {
    Small s;
    s.kernel().rowDims = 1;
    int v = 2;
    for (int i = 0; i < 17; ++i)
      v = s.kernel().unary(fb::OpCode::RowSum, v);
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE, "row reductions nest more than 16 deep");
  }
  {
    Small s;
    KernelSpec &k = s.kernel();
    int amax = k.unary(fb::OpCode::Amax, 0);
    k.binary(fb::OpCode::Add, amax, 0);
    expectLoadError(s.b.build(), MIXPREC_INVALID_MODULE, "may only be stored");
  }
}

/// Small with CUDA code (Module.cuda, Kernel.cuda), as `mixprec compile
/// --arch` writes it, and a second kernel that stores y's amax into `a`
/// (so its launch zeroes `a` first).
struct SmallCuda {
  Small s;
  int a;
  SmallCuda() {
    a = s.b.activation("a", fb::DType::F32, {});
    KernelSpec &k = s.b.kernel("amax", {4, 8}, 0);
    k.store(a, k.unary(fb::OpCode::Amax, k.load(s.y, {8, 1})), {0, 0}, fb::DType::F32);
    s.b.kernels[0].cuda = launch("mp_main_k0_add", {s.x, s.c, s.y}, {});
    s.b.kernels[1].cuda = launch("mp_main_k1_amax", {s.y, a}, {a});
    fb::CudaProgramT program;
    program.sm_version = 90;
    program.nvrtc_version = "13.0";
    program.source = "// the CUDA C++";
    program.ptx = ".version 9.0\n.target sm_90\n";
    s.b.cuda = program;
  }
  static fb::CudaLaunchT launch(const std::string &function, std::vector<int32_t> params,
                                std::vector<int32_t> zeroed) {
    fb::CudaLaunchT l;
    l.function = function;
    l.grid_size = 1;
    l.block_size = 256;
    l.params = std::move(params);
    l.zeroed = std::move(zeroed);
    return l;
  }
  fb::CudaLaunchT &launch(size_t kernel) { return *s.b.kernels[kernel].cuda; }
};

TEST(Verify, CudaCode) {
  {
    SmallCuda m;
    EXPECT_EQ(loadCode(m.s.b.build()), MIXPREC_OK);
    // A CUBIN alone will do; so will an empty grid (nothing to launch).
    m.s.b.cuda->ptx.clear();
    m.s.b.cuda->cubin = {0x7f, 'E', 'L', 'F'};
    m.launch(0).grid_size = 0;
    EXPECT_EQ(loadCode(m.s.b.build()), MIXPREC_OK);
  }
  const std::string badBlock = "is not a multiple of 32 in [32, 1024]";
  for (int32_t block : {0, 48, 2048, -32}) {
    SmallCuda m;
    m.launch(1).block_size = block;
    expectLoadError(m.s.b.build(), MIXPREC_INVALID_MODULE,
                    "kernel #1 'amax': CUDA launch: block_size " + std::to_string(block) + " " +
                        badBlock);
  }
  for (int64_t grid : {int64_t(-1), int64_t(1) << 31}) {
    SmallCuda m;
    m.launch(0).grid_size = grid;
    expectLoadError(m.s.b.build(), MIXPREC_INVALID_MODULE,
                    "grid_size " + std::to_string(grid) + " out of range [0, 2^31-1]");
  }
  for (std::string name : {"", "9lives", "mp k0"}) {
    SmallCuda m;
    m.launch(0).function = name;
    expectLoadError(m.s.b.build(), MIXPREC_INVALID_MODULE,
                    "kernel #0 'add': CUDA launch: function name '" + name +
                        "' is not a C identifier");
  }
  {
    SmallCuda m;
    m.launch(1).function = "mp_main_k0_add";
    expectLoadError(m.s.b.build(), MIXPREC_INVALID_MODULE,
                    "kernel #1 'amax': CUDA launch: function 'mp_main_k0_add' is also "
                    "kernel #0 'add''s");
  }
  {
    SmallCuda m;
    m.launch(0).params = {m.s.x, m.s.c, 17};
    expectLoadError(m.s.b.build(), MIXPREC_INVALID_MODULE, "parameter #2 is tensor 17 of 4");
  }
  {
    SmallCuda m;
    m.launch(0).params = {m.s.c, m.s.x, m.s.y}; // the loads swapped
    expectLoadError(m.s.b.build(), MIXPREC_INVALID_MODULE,
                    "kernel #0 'add': CUDA launch: 3 parameters do not match the program's 2 "
                    "loaded and 1 stored tensors, in order");
  }
  {
    SmallCuda m;
    m.launch(1).params = {m.s.y}; // the result missing
    expectLoadError(m.s.b.build(), MIXPREC_INVALID_MODULE, "1 parameters do not match");
  }
  {
    SmallCuda m;
    m.launch(0).zeroed = {m.s.y}; // stored, but no amax
    expectLoadError(m.s.b.build(), MIXPREC_INVALID_MODULE,
                    "kernel #0 'add': CUDA launch: zeroes tensor #2 'y', which is not an F32 "
                    "tensor the kernel stores an Amax into");
  }
  {
    SmallCuda m;
    m.launch(1).zeroed = {9};
    expectLoadError(m.s.b.build(), MIXPREC_INVALID_MODULE, "zeroed tensor 9 of 4");
  }
  {
    SmallCuda m;
    m.s.b.cuda->ptx.clear();
    expectLoadError(m.s.b.build(), MIXPREC_INVALID_MODULE,
                    "the CUDA program has neither PTX nor a CUBIN");
  }
  {
    SmallCuda m;
    m.s.b.cuda->sm_version = 0;
    expectLoadError(m.s.b.build(), MIXPREC_INVALID_MODULE,
                    "the CUDA program's sm_version 0 is not an architecture");
  }
  {
    // Some kernels without code: refused, not run half on the GPU.
    SmallCuda m;
    m.s.b.kernels[1].cuda.reset();
    expectLoadError(m.s.b.build(), MIXPREC_INVALID_MODULE,
                    "kernel #1 'amax' has no CUDA launch, but the module has a CUDA program");
  }
  {
    SmallCuda m;
    m.s.b.cuda.reset();
    expectLoadError(m.s.b.build(), MIXPREC_INVALID_MODULE,
                    "kernel #0 'add' has a CUDA launch, but the module has no CUDA program");
  }
}

/// SmallCuda and a routine after its kernels, t = transpose(y), as a kernel
/// of the program (Routine.cuda), as `mixprec compile --arch` writes it.
struct SmallCudaRoutine {
  SmallCuda m;
  int t;
  SmallCudaRoutine() {
    t = m.s.b.activation("t", fb::DType::BF16, {8, 4});
    RoutineSpec o;
    o.name = "t";
    o.opType = "transpose";
    o.inputs = {m.s.y};
    o.outputs = {t};
    o.options = transposeOptions({1, 0});
    o.cuda = SmallCuda::launch("mp_main_r0_t", {m.s.y, t}, {});
    m.s.b.routine(o);
    m.s.b.output(t);
  }
  fb::CudaLaunchT &launch() { return *m.s.b.routines[0].cuda; }
};

TEST(Verify, RoutineCudaCode) {
  const std::string routine = "routine #0 't' (transpose)";
  {
    SmallCudaRoutine r;
    EXPECT_EQ(loadCode(r.m.s.b.build()), MIXPREC_OK);
    // Without Routine.cuda the routine runs on the host: still valid.
    r.m.s.b.routines[0].cuda.reset();
    EXPECT_EQ(loadCode(r.m.s.b.build()), MIXPREC_OK);
  }
  {
    SmallCudaRoutine r;
    r.launch().function = "mp_main_k1_amax";
    expectLoadError(r.m.s.b.build(), MIXPREC_INVALID_MODULE,
                    routine + ": CUDA launch: function 'mp_main_k1_amax' is also kernel #1 "
                              "'amax''s");
  }
  {
    SmallCudaRoutine r;
    r.launch().function = "mp main";
    expectLoadError(r.m.s.b.build(), MIXPREC_INVALID_MODULE,
                    routine + ": CUDA launch: function name 'mp main' is not a C identifier");
  }
  {
    SmallCudaRoutine r;
    r.launch().block_size = 48;
    expectLoadError(r.m.s.b.build(), MIXPREC_INVALID_MODULE,
                    routine + ": CUDA launch: block_size 48 is not a multiple of 32");
  }
  {
    SmallCudaRoutine r;
    r.launch().grid_size = -1;
    expectLoadError(r.m.s.b.build(), MIXPREC_INVALID_MODULE,
                    routine + ": CUDA launch: grid_size -1 out of range");
  }
  {
    SmallCudaRoutine r;
    r.launch().params = {r.m.s.y, 17};
    expectLoadError(r.m.s.b.build(), MIXPREC_INVALID_MODULE,
                    routine + ": CUDA launch: parameter #1 is tensor 17 of 5");
  }
  for (std::vector<int32_t> params : {std::vector<int32_t>{4, 2}, std::vector<int32_t>{2},
                                      std::vector<int32_t>{2, 4, 4}}) {
    SmallCudaRoutine r;
    r.launch().params = params;
    expectLoadError(r.m.s.b.build(), MIXPREC_INVALID_MODULE,
                    routine + ": CUDA launch: " + std::to_string(params.size()) +
                        " parameters are not the routine's 1 inputs and its output, in order");
  }
  {
    SmallCudaRoutine r;
    r.launch().zeroed = {r.t};
    expectLoadError(r.m.s.b.build(), MIXPREC_INVALID_MODULE,
                    routine + ": CUDA launch: a routine zeroes no tensor");
  }
  {
    // The output over its input: the CPU routine copies through scratch, a
    // kernel would read what it wrote.
    SmallCudaRoutine r;
    (void)r.m.s.b.build(); // lays out the arena
    r.m.s.b.tensors[r.t].offset = r.m.s.b.tensors[r.m.s.y].offset;
    expectLoadError(r.m.s.b.build(true), MIXPREC_INVALID_MODULE,
                    routine + ": CUDA launch: the output tensor #4 't' overlaps the input "
                              "tensor #2 'y'");
  }
  {
    SmallCudaRoutine r;
    r.m.s.b.cuda.reset();
    r.m.s.b.kernels[0].cuda.reset();
    r.m.s.b.kernels[1].cuda.reset();
    expectLoadError(r.m.s.b.build(), MIXPREC_INVALID_MODULE,
                    routine + " has a CUDA launch, but the module has no CUDA program");
  }
}

TEST(Verify, RoutineOptions) {
  // Each forged options table of the convolutional plan is a load error
  // naming the routine and the rule.
  auto conv = [] { return convBuilder(); };
  {
    ModuleBuilder b = conv();
    b.routines[1].options = transposeOptions({0, 1, 2, 3});
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "routine #1 'pool1' (max_pool2d): takes Pool2dOptions, got TransposeOptions");
  }
  {
    ModuleBuilder b = conv();
    b.routines[1].options.Reset();
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "routine #1 'pool1' (max_pool2d): takes Pool2dOptions, got none");
  }
  {
    // A type this runtime does not know, with a table: the FlatBuffers
    // verifier lets unknown union members through.
    ModuleBuilder b = conv();
    b.forgedOptionsTypes[1] = static_cast<fb::RoutineOptions>(42);
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "takes Pool2dOptions, got options type 42 (unknown to this runtime)");
  }
  {
    ModuleBuilder b = conv();
    b.routines[1].options.AsPool2dOptions()->count_include_pad = true;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "(max_pool2d): count_include_pad applies to avg_pool2d only");
  }
  {
    ModuleBuilder b = conv();
    b.routines[1].options.AsPool2dOptions()->pad_right = -1;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "pad -1 out of range [0, 2^31]");
  }
  {
    ModuleBuilder b = conv();
    b.routines[0].options.AsConv2dOptions()->dilation_w = 0;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "dilation 0 out of range [1, 2^31]");
  }
  {
    ModuleBuilder b = conv();
    b.routines[2].options.AsTransposeOptions()->perm = {0, 2, 1};
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "routine #2 'to_nhwc' (transpose): perm needs 4 entries, got 3");
  }
  {
    ModuleBuilder b = conv();
    b.routines[5].options.AsSliceOptions()->starts.clear();
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "(slice): starts needs 2 entries, got 0");
  }
  {
    ModuleBuilder b = conv();
    b.routines[4].options.AsAxisOptions()->axis = 2;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "(concat): axis 2 is out of range for rank 2");
  }
  {
    ModuleBuilder b = conv();
    b.routines[6].options.AsReduceOptions()->axes = {0, -2};
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "(reduce_sum): axis 0 is listed twice");
  }
  {
    ModuleBuilder b = conv();
    b.routines[7].options.AsNormOptions()->axis = -3;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "(layer_norm): axis -3 is out of range for rank 2");
  }
  {
    ModuleBuilder b = conv();
    b.routines[8].options.AsFp8ScaleOptions()->format = fb::DType::BF16;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "(fp8_scale): format must be f8E4M3FN or f8E5M2, got bf16");
  }
  {
    ModuleBuilder b = conv();
    b.routines[8].options.AsFp8ScaleOptions()->margin = 5000;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "margin 5000 out of range [-1024, 1024]");
  }
}

TEST(Verify, GemmsRoutinesStepsAndSignature) {
  auto mlp = [] { return mlpBuilder(false); };
  {
    ModuleBuilder b = mlp();
    b.gemms[0].k = 25;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "gemm #0 'fc1': a needs 125 elements (batch 1, stride 0, 5x25)");
  }
  {
    ModuleBuilder b = mlp();
    b.gemms[1].epilogue = fb::Epilogue::None;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "epilogue None takes no bias");
  }
  {
    ModuleBuilder b = mlp();
    b.gemms[1].aScale = 0;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "a_scale and b_scale come in pairs");
  }
  {
    ModuleBuilder b = mlp();
    b.gemms[0].batch = 2;
    b.gemms[0].strideOut = 10;
    b.gemms[0].strideA = 0;
    b.gemms[0].strideB = 0;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "out needs");
  }
  {
    ModuleBuilder b = mlp();
    b.gemms[0].out = b.gemms[0].b;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "out tensor #2 'w1' is a constant");
  }
  {
    ModuleBuilder b = convBuilder();
    b.routines[0].opType = "conv3d";
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "routine #0 'conv1' (conv3d): unknown op type 'conv3d'");
  }
  {
    ModuleBuilder b = convBuilder();
    fb::Conv2dOptionsT &conv = *b.routines[0].options.AsConv2dOptions();
    conv.stride_h = conv.stride_w = 2; // 4x4, the output is 8x8
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "has spatial size [8,8], the attributes give [4,4]");
  }
  {
    ModuleBuilder b = convBuilder();
    b.routines[2].options.AsTransposeOptions()->perm = {0, 2, 2, 1};
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "perm [0, 2, 2, 1] is not a permutation");
  }
  {
    ModuleBuilder b = convBuilder();
    b.routines[5].options.AsSliceOptions()->steps = {2, 4}; // dim 1 reads 0, 4, 8 of 8
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "dimension 1 reads indices 0 to 8 outside [0, 8)");
  }
  {
    ModuleBuilder b = convBuilder();
    b.routines[3].inputs = {b.routines[3].inputs[0], 0}; // indices: the bf16 image
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "must be i64 or i32, got bf16");
  }
  {
    ModuleBuilder b = mlp();
    b.steps[1].index = 9;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "step #1 runs Gemm #9 of 2");
  }
  {
    ModuleBuilder b = mlp();
    b.inputs.push_back(40);
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "input #1 is tensor 40");
  }
  {
    ModuleBuilder b = mlp();
    b.inputs.push_back(2); // w1, a constant
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "input tensor #2 'w1' is a constant");
  }
  {
    // Names identify outputs: two tensors of one name are ambiguous.
    ModuleBuilder b = mlp();
    for (size_t t = 0; t < b.tensors.size(); ++t)
      if (b.tensors[t].name == "logits") {
        b.tensors[t].name = "probs";
        b.output(static_cast<int>(t));
      }
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "two outputs are named 'probs'");
  }
  {
    // One tensor listed twice (an ONNX graph may list an output twice, as
    // onnxruntime accepts) is valid since issue 7; inputs may not repeat.
    ModuleBuilder b = mlp();
    b.outputs.push_back(b.outputs[0]);
    EXPECT_EQ(loadCode(b.build()), MIXPREC_OK);
    ModuleBuilder twice = mlp();
    twice.inputs.push_back(twice.inputs[0]);
    expectLoadError(twice.build(), MIXPREC_INVALID_MODULE, "two inputs are named 'x'");
  }
}

//===----------------------------------------------------------------------===//
// The N-D window routines (conv, conv_transpose, max_pool, avg_pool,
// max_pool_indices)
//===----------------------------------------------------------------------===//

/// A 3-D conv, a 1-D conv_transpose and the three N-D pools, each a routine.
ModuleBuilder windowModule() {
  ModuleBuilder b;
  const int x = b.input("x", fb::DType::F32, {1, 2, 4, 4, 4});
  const int w = b.constantFloats("w", fb::DType::F32, {3, 2, 3, 3, 3},
                                 std::vector<float>(3 * 2 * 27, 0.5f));
  const int y = b.activation("y", fb::DType::F32, {1, 3, 4, 4, 4});
  const int s = b.input("s", fb::DType::F32, {1, 2, 5});
  const int wt = b.constantFloats("wt", fb::DType::F32, {2, 3, 3}, std::vector<float>(18, 1.0f));
  const int t = b.activation("t", fb::DType::F32, {1, 3, 12});
  const int mp = b.activation("mp", fb::DType::F32, {1, 3, 2, 2, 2});
  const int ap = b.activation("ap", fb::DType::F32, {1, 3, 2, 2, 2});
  const int mi = b.activation("mi", fb::DType::I64, {1, 3, 2, 2, 2});
  fb::ConvOptionsT conv;
  conv.strides = {1, 1, 1};
  conv.pads = {1, 1, 1, 1, 1, 1};
  conv.dilations = {1, 1, 1};
  b.routine({"conv", "conv", {x, w}, {y}, fb::RoutineOptionsUnion()});
  b.routines.back().options.Set(conv);
  fb::ConvOptionsT ct; // 2 * (5 - 1) + 1 + 3 = 12
  ct.strides = {2};
  ct.pads = {0, 0};
  ct.dilations = {1};
  ct.output_padding = {1};
  b.routine({"up", "conv_transpose", {s, wt}, {t}, fb::RoutineOptionsUnion()});
  b.routines.back().options.Set(ct);
  fb::PoolOptionsT pool;
  pool.kernel = {2, 2, 2};
  pool.strides = {2, 2, 2};
  pool.pads = {0, 0, 0, 0, 0, 0};
  pool.dilations = {1, 1, 1};
  for (auto [name, out] : {std::pair{"max_pool", mp}, {"avg_pool", ap}, {"max_pool_indices", mi}}) {
    b.routine({name, name, {y}, {out}, fb::RoutineOptionsUnion()});
    b.routines.back().options.Set(pool);
  }
  for (int o : {t, mp, ap, mi})
    b.output(o);
  return b;
}

TEST(ModuleErrors, WindowRoutines) {
  {
    ModuleBuilder b = windowModule();
    std::string message;
    EXPECT_EQ(loadCode(b.build(), &message), MIXPREC_OK) << message;
  }
  {
    ModuleBuilder b = windowModule();
    b.routines[0].options.AsConvOptions()->pads = {1, 1, 1, 1};
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "routine #0 'conv' (conv): pads needs 6 entries, got 4");
  }
  {
    ModuleBuilder b = windowModule();
    b.routines[0].options.AsConvOptions()->output_padding = {0, 0, 0};
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "output_padding needs 0 entries, got 3");
  }
  {
    ModuleBuilder b = windowModule();
    b.routines[0].options.AsConvOptions()->pads = {1, 1, 1, 1, -1, 1};
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "pad -1 out of range [0, 2^31]");
  }
  {
    ModuleBuilder b = windowModule();
    b.routines[0].options.AsConvOptions()->strides = {1, 2, 1};
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "output 'y' has spatial size [4,4,4], the attributes give [4,2,4]");
  }
  {
    ModuleBuilder b = windowModule();
    b.routines[1].options.AsConvOptions()->output_padding = {2};
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "(conv_transpose): output_padding [2] must be non-negative and below the "
                    "stride or the dilation");
  }
  {
    ModuleBuilder b = windowModule();
    b.routines[1].options.AsConvOptions()->pads = {0, -1}; // 13 positions, the output has 12
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "output 't' has spatial size [12], the attributes give [13]");
  }
  {
    ModuleBuilder b = windowModule();
    b.routines[1].options.AsConvOptions()->groups = 2; // weight [2, 3, k]: M = 6
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "output 't' has shape [1,3,12]");
  }
  {
    ModuleBuilder b = windowModule();
    b.routines[2].options.AsPoolOptions()->storage_order = 1;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE,
                    "(max_pool): storage_order 1 applies to max_pool_indices only");
  }
  {
    ModuleBuilder b = windowModule();
    b.routines[2].options.AsPoolOptions()->count_include_pad = true;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "count_include_pad applies to avg_pool only");
  }
  {
    ModuleBuilder b = windowModule();
    b.routines[4].options.AsPoolOptions()->storage_order = 2;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "storage_order 2 must be 0 or 1");
  }
  {
    ModuleBuilder b = windowModule();
    b.tensors[b.routines[4].outputs[0]].dtype = fb::DType::F32;
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "output 'mi' must be i64, got f32");
  }
  {
    ModuleBuilder b = windowModule();
    b.routines[3].options.AsPoolOptions()->kernel = {2, 2, 0};
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "kernel size 0 out of range [1, 2^31]");
  }
  {
    ModuleBuilder b = windowModule();
    b.routines[3].options.Set(fb::TransposeOptionsT());
    expectLoadError(b.build(), MIXPREC_INVALID_MODULE, "takes PoolOptions, got TransposeOptions");
  }
}

} // namespace
} // namespace mixprec::testing
