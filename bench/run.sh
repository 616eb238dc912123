#!/usr/bin/env bash
# run.sh — `make bench`: vitgrad's training speed against PyTorch's on the four presets, then the
# GEMM table against OpenBLAS, then where vitgrad's step goes (./train --profile). Not a test;
# prints Markdown tables for docs/benchmarks.md.
#
#   bash bench/run.sh [BUILD_DIR]        (make bench builds ./train and BUILD_DIR/gemm_bench first)
#
# Environment knobs: PARTS (which sections, default "fp32 amp gemm profile"), PRESETS (default
# "vit-tiny-cifar:4 vit-micro-cifar:6 vit-mnist:10 vit-tiny-in64:4": preset:timed steps),
# ROUNDS (alternating rounds per row, default 2),
# GEMM_REPS (rounds per GEMM row, default 3), PYTHON (default /usr/bin/python3), TRAIN (default
# ./train; e.g. an older binary to compare).
#
# Fairness: the two programs alternate (vitgrad, PyTorch, vitgrad, PyTorch …) and each row keeps
# the best round of each side. Both run with the same priority: SCHED_FIFO 1 (`chrt -f 1`) when we
# may use it, so a background job at normal or low priority cannot take a core in the middle of a
# step (with 2 threads one descheduled thread stalls the other at every barrier); otherwise
# `nice -n -5`, otherwise plain. PyTorch runs at its best (../shared/PERF_NOTES.md): OpenBLAS with
# OPENBLAS_CORETYPE/L2_SIZE unset (they force older kernels; unless OpenBLAS mistakes the CPU for
# a generic one, see OB_FORCE below), OPENBLAS_NUM_THREADS = torch threads
# (one pool, no oversubscription), OPENBLAS_THREAD_TIMEOUT=4 and OMP_WAIT_POLICY=passive (pools
# that spin fight over the cores), and glibc's malloc keeping freed memory (mallopt in
# bench/pytorch_vit_bench.py, before torch is imported).
#
# Then the same for bf16 mixed precision: ./train --amp against its own FP32 step and against
# PyTorch under torch.autocast("cpu", dtype=torch.bfloat16), with the vdpbf16ps ceiling
# (bench/bf16_peak.c) where the CPU has AVX512_BF16.
set -u
B=${1:-build}
ROUNDS=${ROUNDS:-2}
PARTS=${PARTS:-fp32 amp gemm profile}
PRESETS=${PRESETS:-vit-tiny-cifar:4 vit-micro-cifar:6 vit-mnist:10 vit-tiny-in64:4}
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
GEMM_REPS=${GEMM_REPS:-3}
PYTHON=${PYTHON:-/usr/bin/python3}
TRAIN=${TRAIN:-./train}
cd "$(dirname "$0")/.."

if chrt -f 1 true 2>/dev/null; then PRIO="chrt -f 1"; PRIO_NAME="SCHED_FIFO 1 (chrt -f 1)"
elif nice -n -5 true 2>/dev/null && [ "$(nice -n -5 nice)" -lt "$(nice)" ]; then PRIO="nice -n -5"; PRIO_NAME="nice -5"
else PRIO=""; PRIO_NAME="default priority"; fi

# ---- the FMA ceiling
if [ ! -x "$B/fma_peak" ] || [ bench/fma_peak.c -nt "$B/fma_peak" ] || [ bench/peak_run.h -nt "$B/fma_peak" ]; then
    gcc -std=c11 -O2 -march=native -fopenmp -Wall -Wextra bench/fma_peak.c -o "$B/fma_peak" || exit 1
fi
# the best of three runs, each thread on its own core (one run of the 2-thread loop once put both
# threads on one core and reported half the ceiling)
PEAKS=$(for i in 1 2 3; do OMP_PROC_BIND=spread OMP_PLACES=cores $PRIO "$B/fma_peak" 2; done)
PEAK1=$(echo "$PEAKS" | awk '$3 == 1 && $5 > m {m = $5} END {print m}')
PEAK2=$(echo "$PEAKS" | awk '$3 == 2 && $5 > m {m = $5} END {print m}')
VEC=$(echo "$PEAKS" | head -1 | sed -E 's/.*\((.*)\).*/\1/')

HAVE_TORCH=1
if ! env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$PYTHON" -c "import torch" 2>/dev/null; then
    HAVE_TORCH=0; echo "note: $PYTHON cannot import torch (apt-get install python3-torch libopenblas0): PyTorch columns empty"
fi

