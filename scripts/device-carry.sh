#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Packs what the GPU machine needs into .device-carry (see device-verify.sh):
# the CLI, libattnreg, libinih, libjansson, the plugins, the sm_90 test conf and the GPU
# test and bench, stripped and, for the large ones, xz-compressed (the device
# tool carries at most 64 MiB; each GPU binary holds every kernel). On the
# device, `bash .device-carry/unpack.sh` restores them.
#   usage: scripts/device-carry.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
D=.device-carry
rm -rf $D && mkdir -p $D/{bin,lib/attnreg,share/attnreg,xz}
cp $B/bin/attnreg $D/bin/
cp -L $B/lib/libattnreg.so.0 $D/lib/
cp -L "$(ldconfig -p | awk '/libinih.so.1 /{print $NF; exit}')" $D/lib/libinih.so.1
# libattnreg opens libjansson.so.4 to read config.json (attnreg plan,
# plan_hf_config); LD_LIBRARY_PATH or the Python package's preload finds it.
cp -L "$(ldconfig -p | awk '/libjansson.so.4 /{print $NF; exit}')" $D/lib/libjansson.so.4
cp $B/lib/attnreg/libattn_cpu_ref.so $D/lib/attnreg/
# the out-of-process probe helper (attnreg devices / check load plugins through it)
[ -f $B/lib/attnreg/attnreg-probe ] && cp $B/lib/attnreg/attnreg-probe $D/lib/attnreg/
cp -r $B/share/attnreg/conf-sm90 $B/share/attnreg/conf $D/share/attnreg/
strip $D/bin/attnreg $D/lib/*.so* $D/lib/attnreg/*
for f in bin/gpu_attn_test bin/gpu_attn_bench lib/attnreg/libattn_aiter_generic.so \
         lib/attnreg/libattn_aiter_mtp_gfx950.so; do
  [ -f $B/$f ] || continue
  n=$(echo $f | tr / _)
  strip -o $D/xz/$n $B/$f
  xz -T0 -6 -f $D/xz/$n
done
cat > $D/unpack.sh <<'UNPACK'
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
du -sh $D
