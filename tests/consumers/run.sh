#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh — builds the out-of-tree consumers against an installed attnreg and
# runs them: a C host and a C++17 host with find_package(attnreg) and with
# pkg-config, and the C++17 plugin built with attnreg_add_plugin().
#
#   run.sh PREFIX       an installation prefix (cmake --install --prefix PREFIX)
#   run.sh --system     what the Debian packages installed (/usr)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = --system ]; then
  prefix=/usr
  cmake_args=()
  pc_path=
else
  prefix=$(cd "${1:?usage: run.sh PREFIX | --system}" && pwd)
  cmake_args=(-DCMAKE_PREFIX_PATH="$prefix")
  pc_path=$(dirname "$(find "$prefix" -name attnreg.pc -path '*/pkgconfig/*' | head -1)")
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/attnreg-consumers.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The hosts must see only the installation: no variable of the caller's.
for v in $(compgen -e); do case $v in ATTNREG_*) unset "$v" ;; esac; done

echo "consumers: find_package(attnreg) against $prefix"
cmake -S "$here" -B "$work/cmake" -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" >"$work/log" 2>&1 ||
  { cat "$work/log"; exit 1; }
cmake --build "$work/cmake" -j"$(nproc)" >>"$work/log" 2>&1 || { cat "$work/log"; exit 1; }
# Only attn_plugin_entry leaves the C++ plugin, with its C name.
exported=$(nm -D --defined-only "$work/cmake/plugin-conf/libattn_cxx_example.so" | awk '$2 == "T" {print $3}')
[ "$exported" = attn_plugin_entry ] || { echo "plugin exports: $exported"; exit 1; }
"$work/cmake/consumer_host_c"
ATTNREG_CONF_PATH=$work/cmake/plugin-conf "$work/cmake/consumer_host_cxx"

echo "consumers: pkg-config attnreg / attnreg-plugin against $prefix"
export PKG_CONFIG_PATH=${pc_path}${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
libdir=$(pkg-config --variable=libdir attnreg)
# The .pc files are relocatable: they must point into this prefix.
case $(cd "$libdir" && pwd -P) in "$(cd "$prefix" && pwd -P)"/*) ;; *)
  echo "attnreg.pc libdir $libdir is outside $prefix"; exit 1 ;; esac
rpath=-Wl,-rpath,$libdir
cc -std=c11 -Wall -Wextra -Werror "$here/host.c" -o "$work/host_c" $(pkg-config --cflags --libs attnreg) -lm "$rpath"
c++ -std=c++17 -Wall -Wextra -Werror "$here/host.cpp" -o "$work/host_cxx" $(pkg-config --cflags --libs attnreg) "$rpath"
mkdir -p "$work/pc-plugin"
c++ -std=c++17 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden "$here/plugin.cpp" \
  -o "$work/pc-plugin/libattn_cxx_example.so" $(pkg-config --cflags attnreg-plugin)
cp "$here/cxx-example.ini" "$work/pc-plugin/"
"$work/host_c"
ATTNREG_CONF_PATH=$work/pc-plugin "$work/host_cxx"
echo "consumers: all passed"
