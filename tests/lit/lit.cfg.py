# lit configuration of the mixprec FileCheck tests.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "mixprec"
# The internal shell works with the lit of LLVM 19 and with current PyPI lit.
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mixprec_obj_root, "tests", "lit")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", os.path.join(config.mixprec_obj_root, "bin"), append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
config.substitutions.append(("%mixprec_src", config.mixprec_src_root))
config.substitutions.append(("%python", config.python_executable or "python3"))
# A stand-in libcuda (runtime/tests/FakeCudaDriver.c) for MIXPREC_CUDA_DRIVER_LIBRARY.
config.substitutions.append(("%fake_cuda_driver", os.path.join(
    config.mixprec_obj_root, "runtime", "tests", "libmixprec_fake_cuda.so")))
# Tests that take .onnx models say `REQUIRES: onnx`: a build without the
# importer (MIXPREC_ENABLE_ONNX=OFF) reports them unsupported.
if config.mixprec_enable_onnx:
    config.available_features.add("onnx")
# FileCheck always runs with --enable-var-scope (see STYLE.md).
config.substitutions.append(("FileCheck", "FileCheck --enable-var-scope"))
