#!/usr/bin/env python3
"""Fail when code outside runtime/ reaches into runtime/src/.

Usage:
    check_runtime_private.py SOURCE_DIR [SKIP_DIR...]
    check_runtime_private.py --self-test

runtime/src/ is private to libmixprec_runtime.so (loader, backends, routine
ops). What the compiler, the tools and the tests share with the runtime has
public homes: common/ (numerics, .npy, file I/O), runtime/kernels/ (the CPU
reference kernels), runtime/format/ (module hashes, program facts) and
runtime/include/mixprec/ (the C API). Tests of runtime/src/ itself live in
runtime/tests/.

Walks SOURCE_DIR, skipping runtime/, hidden folders, build trees (any folder
holding a CMakeCache.txt) and each SKIP_DIR, and reports every C/C++/TableGen
include of a path containing "runtime/src/" and every CMake line (comments
aside) naming runtime/src, as FILE:LINE: what. Exits 1 on any, or when it
found no source file to check (a wrong SOURCE_DIR must not pass).
"""

import os
import re
import sys
import tempfile

PRIVATE = "runtime/src"
SOURCE_EXTENSIONS = {".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".inc", ".def", ".td"}
INCLUDE = re.compile(r'^\s*#?\s*(?:include|import)\s*[<"]([^">]*)[">]')
HINT = ("runtime/src/ is private to the runtime: use common/, runtime/kernels/, runtime/format/ "
        "or runtime/include/mixprec/, or move a test of runtime internals to runtime/tests/")


def is_cmake(name):
    """Whether the file is CMake code."""
    return name == "CMakeLists.txt" or name.endswith(".cmake")


def files_to_check(root, skip_dirs):
    """Yields the source and CMake files under root outside runtime/ and build trees."""
    skip = {os.path.realpath(d) for d in skip_dirs}
    skip.add(os.path.realpath(os.path.join(root, "runtime")))
    for folder, subdirs, names in os.walk(root):
        if os.path.realpath(folder) in skip or "CMakeCache.txt" in names:
            subdirs[:] = []
            continue
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        for name in sorted(names):
            if is_cmake(name) or os.path.splitext(name)[1] in SOURCE_EXTENSIONS:
                yield os.path.join(folder, name)


def violations_in(path, root):
    """Yields 'FILE:LINE: ...' for each reach into runtime/src/ in one file."""
    shown = os.path.relpath(path, root)
    cmake = is_cmake(os.path.basename(path))
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if cmake:
                code = line.split("#", 1)[0]
                if PRIVATE in code:
                    yield f"{shown}:{number}: names {PRIVATE}: {code.strip()}"
                continue
            match = INCLUDE.match(line)
            if match and PRIVATE + "/" in match.group(1):
                yield f'{shown}:{number}: includes "{match.group(1)}"'


def check(root, skip_dirs):
    """(number of files checked, violations) for the tree at root."""
    checked, found = 0, []
    for path in files_to_check(root, skip_dirs):
        checked += 1
        found.extend(violations_in(path, root))
    return checked, found


def self_test():
    """Checks the checker on a small tree: it finds exactly the planted reaches."""
    planted = {
        "tools/Bad.cpp": '#include "common/Npy.h"\n#include "runtime/src/Module.h"\n',
        "tests/unit/x/Bad.h": '// runtime/src/ in a comment is fine\n#  include <runtime/src/backends/cpu/X.h>\n',
        "tests/unit/x/CMakeLists.txt": "# runtime/src in a comment is fine\n"
                                       "target_sources(t PRIVATE ${PROJECT_SOURCE_DIR}/runtime/src/Module.cpp)\n",
        "dialects/Ok.td": 'include "mlir/IR/OpBase.td"\n',
        "runtime/src/Module.cpp": '#include "runtime/src/Module.h"\n',
        "runtime/tests/T.cpp": '#include "runtime/src/backends/cuda/CudaDriver.h"\n',
        "build-x/CMakeCache.txt": "",
        "build-x/gen/G.cpp": '#include "runtime/src/Module.h"\n',
        ".git/hooks/H.cpp": '#include "runtime/src/Module.h"\n',
    }
    expected = [
        'tests/unit/x/Bad.h:2: includes "runtime/src/backends/cpu/X.h"',
        "tests/unit/x/CMakeLists.txt:2: names runtime/src: "
        "target_sources(t PRIVATE ${PROJECT_SOURCE_DIR}/runtime/src/Module.cpp)",
        'tools/Bad.cpp:2: includes "runtime/src/Module.h"',
    ]
    with tempfile.TemporaryDirectory() as root:
        for rel, text in planted.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        checked, found = check(root, [])
    if sorted(found) != expected or checked != 4:
        print(f"self-test FAILED: checked {checked} files (want 4), found:")
        print("\n".join(found) or "  nothing")
        return 1
    print("self-test passed: found exactly the 3 planted reaches into runtime/src/")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) < 2:
        print("usage: check_runtime_private.py SOURCE_DIR [SKIP_DIR...] | --self-test",
              file=sys.stderr)
        return 2
    root = argv[1]
    checked, found = check(root, argv[2:])
    if checked == 0 or not os.path.isfile(os.path.join(root, "CMakeLists.txt")):
        print(f"error: '{root}' is not a mixprec source tree ({checked} source files found)")
        return 1
    for line in found:
        print(f"{line} ({HINT})")
    if found:
        print(f"{len(found)} reach(es) into {PRIVATE}/ from outside runtime/ ({checked} files checked)")
        return 1
    print(f"{checked} files checked: nothing outside runtime/ reaches into {PRIVATE}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
