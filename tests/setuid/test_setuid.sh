#!/usr/bin/env bash
# A setuid-root attnreg run by an unprivileged user must not run
# that user's plugin. As root (CI): a setuid-root copy of the CLI is run as
# `nobody`, once with ATTNREG_CONF_PATH and once with --conf naming a folder
# of nobody's that holds a plugin whose constructor writes a marker file.
# The marker must never appear; the folder must be ignored (environment) or
# refused (owned by nobody, not root). Exit 77 (skipped) when not root, when
# there is no `nobody` or setpriv, or when the setuid bit does not take
# effect (a nosuid mount).
#   test_setuid.sh ATTNREG_CLI MARKER_PLUGIN.so WORK_PARENT
set -u
cli=$1 plugin=$2 parent=$3
. "$(dirname "$0")/setup.sh" setuid-test
cp "$plugin" "$user/libmarker.so"
cat >"$user/marker.ini" <<INI
[plugin]
format_version = 1.0
name = hostile-ctor-marker
library = libmarker.so
priority = 1000
archs = cpu
INI
chown -R nobody:"$group" "$user"
marker=$user/ran-as-root

as_nobody() {
    setpriv --reuid=nobody --regid="$group" --clear-groups \
        env HOSTILE_MARKER="$marker" "$@"
}

fail=0
# 1. ATTNREG_CONF_PATH: ignored in a privileged process.
out=$(as_nobody ATTNREG_CONF_PATH="$user" "$work/attnreg" check 2>&1)
if grep -q "^  $user\$" <<<"$out"; then
    if [ -e "$marker" ]; then
        echo "FAIL: the setuid attnreg searched ATTNREG_CONF_PATH and ran the plugin"
        exit 1
    fi
    # The folder was searched: the process was not privileged (nosuid?).
    echo "skipped: the setuid bit did not take effect here"; echo "$out"; exit 77
fi
[ -e "$marker" ] && { echo "FAIL: marker written (ATTNREG_CONF_PATH)"; fail=1; }
# check probes every plugin out of process; the probe's helper must
# work in a privileged run too (it found libattnreg through $ORIGIN, which
# the dynamic loader ignores in a secure exec: every plugin "called exit(127)").
grep -qE "^  OK +cpu-ref " <<<"$out" ||
    { echo "FAIL: cpu-ref did not load through the probe in the setuid run"; echo "$out"; fail=1; }

# 2. --conf naming the user's folder: refused (owned by nobody, not root).
out=$(as_nobody "$work/attnreg" check --conf "$user" 2>&1); rc=$?
[ -e "$marker" ] && { echo "FAIL: marker written (--conf)"; fail=1; }
grep -q "refused in a privileged" <<<"$out" || { echo "FAIL: no refusal shown"; fail=1; }
[ "$rc" = 1 ] || { echo "FAIL: check exited $rc, not 1"; fail=1; }
echo "$out"

# 4. A setuid copy owned by another user than root (daemon) runs
# the out-of-process probe's helper (attnreg check probes every plugin) with
# daemon's rights: nobody's LD_PRELOAD must not run in it (the helper gets no
# environment in a privileged run; the kernel's secure exec is a second
# guard, so this case holds without the first one too).
if id daemon >/dev/null 2>&1; then
    cp "$cli" "$work/attnreg-daemon"
    chown daemon "$work/attnreg-daemon"
    chmod 4755 "$work/attnreg-daemon"
    drop=$work/drop
    mkdir "$drop"
    chmod 1777 "$drop"
    cp "$plugin" "$drop/libpreload.so"
    chmod 644 "$drop/libpreload.so"
    as_nobody env HOSTILE_MARKER="$drop/preloaded" LD_PRELOAD="$drop/libpreload.so" \
        "$work/attnreg-daemon" check >/dev/null 2>&1
    [ -e "$drop/preloaded" ] &&
        { echo "FAIL: the probe helper of a setuid-daemon attnreg ran nobody's LD_PRELOAD"; fail=1; }
else
    echo "case 4 skipped: no user daemon"
fi

# 3. Control: the same folder as root itself (not setuid) does run the
# plugin, so the marker test above can see a load when there is one.
env HOSTILE_MARKER="$marker" ATTNREG_CONF_PATH="$user" "$cli" check >/dev/null 2>&1
[ -e "$marker" ] || { echo "FAIL: the control run did not write the marker"; fail=1; }
exit $fail
