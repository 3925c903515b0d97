#!/usr/bin/env bash
# No binary or library of the build may carry an RPATH/RUNPATH
# element that is empty or relative (not $ORIGIN-based): either one is
# resolved against the current directory, so running the program from a
# folder that holds, say, a libm.so.6 would load it and run its constructor.
#   check_runpath.sh FILE_OR_FOLDER...
set -u
command -v readelf >/dev/null || { echo "skipped: no readelf"; exit 77; }
checked=0 fail=0
while IFS= read -r -d '' f; do
    head -c 4 "$f" 2>/dev/null | grep -q $'\x7fELF' || continue
    checked=$((checked + 1))
    paths=$(readelf -d "$f" 2>/dev/null | sed -n 's/.*(\(RPATH\|RUNPATH\)).*\[\(.*\)\]$/\2/p')
    [ -n "$paths" ] || continue
    IFS=: read -r -a elems <<<"$paths"
    # A trailing ':' leaves no element for read -a: compare the text too.
    case "$paths" in :* | *: | *::*) echo "FAIL: $f: empty element in '$paths'"; fail=1; continue ;; esac
    for e in "${elems[@]}"; do
        case "$e" in
        /* | '$ORIGIN'*) ;;
        *) echo "FAIL: $f: relative element '$e' in '$paths'"; fail=1 ;;
        esac
    done
done < <(find "$@" -type f \( -perm -u+x -o -name '*.so*' \) -print0)
[ "$checked" -gt 0 ] || { echo "FAIL: no ELF file found under $*"; exit 1; }
echo "checked $checked ELF files"
exit $fail
