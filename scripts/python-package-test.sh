#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python package as users install it (.ci/run runs this after the test
# suite; BUILD is a CPU build of the repository, default build/):
#   1. the wheel from BUILD: tagged py3-none-<platform>, carrying libattnreg,
#      the plugins, the conf, libinih and libjansson;
#   2. into a venv of Debian's python3: the pytest suite on the installed
#      copy, the toy engine, the smoke test (tests/python/packaging);
#   3. into a venv of up to two other CPythons (pyenv's, when installed): the
#      smoke test, so the one wheel is shown to install under each;
#   4. the sdist, installed into a fresh venv: it builds libattnreg from the
#      sources it carries, then the smoke test;
#   5. python/ with the repository but no build: pip install fails at install,
#      naming what to do.
# Offline: --no-index, --no-build-isolation, Debian's setuptools and wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
repo=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pip_offline=(-q --no-index --no-build-isolation)
smoke() { (cd / && env -u PYTHONPATH -u ATTNREG_LIBRARY "$1" "$repo/tests/python/packaging/wheel_smoke.py"); }

echo "--- 1. wheel from $build"
ATTNREG_PREFIX="$build" /usr/bin/python3 -m pip wheel "${pip_offline[@]}" --no-deps -w "$work/dist" ./python
wheel=$(ls "$work"/dist/attnreg-*.whl)
case "$(basename "$wheel")" in
  *-py3-none-linux_*.whl) echo "wheel: $(basename "$wheel") (py3-none: any CPython >= 3.9)" ;;
  *) echo "wheel tag is not py3-none-linux_*: $(basename "$wheel")"; exit 1 ;;
esac
for f in libattnreg.so.0 libinih.so.1 libjansson.so.4 attnreg/libattn_cpu_ref.so; do
  unzip -l "$wheel" "attnreg/_bundled/lib/$f" >/dev/null || { echo "wheel lacks lib/$f"; exit 1; }
done

echo "--- 2. Debian's python3: pytest on the installed copy, toy engine, smoke test"
/usr/bin/python3 -m venv --system-site-packages "$work/deb"
"$work/deb/bin/pip" install "${pip_offline[@]}" "$wheel"
(cd tests/python && env -u PYTHONPATH ATTNREG_TEST_BUILD="$build" \
  "$work/deb/bin/python" -m pytest -q -rsP -p no:cacheprovider .)  # -rs: what was skipped; -P: the property seed
env -u PYTHONPATH "$work/deb/bin/python" examples/python/toy_engine.py --device cpu --decode-steps 32
smoke "$work/deb/bin/python"

echo "--- 3. the same wheel under other CPythons"
others=0
for py in /root/.pyenv/versions/3.9*/bin/python3 /root/.pyenv/versions/3.13*/bin/python3; do
  [ -x "$py" ] || continue
  "$py" -m venv "$work/other$others"
  "$work/other$others/bin/pip" install "${pip_offline[@]}" "$wheel"
  smoke "$work/other$others/bin/python"
  others=$((others + 1))
done
[ "$others" -gt 0 ] || echo "no second CPython here: the py3-none tag check above stands for it"

echo "--- 4. the sdist builds libattnreg from its own sources"
(cd python && /usr/bin/python3 setup.py -q sdist -d "$work/sdist" >/dev/null 2>&1)
rm -rf python/attnreg.egg-info
/usr/bin/python3 -m venv --system-site-packages "$work/sd"
(cd "$work" && env -u ATTNREG_PREFIX -u ATTNREG_LIBRARY \
  "$work/sd/bin/pip" install "${pip_offline[@]}" "$work"/sdist/attnreg-*.tar.gz)
smoke "$work/sd/bin/python"

echo "--- 5. no library to bundle or use: the install fails, naming the fix"
mkdir -p "$work/bare"
cp CMakeLists.txt "$work/bare/" && cp -r python "$work/bare/python"
rm -rf "$work/bare/python/build" "$work/bare/python/attnreg.egg-info"
if env -u ATTNREG_PREFIX -u ATTNREG_LIBRARY "$work/sd/bin/pip" install "${pip_offline[@]}" \
     "$work/bare/python" >"$work/bare.log" 2>&1; then
  echo "pip install without a library succeeded"; exit 1
fi
grep -o "attnreg: no libattnreg to bundle or to use: build libattnreg first" "$work/bare.log"
echo "python package: all routes passed"
