#!/usr/bin/env bash
# Installs what kevo needs on Debian 12 / Ubuntu 24.04, only what is missing.
# Idempotent: a second run installs nothing and does not touch apt's lists.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libopenmpi-dev openmpi-bin
  libhdf5-dev hdf5-tools
  libboost-dev libcurl4-openssl-dev nlohmann-json3-dev
  libspdlog-dev libfmt-dev libcli11-dev libgtest-dev
  python3 python3-h5py python3-numpy
  # scripts/setup-llm.sh: the local model server in a virtual environment.
  python3-venv
  # tests/slurm runs scripts/slurm/*.sbatch under a private single-node Slurm.
  slurm-wlm munge
  # kevo campaign report: plots
  python3-matplotlib
  # The command backend's bundled OpenCL evaluator (PoCL on the CPU) and the
  # protocol's JSON Schemas checked in its tests.
  pocl-opencl-icd python3-pyopencl python3-jsonschema
  # The torch backend's tests on the CPU: PyTorch (Debian's, CPU only), and
  # what its load_inline builds need (torch's and pybind11's headers).
  python3-torch libtorch-dev pybind11-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

if ! command -v apt-get >/dev/null; then
  echo "setup: missing packages (${missing[*]}) and no apt-get: install them by hand" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo="sudo"; else
    echo "setup: missing packages (${missing[*]}); run as root or install sudo" >&2
    exit 1
  fi
fi
echo "setup: installing ${missing[*]}"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
