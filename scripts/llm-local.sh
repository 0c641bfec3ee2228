#!/usr/bin/env bash
# LLM evolution with no API key: install what is missing (the system
# packages, then llama.cpp's server and SmolLM2-135M-Instruct: about 10
# minutes on 2 cores the first time, scripts/setup-llm.sh), build, and run
# configs/llm-local.json, which starts the local model server itself and
# stops it at the end (docs/llm.md#a-local-model).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
bash scripts/setup-llm.sh
bash scripts/build.sh
exec build/bin/kevo run configs/llm-local.json "$@"
