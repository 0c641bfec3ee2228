#!/usr/bin/env bash
# The README's run command: install what is missing, build, and run the
# quickstart search (CPU backend, bundled tasks, no API key).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
bash scripts/build.sh
exec build/bin/kevo run configs/quickstart.json "$@"
