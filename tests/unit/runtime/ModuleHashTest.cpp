//===- ModuleHashTest.cpp - the module format's hashes ---------------------===//
//
// XXH64 (SideFile.xxh64) against the reference implementation's values
// (make_xxh64_vectors.py, from the `xxhash` package): every length from 0
// to 69 (each tail path: bytes, a 4-byte word, 8-byte words, with and
// without 32-byte stripes) and some long ones, three seeds; FNV-1a 64
// against its published values.
//
//===----------------------------------------------------------------------===//
#include "runtime/format/ModuleHash.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace mixprec::testing {
namespace {

struct Xxh64Vector {
  size_t length;
  uint64_t seed;
  uint64_t hash;
};

// make_xxh64_vectors.py's output.
const Xxh64Vector kXxh64Vectors[] = {
    {0, 0x0000000000000000ull, 0xef46db3751d8e999ull},
    {0, 0x0000000000000001ull, 0xd5afba1336a3be4bull},
    {0, 0x9e3779b97f4a7c15ull, 0xc4349fc93c010000ull},
    {1, 0x0000000000000000ull, 0x34438f3d5c420d32ull},
    {1, 0x0000000000000001ull, 0x2061760f86f9414dull},
    {1, 0x9e3779b97f4a7c15ull, 0x46937e176d04c4f0ull},
    {2, 0x0000000000000000ull, 0x55cac111efa2753aull},
    {2, 0x0000000000000001ull, 0x864b143272ec4bd1ull},
    {2, 0x9e3779b97f4a7c15ull, 0xa4929077b971375full},
    {3, 0x0000000000000000ull, 0x3fe957346690e631ull},
    {3, 0x0000000000000001ull, 0x12423a4287ebcdf8ull},
    {3, 0x9e3779b97f4a7c15ull, 0x3c8a2a42bed89250ull},
    {4, 0x0000000000000000ull, 0xac0120f33c19eb90ull},
    {4, 0x0000000000000001ull, 0x760a0d3bc6d824caull},
    {4, 0x9e3779b97f4a7c15ull, 0x57968d81364cd324ull},
    {5, 0x0000000000000000ull, 0x288c61ee34d21b2aull},
    {5, 0x0000000000000001ull, 0x991690c71af4d6dcull},
    {5, 0x9e3779b97f4a7c15ull, 0x3e6d8e319d90c389ull},
    {6, 0x0000000000000000ull, 0x407796f0c251b376ull},
    {6, 0x0000000000000001ull, 0xd69205203decfb94ull},
    {6, 0x9e3779b97f4a7c15ull, 0xb44c910d772289dbull},
    {7, 0x0000000000000000ull, 0x2d9fca641103f17full},
    {7, 0x0000000000000001ull, 0x76d79427bdb6c407ull},
    {7, 0x9e3779b97f4a7c15ull, 0x2091ac6a779e1898ull},
    {8, 0x0000000000000000ull, 0x20d165ae57f1eb8full},
    {8, 0x0000000000000001ull, 0xc9f9977ced450a39ull},
    {8, 0x9e3779b97f4a7c15ull, 0x55742ebbe3205c64ull},
    {9, 0x0000000000000000ull, 0x0f5aa6f58c63b121ull},
    {9, 0x0000000000000001ull, 0x014030247f898852ull},
    {9, 0x9e3779b97f4a7c15ull, 0xf7c8972bee5f87d9ull},
    {10, 0x0000000000000000ull, 0x2f699a79211129faull},
    {10, 0x0000000000000001ull, 0xc6f9ac749492ae00ull},
    {10, 0x9e3779b97f4a7c15ull, 0xc32a8e61be79e2adull},
    {11, 0x0000000000000000ull, 0x5d49f8486ca03603ull},
    {11, 0x0000000000000001ull, 0x17d0c4f2dd8db390ull},
    {11, 0x9e3779b97f4a7c15ull, 0x5bca008a74236b51ull},
    {12, 0x0000000000000000ull, 0xf28dfee3ac3995fbull},
    {12, 0x0000000000000001ull, 0x961a538f891b07d9ull},
    {12, 0x9e3779b97f4a7c15ull, 0x40e279100c2aefd7ull},
    {13, 0x0000000000000000ull, 0xd59f270347c0ba89ull},
    {13, 0x0000000000000001ull, 0x1c68287dacb5d07eull},
    {13, 0x9e3779b97f4a7c15ull, 0x6a6b91b03b9f7efaull},
    {14, 0x0000000000000000ull, 0x08c30c99f3e10c39ull},
    {14, 0x0000000000000001ull, 0xbc10527754bbf44eull},
    {14, 0x9e3779b97f4a7c15ull, 0x54f4d1f812b7c8abull},
    {15, 0x0000000000000000ull, 0xef3dd005a6f58063ull},
    {15, 0x0000000000000001ull, 0x2ad853519e68ebf3ull},
    {15, 0x9e3779b97f4a7c15ull, 0x4d9a7b62a66c8f64ull},
    {16, 0x0000000000000000ull, 0xffabbff8a4c16f75ull},
    {16, 0x0000000000000001ull, 0x9edfaad56fe429a2ull},
    {16, 0x9e3779b97f4a7c15ull, 0x69664d2a6702b8feull},
    {17, 0x0000000000000000ull, 0xdeddcd424e16ebefull},
    {17, 0x0000000000000001ull, 0x86e36d3c8208ac27ull},
    {17, 0x9e3779b97f4a7c15ull, 0x83e6d60886fd23f4ull},
    {18, 0x0000000000000000ull, 0x319871ec6418817dull},
    {18, 0x0000000000000001ull, 0x889bffb29de22f1dull},
    {18, 0x9e3779b97f4a7c15ull, 0xd25d03b64d36bf0dull},
    {19, 0x0000000000000000ull, 0x4822f5a1bee2e4b3ull},
    {19, 0x0000000000000001ull, 0x74ed36179c739f80ull},
    {19, 0x9e3779b97f4a7c15ull, 0xaa89de11791166d4ull},
    {20, 0x0000000000000000ull, 0x1422a3e65d60a0bbull},
    {20, 0x0000000000000001ull, 0xcbd153d07322c868ull},
    {20, 0x9e3779b97f4a7c15ull, 0x492ebfa488e63b17ull},
    {21, 0x0000000000000000ull, 0xaf32e816ad4053cbull},
    {21, 0x0000000000000001ull, 0x6f5a76ebb7a2905dull},
    {21, 0x9e3779b97f4a7c15ull, 0x6b004ff8b22f03e5ull},
    {22, 0x0000000000000000ull, 0xcd7df841075cf955ull},
    {22, 0x0000000000000001ull, 0x3dec0a1b591ef2b2ull},
    {22, 0x9e3779b97f4a7c15ull, 0x01e6dd0ce42d1c01ull},
    {23, 0x0000000000000000ull, 0x61038059cc8fefa1ull},
    {23, 0x0000000000000001ull, 0x9b818210ffd3307aull},
    {23, 0x9e3779b97f4a7c15ull, 0x7aee92f427fffcc4ull},
    {24, 0x0000000000000000ull, 0x698b88e98a574d26ull},
    {24, 0x0000000000000001ull, 0x6c9030968b33a11bull},
    {24, 0x9e3779b97f4a7c15ull, 0xec75147ccb86bc44ull},
    {25, 0x0000000000000000ull, 0x0d0947aeefcdaf16ull},
    {25, 0x0000000000000001ull, 0xb063bc8196bab58bull},
    {25, 0x9e3779b97f4a7c15ull, 0xb0ce2edf29f3c636ull},
    {26, 0x0000000000000000ull, 0x5e3e761d3ae4f639ull},
    {26, 0x0000000000000001ull, 0xff9fa6461eb8e779ull},
    {26, 0x9e3779b97f4a7c15ull, 0x60760c8d62d56959ull},
    {27, 0x0000000000000000ull, 0x0314372ecbcc577eull},
    {27, 0x0000000000000001ull, 0x9df3a742f5dfaf0eull},
    {27, 0x9e3779b97f4a7c15ull, 0xc070b3ed947ca0f2ull},
    {28, 0x0000000000000000ull, 0xf9b47dfaff5134dfull},
    {28, 0x0000000000000001ull, 0x3bbd638dd60d5489ull},
    {28, 0x9e3779b97f4a7c15ull, 0xb4924512f5ec7d53ull},
    {29, 0x0000000000000000ull, 0x781fe67d15b0b8fcull},
    {29, 0x0000000000000001ull, 0xa817111d6492be78ull},
    {29, 0x9e3779b97f4a7c15ull, 0xaf350dc2137ea02eull},
    {30, 0x0000000000000000ull, 0x452f6ac7c8f0b4eaull},
    {30, 0x0000000000000001ull, 0x12a4248745af7956ull},
    {30, 0x9e3779b97f4a7c15ull, 0x8f2ae9d8db7b1877ull},
    {31, 0x0000000000000000ull, 0x49f7fe5572bf1c60ull},
    {31, 0x0000000000000001ull, 0xff842bfd27a376eaull},
    {31, 0x9e3779b97f4a7c15ull, 0xa23e2fe4f1cae9c3ull},
    {32, 0x0000000000000000ull, 0x1364e9b2248007d3ull},
    {32, 0x0000000000000001ull, 0xc5d019ac7ad0a064ull},
    {32, 0x9e3779b97f4a7c15ull, 0x2e81279359ff4cdcull},
    {33, 0x0000000000000000ull, 0x5c049621b97cd80dull},
    {33, 0x0000000000000001ull, 0x800994e8ef46699aull},
    {33, 0x9e3779b97f4a7c15ull, 0x3a72cb2a67698eefull},
    {34, 0x0000000000000000ull, 0x259557fd28634deaull},
    {34, 0x0000000000000001ull, 0xa888fc1e7b39efacull},
    {34, 0x9e3779b97f4a7c15ull, 0x8192a8bd2bf36996ull},
    {35, 0x0000000000000000ull, 0x23658a44bf323fc2ull},
    {35, 0x0000000000000001ull, 0xeb43134c7ed10bd9ull},
    {35, 0x9e3779b97f4a7c15ull, 0x43ce5eeba317f911ull},
    {36, 0x0000000000000000ull, 0x65e085b2b3db19eaull},
    {36, 0x0000000000000001ull, 0x2700a23957271f15ull},
    {36, 0x9e3779b97f4a7c15ull, 0x81ee51b94d13acefull},
    {37, 0x0000000000000000ull, 0x3262da788537a2a7ull},
    {37, 0x0000000000000001ull, 0x58471b142778c2b8ull},
    {37, 0x9e3779b97f4a7c15ull, 0x497340673bbc2c17ull},
    {38, 0x0000000000000000ull, 0x595bef57bae38d61ull},
    {38, 0x0000000000000001ull, 0x84e71c828f0142fcull},
    {38, 0x9e3779b97f4a7c15ull, 0x0c0c51a5f3547e6cull},
    {39, 0x0000000000000000ull, 0x71f74926f39c2e5full},
    {39, 0x0000000000000001ull, 0x02bb6f162c9e73e9ull},
    {39, 0x9e3779b97f4a7c15ull, 0x2b484c4ea45037c8ull},
    {40, 0x0000000000000000ull, 0xb57823b774430201ull},
    {40, 0x0000000000000001ull, 0x3e9ebe441b8c2564ull},
    {40, 0x9e3779b97f4a7c15ull, 0x32b4f48a7d128e8cull},
    {41, 0x0000000000000000ull, 0x731f9ed2be339595ull},
    {41, 0x0000000000000001ull, 0xf55e5b975dc11cd0ull},
    {41, 0x9e3779b97f4a7c15ull, 0xa17adb4b430d6b1full},
    {42, 0x0000000000000000ull, 0xc258b521eba0231cull},
    {42, 0x0000000000000001ull, 0x291899b7b5405ea7ull},
    {42, 0x9e3779b97f4a7c15ull, 0x18a1112967c37153ull},
    {43, 0x0000000000000000ull, 0xccf357ddf39da615ull},
    {43, 0x0000000000000001ull, 0xf6792d457f4fdf5full},
    {43, 0x9e3779b97f4a7c15ull, 0xc121a62963f46679ull},
    {44, 0x0000000000000000ull, 0xfaccf8d328e3fb60ull},
    {44, 0x0000000000000001ull, 0xcc45186dd9e3d555ull},
    {44, 0x9e3779b97f4a7c15ull, 0x7b10f5f28d30293full},
    {45, 0x0000000000000000ull, 0xd8d9002503249c58ull},
    {45, 0x0000000000000001ull, 0x6dbd41e0d58bb6adull},
    {45, 0x9e3779b97f4a7c15ull, 0x27eddd7a5c24d802ull},
    {46, 0x0000000000000000ull, 0xd97a71ae986156b8ull},
    {46, 0x0000000000000001ull, 0x41edbb0504605ee3ull},
    {46, 0x9e3779b97f4a7c15ull, 0x9d8bad857c331360ull},
    {47, 0x0000000000000000ull, 0x7d0c6b390eae613eull},
    {47, 0x0000000000000001ull, 0x7f2e1309c8e88c70ull},
    {47, 0x9e3779b97f4a7c15ull, 0x7ce093156294e7c8ull},
    {48, 0x0000000000000000ull, 0x42c06adc72311aedull},
    {48, 0x0000000000000001ull, 0x93b01e82a14c1899ull},
    {48, 0x9e3779b97f4a7c15ull, 0x90896e5812fec8f4ull},
    {49, 0x0000000000000000ull, 0x73b47dfaa4a93b4cull},
    {49, 0x0000000000000001ull, 0x9da2616849aee998ull},
    {49, 0x9e3779b97f4a7c15ull, 0x7c3a00aa1a35d94aull},
    {50, 0x0000000000000000ull, 0xb471a3fe56e34227ull},
    {50, 0x0000000000000001ull, 0xa69b13f1677df6f7ull},
    {50, 0x9e3779b97f4a7c15ull, 0xdcba738d27d3b7d8ull},
    {51, 0x0000000000000000ull, 0x3b433b34a1e74a98ull},
    {51, 0x0000000000000001ull, 0xf64c105a0443a92cull},
    {51, 0x9e3779b97f4a7c15ull, 0xb7b6eaf08d90a4a3ull},
    {52, 0x0000000000000000ull, 0x5ba764be004e44edull},
    {52, 0x0000000000000001ull, 0x1e443f2b28c8f3c6ull},
    {52, 0x9e3779b97f4a7c15ull, 0x1aa15c6ad1f54f33ull},
    {53, 0x0000000000000000ull, 0x2850ab8cc442cdc0ull},
    {53, 0x0000000000000001ull, 0xad993cf65d1b5d30ull},
    {53, 0x9e3779b97f4a7c15ull, 0xb3c29fe1f02f6eceull},
    {54, 0x0000000000000000ull, 0xc28acc96e371adf3ull},
    {54, 0x0000000000000001ull, 0x08462288c0148bb0ull},
    {54, 0x9e3779b97f4a7c15ull, 0xed2a0a4f0d3b8f46ull},
    {55, 0x0000000000000000ull, 0x979829e0d07cefbfull},
    {55, 0x0000000000000001ull, 0xfabf808c42d32622ull},
    {55, 0x9e3779b97f4a7c15ull, 0xcb2079e1cd13b05dull},
    {56, 0x0000000000000000ull, 0x9c6a6ca2928cb3a1ull},
    {56, 0x0000000000000001ull, 0x94f5b14f57d810f7ull},
    {56, 0x9e3779b97f4a7c15ull, 0x1abc8058f8ae0490ull},
    {57, 0x0000000000000000ull, 0x85e61a911e0f1b13ull},
    {57, 0x0000000000000001ull, 0x8315a3ad8d3e021full},
    {57, 0x9e3779b97f4a7c15ull, 0xf990cd570aa59e5bull},
    {58, 0x0000000000000000ull, 0x703ea0b8c70e7b46ull},
    {58, 0x0000000000000001ull, 0xcc6a487b05758952ull},
    {58, 0x9e3779b97f4a7c15ull, 0xfd2115d659552ad1ull},
    {59, 0x0000000000000000ull, 0xf9812ef4e7fc4e22ull},
    {59, 0x0000000000000001ull, 0xbe0e38bc481daaeeull},
    {59, 0x9e3779b97f4a7c15ull, 0x24fe4cca87c3f5ebull},
    {60, 0x0000000000000000ull, 0x8330dfac25b5d269ull},
    {60, 0x0000000000000001ull, 0xca21f382c2dc981full},
    {60, 0x9e3779b97f4a7c15ull, 0x50e37ce005469ceeull},
    {61, 0x0000000000000000ull, 0xd692882f588f769dull},
    {61, 0x0000000000000001ull, 0xa330544843c57a73ull},
    {61, 0x9e3779b97f4a7c15ull, 0x85f55cd66bea5e03ull},
    {62, 0x0000000000000000ull, 0xd3e1e83fbdd3ad9dull},
    {62, 0x0000000000000001ull, 0x3d758fa96407c599ull},
    {62, 0x9e3779b97f4a7c15ull, 0xedc851e1ef2835c5ull},
    {63, 0x0000000000000000ull, 0xf2bc1ab748377b86ull},
    {63, 0x0000000000000001ull, 0x103093d07dde9c68ull},
    {63, 0x9e3779b97f4a7c15ull, 0x699e972009703d2eull},
    {64, 0x0000000000000000ull, 0x1b84d8eff91e0b20ull},
    {64, 0x0000000000000001ull, 0xf99f0e617eb50141ull},
    {64, 0x9e3779b97f4a7c15ull, 0x9a98dde3c2ee45aeull},
    {65, 0x0000000000000000ull, 0x7d5304be96eb9dafull},
    {65, 0x0000000000000001ull, 0xd9c9939c46aa4a50ull},
    {65, 0x9e3779b97f4a7c15ull, 0xef9815d53ce26e88ull},
    {66, 0x0000000000000000ull, 0x787a841b37b57ee6ull},
    {66, 0x0000000000000001ull, 0xbd15a9f00f14a3a5ull},
    {66, 0x9e3779b97f4a7c15ull, 0x0caaa2f6b1e56fb8ull},
    {67, 0x0000000000000000ull, 0x6c8c2be0c1d155aaull},
    {67, 0x0000000000000001ull, 0xa5628677b27b5cfbull},
    {67, 0x9e3779b97f4a7c15ull, 0x45cab4bf07eb0e81ull},
    {68, 0x0000000000000000ull, 0x1ff0c866cda30710ull},
    {68, 0x0000000000000001ull, 0x5c0db4082d6b5a4full},
    {68, 0x9e3779b97f4a7c15ull, 0x1ec160da496ecacaull},
    {69, 0x0000000000000000ull, 0x7f6426bbad68e3e7ull},
    {69, 0x0000000000000001ull, 0xa33a7296ecce71fbull},
    {69, 0x9e3779b97f4a7c15ull, 0x3f910524dc912f10ull},
    {100, 0x0000000000000000ull, 0xe6ee8d4c1bea7fc9ull},
    {100, 0x0000000000000001ull, 0xc4df1e588e468e87ull},
    {100, 0x9e3779b97f4a7c15ull, 0x87bb489426e78668ull},
    {255, 0x0000000000000000ull, 0x07c6636d7ff4263dull},
    {255, 0x0000000000000001ull, 0x558ad83a9beb3a33ull},
    {255, 0x9e3779b97f4a7c15ull, 0xcb879196e92aa8e3ull},
    {256, 0x0000000000000000ull, 0xdcf671da8e75c910ull},
    {256, 0x0000000000000001ull, 0x15c8b64a78b245d0ull},
    {256, 0x9e3779b97f4a7c15ull, 0x365e151771b1003bull},
    {1023, 0x0000000000000000ull, 0x70d32b02bc59eaeaull},
    {1023, 0x0000000000000001ull, 0xc64e06713189115eull},
    {1023, 0x9e3779b97f4a7c15ull, 0x2e5a41ee6c1b7fa6ull},
    {4099, 0x0000000000000000ull, 0x29381b6cdfbddce6ull},
    {4099, 0x0000000000000001ull, 0x5dc569e0637fe2e9ull},
    {4099, 0x9e3779b97f4a7c15ull, 0x57dbd71cf579340cull},
    {65549, 0x0000000000000000ull, 0x40721379a999f999ull},
    {65549, 0x0000000000000001ull, 0xb9d66096a068b76full},
    {65549, 0x9e3779b97f4a7c15ull, 0x40fe0873bea77880ull},
    {1048607, 0x0000000000000000ull, 0xa76d1286f39678deull},
    {1048607, 0x0000000000000001ull, 0xcde7ad6fca470bbfull},
    {1048607, 0x9e3779b97f4a7c15ull, 0x6363aa940741666eull},
};

/// make_xxh64_vectors.py's pattern(): the top byte of a 32-bit LCG.
std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> out(n);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    out[i] = static_cast<uint8_t>(x >> 24);
  }
  return out;
}

