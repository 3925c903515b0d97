#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# package-test.sh — attnreg as its consumers get it (.ci/run's install and
# package stage; needs root for apt-get and a finished build/ from
# scripts/test.sh):
#   1. `cmake --install build` into a prefix, moved elsewhere afterwards: the
#      installed CLI still finds its conf and plugins, and the out-of-tree C
#      and C++17 hosts and the C++17 plugin (tests/consumers) build with
#      find_package and pkg-config and run against it;
#   2. the Debian packages (cpack -G DEB, prefix /usr, multiarch libdir; built
#      with clang, so this is also the clang build), installed with apt-get:
#      the installed `attnreg check` searches /etc/attnreg/conf.d then
#      /usr/share/attnreg/conf and loads every plugin, an INI in conf.d
#      overrides the shipped one without an error, the out-of-tree consumers
#      run against /usr; then the packages are removed again.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
work=$(mktemp -d "${TMPDIR:-/tmp}/attnreg-package.XXXXXX")
cleanup() {
  if dpkg -s attnreg >/dev/null 2>&1 || dpkg -s attnreg-dev >/dev/null 2>&1; then
    apt-get purge -y -qq attnreg-dev attnreg >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
for v in $(compgen -e); do case $v in ATTNREG_*) unset "$v" ;; esac; done

echo "--- 1. cmake --install into a prefix, then moved"
cmake --install build --prefix "$work/prefix" >/dev/null
mv "$work/prefix" "$work/moved"
"$work/moved/bin/attnreg" check >"$work/check.txt" || { cat "$work/check.txt"; exit 1; }
grep -q "datadir            $work/moved/share/attnreg/conf\$" "$work/check.txt" ||
  { echo "moved prefix: shipped conf not found"; cat "$work/check.txt"; exit 1; }
grep -q "OK    cpu-ref" "$work/check.txt" || { cat "$work/check.txt"; exit 1; }
# The shipped conf selects the GPU plugins for sm_90 shapes (planning
# mode: no GPU here), with no test conf.
sm90_selects() {
  local bin=$1
  test "$("$bin" select --arch sm_90 --q-heads 32 --kv-heads 8 --max-q-len 1 --max-kv-len 4096)" = aiter-generic &&
    test "$("$bin" select --arch sm_90 --q-heads 16 --kv-heads 1 --head-dim 256 --kv-dtype fp8_e4m3fn \
      --page-size 16 --max-q-len 4 --max-kv-len 4096)" = aiter-mtp-gfx950 ||
    { echo "$bin: the shipped conf does not select aiter-generic / aiter-mtp-gfx950 for sm_90"; exit 1; }
}
sm90_selects "$work/moved/bin/attnreg"
bash tests/consumers/run.sh "$work/moved"

echo "--- 2. Debian packages"
command -v clang >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends clang >/dev/null; }
rm -rf build-deb  # a fresh tree, so CC=clang takes effect
CC=clang CXX=clang++ cmake -S . -B build-deb -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DATTNREG_GPU=off -DATTNREG_TESTS=OFF -DATTNREG_BENCH=OFF -DATTNREG_WERROR=ON >/dev/null
cmake --build build-deb -j"$(nproc)" >/dev/null
rm -f build-deb/*.deb
(cd build-deb && cpack -G DEB >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; exit 1; }
for deb in build-deb/*.deb; do
  echo "$deb: $(dpkg-deb -f "$deb" Package) depends on: $(dpkg-deb -f "$deb" Depends)"
done
dpkg-deb -f build-deb/attnreg_*.deb Depends | grep -q libinih1 ||
  { echo "runtime package lacks the libinih1 dependency"; exit 1; }
apt-get install -y -qq ./build-deb/attnreg_*.deb ./build-deb/attnreg-dev_*.deb >/dev/null
# DESTDIR and /usr layout: plugins in the multiarch libdir, INIs that resolve.
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
test -f "/usr/lib/$multiarch/attnreg/libattn_cpu_ref.so"
test -d /etc/attnreg/conf.d
/usr/bin/attnreg check >"$work/check.txt" || { cat "$work/check.txt"; exit 1; }
cat "$work/check.txt"
grep -q "sysconf            /etc/attnreg/conf.d\$" "$work/check.txt"
grep -q "datadir            /usr/share/attnreg/conf\$" "$work/check.txt"
grep -q "summary: 3 plugins, 0 failed to load, 0 conf problems" "$work/check.txt"
sm90_selects /usr/bin/attnreg
# An administrator's override: same name, earlier folder; no error, it wins.
sed -e "s|^library = .*|library = /usr/lib/$multiarch/attnreg/libattn_cpu_ref.so|" \
    -e 's|^priority = .*|priority = 7|' /usr/share/attnreg/conf/cpu-ref.ini >/etc/attnreg/conf.d/cpu-ref.ini
/usr/bin/attnreg check --log info >"$work/check.txt" 2>"$work/check.err" ||
  { cat "$work/check.txt" "$work/check.err"; exit 1; }
grep -q "plugin 'cpu-ref' is overridden by /etc/attnreg/conf.d/cpu-ref.ini" "$work/check.err" ||
  { echo "no override info line"; cat "$work/check.err"; exit 1; }
/usr/bin/attnreg list --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["schema_version"] == 1, d
p = [p for p in d["plugins"] if p["backend"] == "cpu-ref"][0]
assert p["priority"] == 7 and p["conf_file"] == "/etc/attnreg/conf.d/cpu-ref.ini", p
print("override: cpu-ref from", p["conf_file"], "priority", p["priority"])'
rm /etc/attnreg/conf.d/cpu-ref.ini
# The schema is installed, and the installed attnreg reads a config.json
# (libattnreg opens libjansson.so.4, which the package depends on).
/usr/bin/attnreg plan --hf-config "$PWD/tests/hf_configs/llama-3.1-8b.json" --max-model-len 4096 \
  --json | python3 -c '
import json, sys, jsonschema
schema = json.load(open("/usr/share/attnreg/attnreg.schema.json"))
d = json.load(sys.stdin)
jsonschema.validate(d, schema)
assert d["status"] == "ATTN_OK" and d["entries"][0]["scale"] > 0, d
print("installed schema validates plan --json;", len(d["entries"]), "entries")'
man -w attnreg >/dev/null 2>&1 || test -f /usr/share/man/man1/attnreg.1
bash tests/consumers/run.sh --system
apt-get purge -y -qq attnreg-dev attnreg >/dev/null
test ! -e /usr/bin/attnreg
echo "package-test: passed"
