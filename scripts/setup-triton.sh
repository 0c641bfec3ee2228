#!/usr/bin/env bash
# Installs Triton (the version the GPU machine has) for the CPU tests of the
# torch backend's Triton candidates (tests/torch/triton_compile_test.py:
# Triton compiles to PTX without a GPU, inside kevo's sandbox). The wheel
# goes, without its dependencies, into a folder of its own that only that
# test puts on PYTHONPATH: the system Python is left as it is.
#   folder: $KEVO_TRITON_HOME, default /opt/kevo/triton-VERSION as root,
#   else ${XDG_DATA_HOME:-~/.local/share}/kevo/triton-VERSION
# Idempotent: a second run checks the import and installs nothing.
# `setup-triton.sh --site` prints the folder Triton is (or would be) in.
# The sandboxed host must be able to read it: not under /tmp (its private
# root is a tmpfs over /tmp) and not in root's home (mode 700, which the
# host, in a user namespace of its own, cannot enter).
set -euo pipefail
version=3.6.0
if [ "$(id -u)" -eq 0 ]; then default=/opt/kevo/triton-$version; else
  default=${XDG_DATA_HOME:-$HOME/.local/share}/kevo/triton-$version; fi
home=${KEVO_TRITON_HOME:-$default}
if [ "${1:-}" = --site ]; then echo "$home/site"; exit 0; fi
py=/usr/bin/python3
if PYTHONPATH="$home/site" "$py" -c "import triton, sys; sys.exit(triton.__version__ != '$version')" 2> /dev/null; then
  echo "setup-triton: triton $version present in $home"
  exit 0
fi
command -v "$py" > /dev/null || { echo "setup-triton: $py is missing (scripts/setup-debian.sh installs it)" >&2; exit 1; }
mkdir -p "$home"
if [ ! -x "$home/venv/bin/pip" ]; then
  "$py" -m venv "$home/venv" || { echo "setup-triton: cannot make a virtual environment (python3-venv)" >&2; exit 1; }
fi
start=$(date +%s)
rm -rf "$home/site.new"
"$home/venv/bin/pip" --disable-pip-version-check -q install --no-deps --no-compile --target "$home/site.new" \
  "triton==$version" || { echo "setup-triton: pip could not install triton==$version" >&2; exit 1; }
rm -rf "$home/site"
mv "$home/site.new" "$home/site"
PYTHONPATH="$home/site" "$py" -c "import triton; print('setup-triton: triton', triton.__version__, 'in $home/site')"
echo "setup-triton: $(( $(date +%s) - start )) s, $(du -sm "$home/site" | cut -f1) MB"
