# SPDX-License-Identifier: Apache-2.0
# Sourced by the setuid tests: skips (exit 77) unless root with a `nobody`
# user and setpriv; makes $work (removed on exit) holding $work/attnreg, a
# setuid-root copy of $cli, and $user, a folder for nobody's files; $group is
# nobody's group. Needs $cli and $parent; $1 names the work folder.
[ "$(id -u)" = 0 ] || { echo "skipped: not root"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "skipped: no user nobody"; exit 77; }
command -v setpriv >/dev/null || { echo "skipped: no setpriv"; exit 77; }
group=$(id -gn nobody)

work=$(mktemp -d "$parent/$1.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
cp "$cli" "$work/attnreg"
chown root:root "$work/attnreg"
chmod 4755 "$work/attnreg"
user=$work/user
mkdir "$user"
