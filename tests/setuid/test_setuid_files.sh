#!/usr/bin/env bash
# A setuid-root attnreg run by an unprivileged user opens, creates
# and replaces the files named on its command line with that user's rights,
# never root's. As root (CI): a setuid-root copy of the CLI is run as
# `nobody`, which
#   1. asks `plan --hf-config` to read a root-only (0600) file: refused with
#      "Permission denied", and nothing of the file is quoted;
#   2. asks `run --out` to replace a root-only file in a root-owned folder:
#      refused, the file keeps its contents;
#   3. runs the same `run` with --out in its own folder: written, and the
#      file belongs to nobody (the caller's rights, not a blanket refusal);
#   4. asks `run --out` to replace nobody's own read-only file: refused.
# Exit 77 (skipped) when not root, without `nobody` or setpriv, or when the
# setuid bit does not take effect (a nosuid mount).
#   test_setuid_files.sh ATTNREG_CLI WORK_PARENT
set -u
cli=$1 parent=$2
. "$(dirname "$0")/setup.sh" setuid-files

as_nobody() {
    setpriv --reuid=nobody --regid="$group" --clear-groups "$@"
}

# Privileged at all? ATTNREG_CONF_PATH is ignored in a privileged process.
mkdir "$user/conf"
out=$(as_nobody env ATTNREG_CONF_PATH="$user/conf" "$work/attnreg" check 2>&1)
if grep -q "^  $user/conf\$" <<<"$out"; then
    echo "skipped: the setuid bit did not take effect here"; exit 77
fi

# An .npy file from a descr, a shape and the data bytes (printf escapes).
npy() { # FILE DESCR SHAPE DATA
    local header="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
    local len=$(( (10 + ${#header} + 1 + 63) / 64 * 64 - 10 ))
    header=$(printf '%-*s' $((len - 1)) "$header")
    { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8)))"
      printf '%s\n' "$header"; printf "$4"; } >"$1"
}
zeros16='\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
npy "$user/q.npy" '<f4' '(1, 1, 4)' "$zeros16"
npy "$user/k.npy" '<f4' '(1, 1, 1, 4)' "$zeros16"
npy "$user/v.npy" '<f4' '(1, 1, 1, 4)' "$zeros16"
npy "$user/bt.npy" '<i4' '(1, 1)' '\x00\x00\x00\x00'
npy "$user/cu.npy" '<i4' '(2,)' '\x00\x00\x00\x00\x01\x00\x00\x00'
npy "$user/sk.npy" '<i4' '(1,)' '\x01\x00\x00\x00'
chown -R nobody:"$group" "$user"
run_as_nobody() { # OUT
    as_nobody "$work/attnreg" run --backend cpu-ref --q-heads 1 --kv-heads 1 --head-dim 4 \
        --q-dtype f32 --page-size 1 --q "$user/q.npy" --k-cache "$user/k.npy" \
        --v-cache "$user/v.npy" --block-table "$user/bt.npy" --cu-seqlens-q "$user/cu.npy" \
        --seqused-k "$user/sk.npy" --out "$1" 2>&1
}

fail=0
# 1. A root-only file as --hf-config.
secret=$work/secret.json
printf 'SECRET-TOKEN-e1a7 {"num_attention_heads": 1}\n' >"$secret"
chmod 600 "$secret"
out=$(as_nobody "$work/attnreg" plan --hf-config "$secret" 2>&1); rc=$?
echo "$out"
grep -q SECRET <<<"$out" && { echo "FAIL: plan quoted the root-only file"; fail=1; }
grep -q "Permission denied" <<<"$out" || { echo "FAIL: plan did not refuse with EACCES"; fail=1; }
[ "$rc" = 9 ] || { echo "FAIL: plan exited $rc, not 9"; fail=1; }

# 2. A root-only file in a root-owned folder as --out.
mkdir "$work/rootdir"
chmod 755 "$work/rootdir"
target=$work/rootdir/owned.npy
printf "root's file\n" >"$target"
chmod 600 "$target"
out=$(run_as_nobody "$target"); rc=$?
echo "$out"
[ "$(cat "$target")" = "root's file" ] || { echo "FAIL: run --out replaced root's file"; fail=1; }
[ "$rc" = 9 ] || { echo "FAIL: run exited $rc, not 9"; fail=1; }
ls "$work/rootdir" | grep -q tmp && { echo "FAIL: a temporary file was left"; fail=1; }

# 3. nobody's own folder: written, and owned by nobody.
out=$(run_as_nobody "$user/out.npy"); rc=$?
[ "$rc" = 0 ] || { echo "FAIL: run into nobody's folder exited $rc: $out"; fail=1; }
owner=$(stat -c %U "$user/out.npy" 2>/dev/null)
[ "$owner" = nobody ] || { echo "FAIL: out.npy belongs to '$owner', not nobody"; fail=1; }
# 4. A file of nobody's that nobody may not write (0444): not replaced
# either, though the folder would let the rename through.
printf "read-only\n" >"$user/ro.npy"
chown nobody "$user/ro.npy"
chmod 444 "$user/ro.npy"
out=$(run_as_nobody "$user/ro.npy"); rc=$?
[ "$(cat "$user/ro.npy")" = "read-only" ] || { echo "FAIL: run --out replaced a read-only file"; fail=1; }
[ "$rc" = 9 ] || { echo "FAIL: run --out on a read-only file exited $rc, not 9: $out"; fail=1; }
exit $fail
