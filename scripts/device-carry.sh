#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Packs what the GPU machine needs into .device-carry (see device-verify.sh):
# the CLI, libattnreg, libinih, libjansson, the plugins, the sm_90 test conf and the GPU
# test and bench, stripped and, for the large ones, xz-compressed (the device
# tool carries at most 64 MiB; each GPU binary holds every kernel). On the
# device, `bash .device-carry/unpack.sh` restores them.
#   usage: scripts/device-carry.sh [--bench-only] [BUILD_DIR [DEST]]
# DEST defaults to .device-carry. --bench-only packs gpu_attn_bench and
# gpu_attn_test alone (~17 MB): the second build of an A/B that runs beside a
# full carry (scripts/device-run.sh's ab-builds step), so both fit the tool's
# 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
bench_only=0
if [ "${1:-}" = --bench-only ]; then
  bench_only=1
  shift
fi
B=${1:-build}
D=${2:-.device-carry}
case $D in
  /* | .. | ../* | */../* | */..) echo "device-carry: DEST '$D' must be a folder inside the repository" >&2; exit 2 ;;
esac
[ -d "$B/bin" ] || { echo "device-carry: '$B' is not a build folder (no $B/bin)" >&2; exit 2; }
rm -rf "$D" && mkdir -p "$D"/{bin,lib/attnreg,share/attnreg,xz}
pack_xz() { # FILE (relative to the build): stripped, xz-compressed into $D/xz
  local n
  n=$(echo "$1" | tr / _)
  strip -o "$D/xz/$n" "$B/$1"
  xz -T0 -6 -f "$D/xz/$n"
}
if [ $bench_only = 1 ]; then
  pack_xz bin/gpu_attn_bench
  pack_xz bin/gpu_attn_test
else
  cp "$B"/bin/attnreg "$D"/bin/
  cp -L "$B"/lib/libattnreg.so.0 "$D"/lib/
  cp -L "$(ldconfig -p | awk '/libinih.so.1 /{print $NF; exit}')" "$D"/lib/libinih.so.1
  # libattnreg opens libjansson.so.4 to read config.json (attnreg plan,
  # plan_hf_config); LD_LIBRARY_PATH or the Python package's preload finds it.
  cp -L "$(ldconfig -p | awk '/libjansson.so.4 /{print $NF; exit}')" "$D"/lib/libjansson.so.4
  cp "$B"/lib/attnreg/libattn_cpu_ref.so "$D"/lib/attnreg/
  # the out-of-process probe helper (attnreg devices / check load plugins through it)
  [ -f "$B"/lib/attnreg/attnreg-probe ] && cp "$B"/lib/attnreg/attnreg-probe "$D"/lib/attnreg/
  cp -r "$B"/share/attnreg/conf-sm90 "$B"/share/attnreg/conf "$D"/share/attnreg/
  strip "$D"/bin/attnreg "$D"/lib/*.so* "$D"/lib/attnreg/*
  for f in bin/gpu_attn_test bin/gpu_attn_bench lib/attnreg/libattn_aiter_generic.so \
           lib/attnreg/libattn_aiter_mtp_gfx950.so; do
    [ -f "$B/$f" ] || continue
    pack_xz $f
  done
fi
cat > "$D"/unpack.sh <<'UNPACK'
#!/bin/bash
# Restores the xz-compressed binaries (python3's lzma: no xz needed).
cd "$(dirname "$0")"
for f in xz/*.xz; do
  n=$(basename "$f" .xz)
  case $n in bin_*) dst=bin/${n#bin_} ;; lib_attnreg_*) dst=lib/attnreg/${n#lib_attnreg_} ;; esac
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$f" "$dst"
  chmod +x "$dst"
done
UNPACK
du -sh "$D"
