#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Python package on the H200 (torch + CUDA, no pip/apt, no libinih): the
# pytest suite (GPU tests included; a plain runner of the GPU checks when
# pytest is missing), the toy engine on CUDA tensors with the GPU backends
# (and on torch-CPU with cpu-ref), the transformers integration against eager
# attention (tests/python/transformers_checks.py) and compare_torch.py's table.
# Run from the repository root with a CUDA build folder carried along:
#
#   bash scripts/h200_python.sh [BUILD_DIR]      # default: $ATTNREG_CARRY, else build
#
# BUILD_DIR needs lib/libattnreg.so.0 (or the real lib/libattnreg.so.0.*: the
# device tool carries no symbolic links), lib/libinih.so.1 (copy it in on the
# build machine: cp -L /lib/x86_64-linux-gnu/libinih.so.1 BUILD_DIR/lib/; and
# libjansson.so.4 the same way, for plan_hf_config),
# lib/attnreg/*.so with the GPU plugins, and share/attnreg/conf-sm90; a
# .device-carry folder (scripts/device-carry.sh) works too (its xz-packed
# plugins are unpacked first). Results and logs go to $OUT (default
# ./h200-python-out). About 3 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
D=${1:-${ATTNREG_CARRY:-build}}
D=$(cd "$D" && pwd) || { echo "h200_python: no folder $D" >&2; exit 2; }
O=${OUT:-$PWD/h200-python-out}
mkdir -p "$O"
PY=${PYTHON:-python3}
exec > >(tee "$O/h200_python.log") 2>&1
t0=$(date +%s)
step() { echo; echo "=== $* ($(( $(date +%s) - t0 ))s)"; }

if [ -d "$D/xz" ] && [ ! -f "$D/lib/attnreg/libattn_aiter_generic.so" ]; then
  bash "$D/unpack.sh"
fi
lib=$D/lib/libattnreg.so.0
if [ ! -f "$lib" ]; then  # carried without its symbolic links: the soname from the real file
  real=$(ls "$D"/lib/libattnreg.so.0.* 2>/dev/null | head -1)
  if [ -z "$real" ]; then echo "h200_python: no libattnreg.so.0 in $D/lib" >&2; exit 2; fi
  cp "$real" "$lib"
fi
# The CPU tests use the shipped conf beside the library (lib/../share/attnreg/conf),
# as the build configured it (conf/*.ini are templates with @ATTNREG_PLUGIN_DIR@);
# scripts/device-carry.sh carries it.
if [ ! -d "$D/share/attnreg/conf" ]; then
  echo "h200_python: no $D/share/attnreg/conf (the build's configured conf)" >&2
  exit 2
fi
if [ ! -f "$D/lib/libinih.so.1" ] && ! ldconfig -p 2>/dev/null | grep -q libinih.so.1; then
  echo "h200_python: no libinih.so.1 in $D/lib and none on this machine;" \
       "copy it in on the build machine (cp -L /lib/x86_64-linux-gnu/libinih.so.1 $D/lib/)" >&2
  exit 2
fi
CONF=$D/share/attnreg/conf-sm90
export ATTNREG_LIBRARY=$lib                 # the package finds libinih.so.1 beside it
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
export ATTNREG_TEST_CONF=$CONF               # test_gpu.py / gpu_checks.py: conf-sm90 only
export PYTHONDONTWRITEBYTECODE=1
export LD_LIBRARY_PATH=$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}   # for bin/attnreg
[ -x "$D/bin/attnreg" ] && export ATTNREG_TEST_BUILD=$D   # explain/list vs the CLI
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
rc=0

step "import attnreg"
timeout 60 $PY -c "import attnreg, torch; print('attnreg', attnreg.__version__, attnreg.library_path); print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))" || rc=1

step "pytest tests/python (CPU suite on cpu-ref + GPU tests)"
if $PY -c "import pytest, numpy" 2>/dev/null; then
  (cd tests/python && timeout 150 $PY -m pytest -q -p no:cacheprovider -rs . \
     --junitxml="$O/pytest.xml") || rc=1
else
  echo "pytest or numpy missing: running the GPU checks without pytest"
  (cd tests/python && timeout 150 $PY gpu_checks.py) || rc=1
fi

step "transformers: attn_implementation attnreg vs eager (3 random models, prefill + decode)"
# Part of the pytest run above too (test_transformers_gpu.py); run directly
# so the per-architecture errors are in the log even without pytest.
(cd tests/python && timeout 240 $PY transformers_checks.py) || rc=1

step "toy engine: torch CUDA tensors, GPU backends (conf-sm90)"
timeout 120 $PY examples/python/toy_engine.py --device cuda --conf "$CONF" --decode-steps 32 || rc=1
step "toy engine: torch CPU tensors, cpu-ref"
timeout 120 $PY examples/python/toy_engine.py --device cpu --conf "$CONF" --decode-steps 32 || rc=1

step "compare_torch.py --quick"
timeout 300 $PY bench/gpu/compare_torch.py --quick --conf "$CONF" --out "$O" --budget-s 110 || rc=1

step "done: rc=$rc; results in $O"
exit $rc
