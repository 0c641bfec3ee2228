#!/usr/bin/env bash
# The README's test command (and .ci/run): install what is missing, build,
# run the whole suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
# The local model server of LLM mode, for the test against the real model
# (llm_local_model; about 10 minutes on 2 cores the first time).
bash scripts/setup-llm.sh
# Triton for the CPU test of Triton candidates in the sandbox
# (torch_triton_compile; a 188 MB wheel, 639 MB in its own folder).
bash scripts/setup-triton.sh
bash scripts/build.sh
# Open MPI refuses root unless told, and oversubscription is needed on small machines.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd build
ctest --output-on-failure -j "${KEVO_TEST_JOBS:-2}" "$@"