TEST(ModuleHash, Xxh64MatchesTheReferenceImplementation) {
  size_t checked = 0;
  for (const Xxh64Vector &v : kXxh64Vectors) {
    const std::vector<uint8_t> data = pattern(v.length);
    EXPECT_EQ(runtime::xxh64(data.data(), data.size(), v.seed), v.hash)
        << "length " << v.length << " seed " << v.seed;
    // Unaligned: the same bytes one past an aligned start.
    std::vector<uint8_t> shifted(data.size() + 1);
    if (!data.empty())
      std::memcpy(shifted.data() + 1, data.data(), data.size());
    EXPECT_EQ(runtime::xxh64(shifted.data() + 1, data.size(), v.seed), v.hash)
        << "length " << v.length << " seed " << v.seed << " (unaligned)";
    ++checked;
  }
  EXPECT_EQ(checked, 77u * 3u);
  // Published values (xxHash's README and test suite).
  EXPECT_EQ(runtime::xxh64(nullptr, 0), 0xef46db3751d8e999ull);
  EXPECT_EQ(runtime::xxh64("abc", 3), 0x44bc2cf5ad770999ull);
  const std::string fox = "The quick brown fox jumps over the lazy dog";
  EXPECT_EQ(runtime::xxh64(fox.data(), fox.size()), 0x0b242d361fda71bcull);
}

