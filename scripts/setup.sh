#!/usr/bin/env bash
# Installs every dependency of mixprec on a fresh Debian 12 machine (with the
# CUDA 13 toolkit at /usr/local/cuda). Idempotent; quiet when all is there.
set -euo pipefail

APT_PKGS=(
  cmake ninja-build ccache g++ python3 python3-pip
  llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools
  libzstd-dev libcurl4-openssl-dev libedit-dev
  flatbuffers-compiler libflatbuffers-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libopenblas-dev libdnnl-dev ocl-icd-opencl-dev libgtest-dev libgmock-dev
  clang-19 libclang-rt-19-dev chromium-headless-shell
  libopenmpi-dev openmpi-bin
)
# ocl-icd-opencl-dev: Debian's libdnnl-dev only recommends it, but its CMake
# config (built with the OpenCL GPU runtime) fails without it.
# nanobind and scikit-build-core build the Python package (python/), pytest tests it.
PIP_PKGS=(lit numpy onnx onnxruntime ml_dtypes nanobind scikit-build-core pytest)

missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
export PIP_ROOT_USER_ACTION=ignore
pymissing=()
for p in "${PIP_PKGS[@]}"; do
  "$PY" -m pip show -q "$p" >/dev/null 2>&1 || pymissing+=("$p")
done
if ((${#pymissing[@]})); then
  echo "setup: pip installing ${pymissing[*]}"
  "$PY" -m pip install -q --disable-pip-version-check "${pymissing[@]}"
fi

if [ ! -x /usr/local/cuda/bin/nvcc ] && [ ! -f /usr/local/cuda/include/nvrtc.h ]; then
  echo "setup: CUDA toolkit not found at /usr/local/cuda (needed for NVRTC/cuBLASLt)" >&2
  exit 1
fi
