#!/usr/bin/env bash
# fuzz/run.sh — the fuzz campaign behind `make fuzz` (which builds the harnesses first).
#   bash fuzz/run.sh BUILD [HARNESS...]          fuzz each harness for FUZZ_SECONDS (default 60)
#   bash fuzz/run.sh --merge BUILD [HARNESS...]  fold the campaign's new inputs into fuzz/corpus/
# One harness at a time, one libFuzzer process each (so one core stays free), OMP_NUM_THREADS=1.
# Per harness: the working corpus BUILD/corpus/H (kept between runs) seeded from fuzz/corpus/H
# and fuzz/regressions/H; crashing inputs in BUILD/findings/H/; the log in BUILD/logs/H.log.
# Prints executions, coverage (cov = edges, ft = features, from libFuzzer's last status line),
# corpus (inputs/bytes libFuzzer kept in use) and findings per harness; exits 1 when any harness
# found something.
set -u
merge=0
if [ "${1:-}" = "--merge" ]; then merge=1; shift; fi
B=${1:-build-fuzz}; shift || true
targets=${*:-safetensors checkpoint cifar10 idx imagefolder image_decode}
secs=${FUZZ_SECONDS:-60}
export OMP_NUM_THREADS=1

max_len() {
    case $1 in
        checkpoint) echo 16384 ;; image_decode) echo 16384 ;; cifar10) echo 12500 ;;
        imagefolder) echo 8192 ;; *) echo 4096 ;;
    esac
}

status=0
summary="$B/fuzz-summary.txt"
mkdir -p "$B"
[ $merge -eq 1 ] || printf '%-13s %6s %12s %7s %7s %11s %9s\n' harness seconds executions cov ft corpus findings | tee -a "$summary"
for h in $targets; do
    bin="$B/fuzz/fuzz_$h"
    [ -x "$bin" ] || { echo "fuzz/run.sh: $bin is not built (run make fuzz)"; exit 2; }
    dirs=("fuzz/corpus/$h"); [ -d "fuzz/regressions/$h" ] && dirs+=("fuzz/regressions/$h")
    if [ $merge -eq 1 ]; then
        before=$(ls "fuzz/corpus/$h" | wc -l)
        "$bin" -merge=1 -max_len="$(max_len "$h")" "fuzz/corpus/$h" "$B/corpus/$h" > "$B/logs/$h.merge.log" 2>&1
        echo "$h: fuzz/corpus/$h $before -> $(ls "fuzz/corpus/$h" | wc -l) files, $(du -sh "fuzz/corpus/$h" | cut -f1)"
        continue
    fi
    mkdir -p "$B/corpus/$h" "$B/findings/$h" "$B/logs"
    dict=(); [ -f "fuzz/dict/$h.dict" ] && dict=(-dict="fuzz/dict/$h.dict")
    cmd=("$bin" "$B/corpus/$h" "${dirs[@]}" -max_total_time="$secs" -max_len="$(max_len "$h")" -timeout=60 -report_slow_units=30
         -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$B/findings/$h/" "${dict[@]}")
    echo "== $h: ${cmd[*]}" >> "$summary"
    "${cmd[@]}" > "$B/logs/$h.log" 2>&1
    rc=$?
    log="$B/logs/$h.log"
    last=$(grep -aE '^#[0-9]+' "$log" | tail -n 1)
    execs=$(grep -aoE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -n 1)
    [ -n "$execs" ] || execs=$(echo "$last" | grep -oE '^#[0-9]+' | tr -d '#')
    cov=$(echo "$last" | grep -oE 'cov: [0-9]+' | grep -oE '[0-9]+')
    ft=$(echo "$last" | grep -oE 'ft: [0-9]+' | grep -oE '[0-9]+')
    corp=$(echo "$last" | grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' | cut -d' ' -f2)   # inputs/bytes in use
    # crash-, leak-, oom-, timeout- files are findings; slow-unit- files (an input that once took
    # over 10 s, usually a busy machine) are reported but do not fail the run
    found=$(ls "$B/findings/$h" | grep -vc '^slow-unit-')
    slow=$(ls "$B/findings/$h" | grep -c '^slow-unit-')
    printf '%-13s %6s %12s %7s %7s %11s %9s\n' "$h" "$secs" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$corp" "$found" | tee -a "$summary"
    [ "$slow" -eq 0 ] || echo "   $h: $slow slow input(s) kept in $B/findings/$h/ (not failures)" | tee -a "$summary"
    if [ $rc -ne 0 ] || [ "$found" -gt 0 ]; then
        status=1
        echo "   $h: libFuzzer exit $rc; findings in $B/findings/$h/, log $log:" | tee -a "$summary"
        grep -aE '^==[0-9]+==ERROR|SUMMARY|^fuzz: |runtime error' "$log" | head -n 5 | sed 's/^/     /' | tee -a "$summary"
    fi
done
exit $status