TEST(ModuleHash, Xxh64StreamIsTheOneShotHashOfThePieces) {
  // Every way to cut 0..100 bytes in two, three-way cuts of 1000 bytes, and
  // a long run of small odd pieces: the one-shot hash of the whole.
  const std::vector<uint8_t> data = pattern(5000);
  for (size_t n = 0; n <= 100; ++n)
    for (size_t cut = 0; cut <= n; ++cut) {
      runtime::Xxh64Stream stream(7);
      stream.update(data.data(), cut);
      stream.update(data.data() + cut, n - cut);
      ASSERT_EQ(stream.digest(), runtime::xxh64(data.data(), n, 7)) << n << " cut at " << cut;
    }
  for (size_t a = 0; a < 1000; a += 7)
    for (size_t b = a; b < 1000; b += 31) {
      runtime::Xxh64Stream stream;
      stream.update(data.data(), a);
      stream.update(data.data() + a, b - a);
      stream.update(data.data() + b, 1000 - b);
      ASSERT_EQ(stream.digest(), runtime::xxh64(data.data(), 1000)) << a << ", " << b;
    }
  runtime::Xxh64Stream stream;
  size_t at = 0;
  for (size_t piece = 1; at < data.size(); piece = piece % 37 + 3) {
    const size_t take = std::min(piece, data.size() - at);
    stream.update(data.data() + at, take);
    at += take;
  }
  EXPECT_EQ(stream.digest(), runtime::xxh64(data.data(), data.size()));
  EXPECT_EQ(runtime::Xxh64Stream().digest(), 0xef46db3751d8e999ull);
}

TEST(ModuleHash, Xxh64SeesEveryByte) {
  // One flipped bit anywhere in 1000 bytes (every stripe lane and tail path)
  // changes the hash.
  std::vector<uint8_t> data = pattern(1000);
  const uint64_t base = runtime::xxh64(data.data(), data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] ^= 0x80;
    EXPECT_NE(runtime::xxh64(data.data(), data.size()), base) << "byte " << i;
    data[i] ^= 0x80;
  }
}

TEST(ModuleHash, Fnv1a64MatchesPublishedValues) {
  // Fowler/Noll/Vo's test vectors for FNV-1a 64.
  EXPECT_EQ(runtime::fnv1a64("", 0), 0xcbf29ce484222325ull);
  EXPECT_EQ(runtime::fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(runtime::fnv1a64("foobar", 6), 0x85944171f73967e8ull);
  // Chunked: continuing from a prefix's hash is the whole buffer's.
  EXPECT_EQ(runtime::fnv1a64("bar", 3, runtime::fnv1a64("foo", 3)), 0x85944171f73967e8ull);
}

} // namespace
} // namespace mixprec::testing
