#!/usr/bin/env bash
# Configures and builds kevo into build/ (incremental when build/ exists).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${KEVO_BUILD_JOBS:-$(nproc)}"
generator=()
if command -v ninja >/dev/null && [ ! -f build/Makefile ]; then generator=(-G Ninja); fi
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE="${KEVO_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
cmake --build build -j "$jobs"
