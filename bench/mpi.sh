#!/usr/bin/env bash
# mpi.sh — `make bench-mpi`: data-parallel training speed on this machine, then a model of scaling
# to more nodes. Not a test; prints Markdown for docs/distributed.md.
#
#   bash bench/mpi.sh [BUILD_DIR]     (make bench-mpi builds BUILD_DIR/train-mpi first)
#
# Rows: 1 process x 1 thread, 1 process x 2 threads, 2 ranks x 1 thread over shared memory (vader)
# and over TCP on the loopback interface. Each row is the best of ROUNDS (default 2) runs of
# `--bench STEPS` (default 6) on MODEL (default vit-tiny-cifar), global batch BATCH (default 128).
# Scaling efficiency = img/s(2 ranks x 1 thread) / (2 x img/s(1 x 1)). The wait after backward is
# shown for the rank that finished backward last (what the gradient sum did not hide) and for the
# first (which also waits for the other's backward).
#
# The model (weak scaling: every node keeps this machine's batch and step time): a ring allreduce
# moves 2(N-1)/N x G bytes per step for G bytes of gradient, plus 2(N-1) latency hops (ALPHA_US,
# default 20 us) per bucket. Sums of buckets run while backward computes earlier layers, so a step
# waits for max(T_sum - T_backward, T_last): the part that did not fit behind backward, and at least
# the last bucket (1/buckets of the bytes plus its 2(N-1) hops), which starts when backward ends.
# The bucket count shown is the fewest whose wait is within 0.2 % of a step of the smallest (up to
# 128 buckets): larger buckets would cost more, smaller ones would save nothing that shows;
# efficiency = T_step / (T_step + wait). FAST_NODE_MS (optional) adds a second table for a node
# that computes a step in that many ms (a bigger machine), with the same gradient.
set -u
B=${1:-build}
MODEL=${MODEL:-vit-tiny-cifar}
BATCH=${BATCH:-128}
STEPS=${STEPS:-6}
ROUNDS=${ROUNDS:-2}
ALPHA_US=${ALPHA_US:-20}
TRAIN="$B/train-mpi"
cd "$(dirname "$0")/.."
[ -x "$TRAIN" ] || { echo "bench-mpi: $TRAIN is missing (make $TRAIN; needs mpicc)"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN="mpirun -np 2 --bind-to core --map-by core"
# as bench/run.sh: SCHED_FIFO 1 when we may (background jobs at normal priority cannot take a core
# in the middle of a step; --bench uses no loader threads), else nice -5, else plain
if chrt -f 1 true 2>/dev/null; then PRIO="chrt -f 1"; PRIO_NAME="SCHED_FIFO 1 (chrt -f 1)"
elif nice -n -5 true 2>/dev/null && [ "$(nice -n -5 nice)" -lt "$(nice)" ]; then PRIO="nice -n -5"; PRIO_NAME="nice -5"
else PRIO=""; PRIO_NAME="default priority"; fi

echo "# data-parallel training — $(date -u +%F), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$(mpirun --version | head -1); model $MODEL, global batch $BATCH, --bench $STEPS, best of $ROUNDS; priority: $PRIO_NAME"
echo

# one configuration: its best images/s line and gradient-sum line
best_ips=0; best_bench=""; best_sum=""
run() {
    local out ips
    out=$("$@" 2>&1)
    ips=$(echo "$out" | grep '^bench: model' | sed -E 's/.* ([0-9.]+) images\/s.*/\1/')
    [ -z "$ips" ] && { echo "bench-mpi: no result from: $*" >&2; echo "$out" | tail -5 >&2; return; }
    if awk -v a="$ips" -v b="$best_ips" 'BEGIN { exit !(a > b) }'; then
        best_ips=$ips; best_bench=$(echo "$out" | grep '^bench: model'); best_sum=$(echo "$out" | grep '^bench: [0-9]')
    fi
}
field() { echo "$1" | sed -E "s/$2/\\1/"; }

echo "| processes x threads | transport | img/s | step ms | backward ms | gradient sum alone ms | wait after backward ms, last rank | hidden behind backward | wait, first rank |"
echo "|---|---|---|---|---|---|---|---|---|"
declare -A IPS
for cfg in "1x1:none" "1x2:none" "2x1:vader" "2x1:tcp"; do
    pt=${cfg%%:*}; tr=${cfg##*:}; P=${pt%%x*}; T=${pt##*x}
    best_ips=0; best_bench=""; best_sum=""
    for ((r = 0; r < ROUNDS; r++)); do
        if [ "$P" = 1 ]; then run $PRIO "$TRAIN" --model "$MODEL" --batch "$BATCH" --bench "$STEPS" --threads "$T"
        else run $PRIO $MPIRUN --mca btl "$tr,self" --mca btl_tcp_if_include lo "$TRAIN" --model "$MODEL" --batch "$BATCH" --bench "$STEPS" --threads "$T"
        fi
        sleep 0.5
    done
    [ -z "$best_bench" ] && continue
    IPS[$cfg]=$best_ips
    step=$(field "$best_bench" '.*median step ([0-9.]+) ms.*')
    bwd=$(field "$best_sum" '.*backward ([0-9.]+) ms.*')
    alone=$(field "$best_sum" '.* ([0-9.]+) ms when run alone.*')
    wait=$(field "$best_sum" '.* ([0-9.]+) ms of waiting.*')
    wait1=$(field "$best_sum" '.* ([0-9.]+) ms on the first.*')
    hidden=$(field "$best_sum" '.*\(([0-9]+ %) hidden.*')
    grad_mb=$(field "$best_sum" '.*gradient sum of ([0-9.]+) MB.*')
    [ "$P" = 1 ] && { alone="—"; wait="—"; wait1="—"; hidden="—"; }
    [ "$pt" = "1x1" ] && { STEP1=$step; BWD1=$bwd; }
    echo "| $P x $T | ${tr/none/—} | $best_ips | $step | $bwd | $alone | $wait | $hidden | $wait1 |"
done
echo
for tr in vader tcp; do
    [ -n "${IPS[2x1:$tr]:-}" ] && [ -n "${IPS[1x1:none]:-}" ] &&
        awk -v a="${IPS[2x1:$tr]}" -v b="${IPS[1x1:none]}" -v t="$tr" \
            'BEGIN { printf "scaling efficiency over %s: %.1f / (2 x %.1f) = %.3f\n", t, a, b, a / (2 * b) }'
done
[ -n "${IPS[1x2:none]:-}" ] && [ -n "${IPS[1x1:none]:-}" ] &&
    awk -v a="${IPS[1x2:none]}" -v b="${IPS[1x1:none]}" 'BEGIN { printf "for comparison, 2 threads in one process: %.3f\n", a / (2 * b) }'
echo

# ---- the model: N nodes, each as this machine running one process (the faster of the 1 x 1 and
# 1 x 2 rows), gradient G from the runs above
STEPN=$(awk -v b="$BATCH" -v a="${IPS[1x1:none]:-0}" -v c="${IPS[1x2:none]:-0}" 'BEGIN { m = a > c ? a : c; if (m > 0) printf "%.1f", 1000 * b / m }')
echo "Model: gradient ${grad_mb:-?} MB, node step ${STEPN} ms (backward taken as ${BWD1:-?}/${STEP1:-?} of it, from the 1 x 1 row), ${ALPHA_US} us per ring hop"
echo
model_table() {   # $1: node step ms
echo "| nodes | 10 Gb/s: sum ms / buckets (MB each) / efficiency | 25 Gb/s | 100 Gb/s |"
echo "|---|---|---|---|"
for N in 4 8 16 32 64; do
    awk -v N="$N" -v G="${grad_mb:-0}" -v step="$1" -v bwd1="${BWD1:-0}" -v step1="${STEP1:-1}" -v a="$ALPHA_US" 'BEGIN {
        Tb = step * bwd1 / step1; row = "| " N " |"
        split("10 25 100", bw, " ")
        for (i = 1; i <= 3; i++) {
            Bps = bw[i] * 1e9 / 8; best = 1e99; bk = 1
            bw_ms = 1e3 * 2 * (N - 1) / N * G * 1e6 / Bps; hop_ms = 2 * (N - 1) * a / 1e3
            for (k = 1; k <= 128; k++) {
                Ts = bw_ms + k * hop_ms; last = bw_ms / k + hop_ms
                w[k] = Ts - Tb; if (last > w[k]) w[k] = last
                if (k == 1 || w[k] < best) best = w[k]
            }
            for (k = 1; w[k] > best + 0.002 * step; k++) ;   # the fewest buckets within 0.2 % of a step of the best
            bk = k; bTs = bw_ms + k * hop_ms; best = w[k]
            row = row sprintf(" %.0f / %d (%.1f) / %.2f |", bTs, bk, G / bk, step / (step + best))
        }
        print row
    }'
done
}
model_table "$STEPN"
if [ -n "${FAST_NODE_MS:-}" ]; then
    echo; echo "The same gradient on nodes that compute a step in $FAST_NODE_MS ms:"; echo
    model_table "$FAST_NODE_MS"
fi