echo "# vitgrad vs PyTorch — $(date -u +%F), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
echo "priority: $PRIO_NAME; FMA peak (bench/fma_peak.c, $VEC FMA chains): $PEAK1 GFLOP/s on 1 thread, $PEAK2 on 2"
echo "torch: $([ $HAVE_TORCH = 1 ] && env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$PYTHON" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
echo
best() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; }
ips_of() { echo "$1" | sed -E 's/.* ([0-9.]+) images\/s.*/\1/'; }    # images/s of a "bench: model" line
# OpenBLAS 0.3.21 (Debian 12) does not know every CPU: on an Intel Xeon Emerald Rapids (family 6
# model 207) it picks its generic "Prescott" (SSE3) kernels, and PyTorch's FP32 steps are 3.4x
# slower than with its AVX-512 ones (measured: vit-tiny-cifar, 1 thread, 21.7 vs 74.4 images/s).
# Then name the closest core it knows: Cooperlake (AVX-512 + BF16) or SkylakeX (AVX-512).
OB_CORE=$([ $HAVE_TORCH = 1 ] && env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_VERBOSE=2 \
          "$PYTHON" -c "import torch" 2>&1 | sed -n 's/^Core: //p' | head -1)
OB_FORCE=()
if [ "$OB_CORE" = Prescott ] && grep -q avx512f /proc/cpuinfo; then
    OB_FORCE=(OPENBLAS_CORETYPE=$(grep -q avx512_bf16 /proc/cpuinfo && echo Cooperlake || echo SkylakeX))
    echo "note: OpenBLAS takes this CPU for a $OB_CORE; PyTorch runs with ${OB_FORCE[0]}"
fi
# one PyTorch run at its best: torch_line PRESET THREADS STEPS [--amp] → its "pytorch …" line
torch_line() {
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "${OB_FORCE[@]}" OPENBLAS_NUM_THREADS=$2 OMP_NUM_THREADS=$2 \
        OMP_WAIT_POLICY=passive OPENBLAS_THREAD_TIMEOUT=4 \
        $PRIO "$PYTHON" bench/pytorch_vit_bench.py "$@" 2>&1 | grep '^pytorch'
}

if part fp32; then
echo "| preset | thr | steps | vitgrad img/s | PyTorch img/s | ratio | vitgrad, timm's work: img/s | ratio | vitgrad GFLOP/s | % of peak | PyTorch GFLOP/s | vitgrad RSS MiB | PyTorch RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"


for spec in $PRESETS; do
    P=${spec%%:*}; N=${spec##*:}
    R=$ROUNDS
    for T in 1 2; do
        v_ips=0; f_ips=0; p_ips=0; v_rss=0; p_rss=0; gf_img=0; gf_timm=0
        for ((r = 0; r < R; r++)); do
            line=$($PRIO "$TRAIN" --model "$P" --bench "$N" --threads "$T" 2>&1 | grep '^bench: model')
            ips=$(ips_of "$line")
            gf_img=$(echo "$line" | sed -E 's/.*\(([0-9.]+) GFLOP per image.*/\1/')
            gf_timm=$(echo "$line" | sed -E "s/.*timm's model ([0-9.]+)\\).*/\\1/")
            rss=$(echo "$line" | sed -E 's/.*peak RSS ([0-9]+) MiB.*/\1/')
            v_ips=$(best "$v_ips" "$ips"); v_rss=$(best "$v_rss" "$rss")
            sleep 0.3
            line=$($PRIO "$TRAIN" --model "$P" --bench "$N" --threads "$T" --full-last-block 2>&1 | grep '^bench: model')
            f_ips=$(best "$f_ips" "$(ips_of "$line")")
            sleep 0.3
            if [ $HAVE_TORCH = 1 ]; then
                pl=$(torch_line "$P" "$T" "$N")
                p_ips=$(best "$p_ips" "$(echo "$pl" | awk '{print $8}')")
                p_rss=$(best "$p_rss" "$(echo "$pl" | awk '{print $10}')")
                sleep 0.3
            fi
        done
        peak=$([ "$T" = 1 ] && echo "$PEAK1" || echo "$PEAK2")
        awk -v P="$P" -v T="$T" -v N="$N" -v vi="$v_ips" -v fi="$f_ips" -v pi="$p_ips" -v g="$gf_img" \
            -v gt="$gf_timm" -v pk="$peak" -v vr="$v_rss" -v pr="$p_rss" 'BEGIN {
            ps = (pi > 0) ? sprintf("%.1f", pi) : "—"; rs = (pi > 0) ? sprintf("%.2f", vi / pi) : "—"
            fs = (pi > 0) ? sprintf("%.2f", fi / pi) : "—"
            pg = (pi > 0) ? sprintf("%.1f", pi * gt) : "—"; prs = (pr > 0) ? sprintf("%d", pr) : "—"
            printf "| %s | %d | %d | %.1f | %s | %s | %.1f | %s | %.1f | %.0f%% | %s | %d | %s |\n", P, T, N, vi, ps,
                   rs, fi, fs, vi * g, 100 * vi * g / pk, pg, vr, prs }'
    done
done
echo
echo "ratio = vitgrad / PyTorch images per second (best of the alternating rounds of each, each round"
echo "the median step after 2 warm-up steps). vitgrad's last block computes the class token alone (all"
echo "the logits read); \"timm's work\" is ./train --full-last-block, every token as PyTorch computes"
echo "it. GFLOP/s = images/s × the FLOP per image per training step each program performs (forward +"
echo "backward of every matmul, attention and conv); % of peak = vitgrad GFLOP/s / the FMA peak above"
echo "for that thread count; batch 128."
echo
fi

