#!/usr/bin/env bash
# Builds every bench program (bench/*.c) by the build line in its header comment, so a probe that no
# longer compiles or links is caught. Only builds, never runs or times them (benchmarks are not
# tests). A probe needing a library this machine lacks (-ldnnl, -lopenblas) is skipped visibly.
# Usage: tests/bench_probes.sh BUILD_DIR — run from the repository root; prints one line per probe
# and "N passed, N failed, N skipped".
B=${1:-build}
tmp=$(mktemp -d /tmp/vitgrad-probes-XXXXXX); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0; skip=0
have_lib() { echo 'int main(void){return 0;}' | gcc -x c - "$1" -o "$tmp/.libcheck" >/dev/null 2>&1; }
for src in bench/*.c; do
    name=$(basename "$src" .c)
    # the header comment, continuation lines joined
    header=$(sed -n '1,/\*\//p' "$src" | sed -e 's/^ \*//' -e 's/\*\/$//' | sed -e ':a' -e '/\\$/N; s/\\\n//; ta')
    line=$(echo "$header" | grep -E '^\s+(make|gcc) ' | head -n 1)
    if [ -z "$line" ]; then echo "  FAIL bench probe $name: no build line (\"gcc ...\" or \"make ...\") in its header comment"; fail=$((fail + 1)); continue; fi
    missing=""
    for l in $(echo "$header" | grep -oE '(^|\s)-l[a-z0-9_]+' | sort -u); do have_lib "$l" || missing="$missing $l"; done
    if [ -n "$missing" ]; then echo "  skip bench probe $name: needs$missing, not installed here"; skip=$((skip + 1)); continue; fi
    # its compile and link steps only: drop what runs the probe, a bare `make` (done already) and
    # notes in parentheses; the program goes to a scratch directory
    cmd=""
    IFS=$'\n'
    for part in $(echo "$line" | sed 's/&&/\n/g'); do
        part=$(echo "$part" | sed -e 's/([^)]*)//g' -e 's/^\s*//' -e 's/\s*$//')
        case "$part" in
            gcc\ *) part=$(echo "$part" | sed -E "s/ -o ([^ ]+)/ -o $(printf '%s' "$tmp" | sed 's/[\/&]/\\&/g')\/\1/") ;;
            make\ ?*) part="make --no-print-directory B=$B ${part#make }" ;;
            *) continue ;;
        esac
        cmd="${cmd:+$cmd && }$part"
    done
    unset IFS
    if out=$(eval "$cmd" 2>&1); then echo "  ok   bench probe $name builds: $cmd"; pass=$((pass + 1))
    else echo "  FAIL bench probe $name: $cmd"; echo "$out" | tail -n 5 | sed 's/^/       /'; fail=$((fail + 1)); fi
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
