#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what attnreg needs to build and test on Debian 12 (as root), and
# nothing when it is already there. Needs: network access to Debian's
# archive, or the packages already installed.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libinih-dev libjansson-dev check valgrind python3
      python3-numpy python3-pytest python3-pip python3-setuptools python3-wheel python3-venv
      python3-jsonschema mypy)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup-deps: missing ${missing[*]}; run as root or install them with apt-get" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "setup-deps: installed ${missing[*]}"
fi