# ---- bf16 mixed precision: ./train --amp vs its FP32 step and vs PyTorch's torch.autocast bf16
if part amp; then
if [ ! -x "$B/bf16_peak" ] || [ bench/bf16_peak.c -nt "$B/bf16_peak" ] || [ bench/peak_run.h -nt "$B/bf16_peak" ]; then
    gcc -std=c11 -O2 -march=native -fopenmp -Wall -Wextra bench/bf16_peak.c -o "$B/bf16_peak" || exit 1
fi
BPEAKS=$(for i in 1 2 3; do OMP_PROC_BIND=spread OMP_PLACES=cores $PRIO "$B/bf16_peak" 2; done)
BPEAK1=$(echo "$BPEAKS" | awk '$3 == 1 && $5 > m {m = $5} END {print m + 0}')
BPEAK2=$(echo "$BPEAKS" | awk '$3 == 2 && $5 > m {m = $5} END {print m + 0}')
KERNEL=$("$TRAIN" --model vit-mnist --bench 1 --threads 1 --amp 2>&1 | grep '^bench: model' | sed -E 's/.*bf16 GEMM: ([^)]*)\).*/\1/')
echo "## bf16 mixed precision: ./train --amp vs PyTorch torch.autocast(\"cpu\", dtype=torch.bfloat16)"
echo
if [ "$BPEAK1" = 0 ]; then echo "bf16 peak: $(echo "$BPEAKS" | head -1)"
else echo "bf16 peak (bench/bf16_peak.c, vdpbf16ps chains): $BPEAK1 GFLOP/s on 1 thread, $BPEAK2 on 2 (FP32 FMA: $PEAK1, $PEAK2)"; fi
echo "vitgrad's bf16 GEMM kernel: $KERNEL"
echo
echo "| preset | thr | steps | --amp img/s | FP32 img/s | --amp / FP32 | PyTorch bf16 img/s | --amp / PyTorch bf16 | PyTorch FP32 img/s | --amp GFLOP/s | % of bf16 peak |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for spec in $PRESETS; do
    P=${spec%%:*}; N=${spec##*:}
    for T in 1 2; do
        a_ips=0; v_ips=0; pa_ips=0; pf_ips=0; gf_img=0
        for ((r = 0; r < ROUNDS; r++)); do
            line=$($PRIO "$TRAIN" --model "$P" --bench "$N" --threads "$T" --amp 2>&1 | grep '^bench: model')
            a_ips=$(best "$a_ips" "$(ips_of "$line")")
            gf_img=$(echo "$line" | sed -E 's/.*\(([0-9.]+) GFLOP per image.*/\1/')
            sleep 0.3
            line=$($PRIO "$TRAIN" --model "$P" --bench "$N" --threads "$T" 2>&1 | grep '^bench: model')
            v_ips=$(best "$v_ips" "$(ips_of "$line")")
            sleep 0.3
            if [ $HAVE_TORCH = 1 ]; then
                pa_ips=$(best "$pa_ips" "$(torch_line "$P" "$T" "$N" --amp | awk '{print $8}')")
                sleep 0.3
                pf_ips=$(best "$pf_ips" "$(torch_line "$P" "$T" "$N" | awk '{print $8}')")
                sleep 0.3
            fi
        done
        bpk=$([ "$T" = 1 ] && echo "$BPEAK1" || echo "$BPEAK2")
        awk -v P="$P" -v T="$T" -v N="$N" -v ai="$a_ips" -v vi="$v_ips" -v pa="$pa_ips" -v pf="$pf_ips" \
            -v g="$gf_img" -v pk="$bpk" 'BEGIN {
            pas = (pa > 0) ? sprintf("%.1f", pa) : "—"; ras = (pa > 0) ? sprintf("%.2f", ai / pa) : "—"
            pfs = (pf > 0) ? sprintf("%.1f", pf) : "—"; sh = (pk > 0) ? sprintf("%.0f%%", 100 * ai * g / pk) : "—"
            printf "| %s | %d | %d | %.1f | %.1f | %.2f | %s | %s | %s | %.1f | %s |\n", P, T, N, ai, vi,
                   ai / vi, pas, ras, pfs, ai * g, sh }'
    done
done
echo
echo "Each round runs ./train --amp, ./train, PyTorch under autocast, PyTorch FP32, in turn; each column"
echo "keeps its best round. --amp GFLOP/s counts the same FLOP per image as FP32; % of bf16 peak divides"
echo "it by the vdpbf16ps ceiling above for that thread count; batch 128."
echo
fi

# ---- GEMM
if part gemm && [ -x "$B/gemm_bench" ]; then
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "${OB_FORCE[@]}" $PRIO "$B/gemm_bench" "$GEMM_REPS"
fi

# ---- where vitgrad's step goes (wall clock, by op: ./train --profile)
if part profile; then
echo
echo "## Where vitgrad's training step goes: vit-tiny-cifar, 2 threads, batch 128"
echo
echo '```'
$PRIO "$TRAIN" --model vit-tiny-cifar --bench 6 --threads 2 --profile 2>&1
echo '```'
fi
