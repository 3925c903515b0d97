#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_case.sh — one CLI baseline test: runs `attnreg` with fixed arguments and
# compares its stdout, stderr and exit code with tests/cli/baselines/NAME.txt.
#
#   run_case.sh ATTNREG_BINARY NAME [VAR=VALUE...] ARGS...
#
# Leading VAR=VALUE words are put in attnreg's environment (as `env` does),
# for the cases about environment variables. ARGS may hold placeholders,
# replaced before the run:
#   @CONF@      the shipped conf folder of this build (<build>/share/attnreg/conf)
#   @FAKECONF@  the generated conf folder of broken fake plugins (tests/cli)
#   @HOSTILECONF@ the generated conf folder of plugins that die while loading
#   @ARCHSCONF@ the generated conf folder of cpu-ref under an INI of gfx950 only
#   @SRC@       the source folder (for inputs such as tests/hf_configs/*.json)
# The output is normalised so baselines do not depend on where the build is:
# the build folder becomes @BUILD@ and the source folder @SRC@.
#
# Set ATTNREG_UPDATE_BASELINES=1 to (re)write the baseline instead of
# comparing: `ATTNREG_UPDATE_BASELINES=1 ctest -L cli`, then review the diff.
set -u

binary=$1
name=$2
shift 2

: "${ATTNREG_CLI_BUILD_DIR:?set by tests/cli/CMakeLists.txt}"
: "${ATTNREG_CLI_SOURCE_DIR:?set by tests/cli/CMakeLists.txt}"
: "${ATTNREG_CLI_CONF:?set by tests/cli/CMakeLists.txt}"
: "${ATTNREG_CLI_FAKE_CONF:?set by tests/cli/CMakeLists.txt}"
: "${ATTNREG_CLI_BASELINES:?set by tests/cli/CMakeLists.txt}"
baseline=$ATTNREG_CLI_BASELINES/$name.txt

# The baselines describe the shipped conf only: no ATTNREG_* variable of the
# caller's environment (not even this harness's own ATTNREG_CLI_*, which
# attnreg would warn about as unknown) may add folders, force or disable
# backends, or change logging.
clean_env=()
for var in $(compgen -e); do
    case $var in ATTNREG_* | attnreg_*) clean_env+=(-u "$var") ;; esac
done
export LC_ALL=C

case_env=()
while [ $# -gt 0 ] && [[ $1 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do
    case_env+=("$1")
    shift
done

args=()
shown=()
for arg in "$@"; do
    shown+=("$arg")
    arg=${arg//@CONF@/$ATTNREG_CLI_CONF}
    arg=${arg//@FAKECONF@/$ATTNREG_CLI_FAKE_CONF}
    arg=${arg//@HOSTILECONF@/${ATTNREG_CLI_HOSTILE_CONF:-}}
    arg=${arg//@ARCHSCONF@/${ATTNREG_CLI_ARCHS_CONF:-}}
    arg=${arg//@SRC@/$ATTNREG_CLI_SOURCE_DIR}
    args+=("$arg")
done

workdir=$(mktemp -d "${TMPDIR:-/tmp}/attnreg-cli.XXXXXX") || exit 1
trap 'rm -rf "$workdir"' EXIT

env "${clean_env[@]}" "${case_env[@]}" "$binary" "${args[@]}" >"$workdir/stdout" 2>"$workdir/stderr"
status=$?

# Replaces the build and source folders (and their real paths, which the
# library prints for resolved libraries) by placeholders; the longest first,
# since the build folder usually sits inside the source folder.
normalise() {
    local text
    text=$(cat "$1")
    local pairs=()
    local build_real src_real
    build_real=$(cd "$ATTNREG_CLI_BUILD_DIR" && pwd -P)
    src_real=$(cd "$ATTNREG_CLI_SOURCE_DIR" && pwd -P)
    pairs+=("$ATTNREG_CLI_BUILD_DIR|@BUILD@" "$build_real|@BUILD@")
    pairs+=("$ATTNREG_CLI_SOURCE_DIR|@SRC@" "$src_real|@SRC@")
    for pair in "${pairs[@]}"; do
        local from=${pair%|*} to=${pair##*|}
        [ -n "$from" ] && text=${text//"$from"/$to}
    done
    printf '%s\n' "$text"
}

{
    printf '$'
    [ ${#case_env[@]} -gt 0 ] && printf ' %s' "${case_env[@]}"
    printf ' attnreg'
    printf ' %s' "${shown[@]}"
    printf '\n--- stdout\n'
    normalise "$workdir/stdout"
    printf -- '--- stderr\n'
    normalise "$workdir/stderr"
    printf -- '--- exit %d\n' "$status"
} >"$workdir/actual"

if [ "${ATTNREG_UPDATE_BASELINES:-0}" = 1 ]; then
    mkdir -p "$ATTNREG_CLI_BASELINES"
    cp "$workdir/actual" "$baseline"
    echo "updated $baseline"
    exit 0
fi

if [ ! -f "$baseline" ]; then
    echo "no baseline $baseline; the output was:"
    cat "$workdir/actual"
    echo "(create it with ATTNREG_UPDATE_BASELINES=1 ctest -L cli)"
    exit 1
fi

if ! diff -u "$baseline" "$workdir/actual"; then
    echo "cli.$name: output differs from $baseline (- baseline, + actual)."
    echo "If the change is intended: ATTNREG_UPDATE_BASELINES=1 ctest -L cli, and review the diff."
    exit 1
fi
exit 0
