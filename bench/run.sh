#!/usr/bin/env bash
# run.sh — `make bench`: vitgrad's training speed against PyTorch's on the four presets (FP32 and
# bf16), the machine's ceilings (FP32 FMA, vdpbf16ps, AMX), the GEMM tables (FP32 against OpenBLAS,
# bf16 against FP32 and against oneDNN), then where vitgrad's step goes (./train --profile). Not a
# test; prints Markdown tables for docs/benchmarks.md.
#
#   bash bench/run.sh [BUILD_DIR]        (make bench builds ./train and BUILD_DIR/gemm_bench first;
#                                         the bf16gemm and dnnl parts make their programs themselves)
#   e.g. PARTS="amx dnnl" GEMM_REPS=1 GEMM_USE="qkv forward" PEAK_RUNS=1 bash bench/run.sh   (a quick look)
#
# Environment knobs: PARTS (which sections, default "fp32 amp torch2 isa amx gemm bf16gemm dnnl
# profile"), PRESETS (default "vit-tiny-cifar:4 vit-micro-cifar:6 vit-mnist:10 vit-tiny-in64:4": preset:timed
# steps), ROUNDS (alternating rounds per row, default 2),
# GEMM_REPS (rounds per GEMM row, default 3), GEMM_USE (the dnnl part times only the shapes whose
# use contains it, e.g. "qkv forward"; default all), GEMM_PRESETS (the bf16gemm part's shapes:
# "tiny" vit-tiny-cifar's six, "micro" all twelve of vit-micro-cifar under make train's patch
# dropout; default "tiny micro"), PEAK_RUNS (runs of each ceiling program per
# measurement, default 5), PYTHON (default /usr/bin/python3), TRAIN (default ./train; e.g. an older
# binary to compare), TORCH2_VENV (the torch2 part's venv, default ../.venv-torch2: beside the
# repository, never in it), TORCH2_BASE_PYTHON (the Python that makes it, default /usr/bin/python3),
# ISA_LEVELS (the isa part times only the levels it names, e.g. "generic avx2"; default all this
# CPU runs). VG_BF16_GEMM, when set, picks vitgrad's bf16 backend for every part.
#
# Parts: fp32 (./train vs PyTorch), amp (--amp vs PyTorch autocast bf16), amx (the ceilings: FP32
# FMA, vdpbf16ps and AMX tdpbf16ps, bench/amx_peak.c; it says "amx_peak: skipped: <why>" without
# AMX), gemm (vg_gemm vs OpenBLAS, bench/gemm_bench.c), bf16gemm (vg_gemm_bf16 vs vg_gemm,
# bench/bf16_gemm_probe.c, with the bf16 backend named), dnnl (vg_gemm_bf16 vs oneDNN's bf16
# matmul, bench/dnnl_gemm.c; skipped, saying so, without libdnnl-dev), profile (./train --profile),
# torch2 (./train and ./train --amp vs PyPI's PyTorch 2.x with timm's VisionTransformer, eager and
# torch.compile, FP32 and bf16 autocast: bench/timm_vit_bench.py in TORCH2_VENV, which this part
# makes with pip when it is missing — PyPI's x86-64 Linux torch is the CUDA build, ~5.5 GB, a few
# minutes; make test never needs it; a torch.compile failure is printed once and its column left
# empty), isa (the FP32 step at every kernel level this CPU runs, VG_ISA=generic … its best, each
# against the FMA ceiling of its vector width: bench/fma_peak.c 128 (SSE mul+add), 256, 512).
#
# Every GEMM row these parts measure is held against its ceiling measured in the same run, at the
# same thread count: an FP32 GEMM against bench/fma_peak.c, a bf16 GEMM against the ceiling of the
# backend that ran it (amx: bench/amx_peak.c; vdpbf16ps: bench/bf16_peak.c; fp32 and rounded: the
# FMA ceiling). A row below half of it gets a line "WARNING: <what>, <kernel>: X GFLOP/s, below
# half of <ceiling> Y" — a busy core, a kernel choice gone wrong, or a regression.
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
PARTS=${PARTS:-fp32 amp torch2 isa amx gemm bf16gemm dnnl profile}
PRESETS=${PRESETS:-vit-tiny-cifar:4 vit-micro-cifar:6 vit-mnist:10 vit-tiny-in64:4}
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
GEMM_REPS=${GEMM_REPS:-3}
GEMM_USE=${GEMM_USE:-}
GEMM_PRESETS=${GEMM_PRESETS:-tiny micro}
PEAK_RUNS=${PEAK_RUNS:-5}
PYTHON=${PYTHON:-/usr/bin/python3}
TRAIN=${TRAIN:-./train}
TORCH2_VENV=${TORCH2_VENV:-../.venv-torch2}
TORCH2_BASE_PYTHON=${TORCH2_BASE_PYTHON:-/usr/bin/python3}
cd "$(dirname "$0")/.."

if chrt -f 1 true 2>/dev/null; then PRIO="chrt -f 1"; PRIO_NAME="SCHED_FIFO 1 (chrt -f 1)"
elif nice -n -5 true 2>/dev/null && [ "$(nice -n -5 nice)" -lt "$(nice)" ]; then PRIO="nice -n -5"; PRIO_NAME="nice -5"
else PRIO=""; PRIO_NAME="default priority"; fi

# ---- the FMA ceiling
if [ ! -x "$B/fma_peak" ] || [ bench/fma_peak.c -nt "$B/fma_peak" ] || [ bench/peak_run.h -nt "$B/fma_peak" ]; then
    gcc -std=c11 -O2 -fopenmp -Wall -Wextra bench/fma_peak.c -o "$B/fma_peak" || exit 1   # baseline flags: each width has its target
fi
# the best of three runs, each thread on its own core (one run of the 2-thread loop once put both
# threads on one core and reported half the ceiling)
PEAKS=$(for i in 1 2 3; do OMP_PROC_BIND=spread OMP_PLACES=cores $PRIO "$B/fma_peak" 2 "$PEAK_RUNS"; done)
PEAK1=$(echo "$PEAKS" | awk '$3 == 1 && $5 > m {m = $5} END {print m}')
PEAK2=$(echo "$PEAKS" | awk '$3 == 2 && $5 > m {m = $5} END {print m}')
VEC=$(echo "$PEAKS" | head -1 | sed -E 's/.*\((.*)\).*/\1/')

# the bf16 ceilings, measured once, by the first part that needs them (best of three runs as above):
# vdpbf16ps (bench/bf16_peak.c; BPEAK1 = 0 where the build has no AVX512_BF16) and AMX tdpbf16ps
# (bench/amx_peak.c; APEAK1 = 0 and AMX_SKIP its "skipped" line where AMX is not usable)
BPEAK1=""; APEAK1=""; AMX_SKIP=""
bf16_ceiling() {
    [ -n "$BPEAK1" ] && return 0
    if [ ! -x "$B/bf16_peak" ] || [ bench/bf16_peak.c -nt "$B/bf16_peak" ] || [ bench/peak_run.h -nt "$B/bf16_peak" ]; then
        gcc -std=c11 -O2 -march=native -fopenmp -Wall -Wextra bench/bf16_peak.c -o "$B/bf16_peak" || exit 1
    fi
    BPEAKS=$(for i in 1 2 3; do OMP_PROC_BIND=spread OMP_PLACES=cores $PRIO "$B/bf16_peak" 2 "$PEAK_RUNS"; done)
    BPEAK1=$(echo "$BPEAKS" | awk '$3 == 1 && $5 > m {m = $5} END {print m + 0}')
    BPEAK2=$(echo "$BPEAKS" | awk '$3 == 2 && $5 > m {m = $5} END {print m + 0}')
}
amx_ceiling() {
    [ -n "$APEAK1" ] && return 0
    APEAK1=0; APEAK2=0
    if [ ! -x "$B/amx_peak" ] || [ bench/amx_peak.c -nt "$B/amx_peak" ] || [ bench/peak_run.h -nt "$B/amx_peak" ]; then
        if ! gcc -std=c11 -O2 -march=native -fopenmp -Wall -Wextra bench/amx_peak.c -o "$B/amx_peak"; then
            AMX_SKIP="amx_peak: skipped: bench/amx_peak.c did not build (gcc >= 11 and binutils >= 2.36 know the AMX instructions)"
            return 0
        fi
    fi
    APEAKS=$(for i in 1 2 3; do OMP_PROC_BIND=spread OMP_PLACES=cores $PRIO "$B/amx_peak" 2 "$PEAK_RUNS"; done)
    AMX_SKIP=$(echo "$APEAKS" | grep -m1 -E '^amx_peak: ')
    APEAK1=$(echo "$APEAKS" | awk '$1 == "amx_peak" && $3 == 1 && $5 > m {m = $5} END {print m + 0}')
    APEAK2=$(echo "$APEAKS" | awk '$1 == "amx_peak" && $3 == 2 && $5 > m {m = $5} END {print m + 0}')
}
# vitgrad's bf16 backend from its kernel's name (vg_gemm_bf16_kernel)
backend_of_kernel() {
    case "$1" in
    amx*) echo amx ;; *vdpbf16ps*) echo vdpbf16ps ;; bf16-rounded*) echo rounded ;; "FP32 GEMM"*) echo fp32 ;; *) echo unknown ;;
    esac
}
# ceiling_for KIND THREADS: CEIL (GFLOP/s, 0 when none was measured) and CEIL_NAME for a GEMM row run
# by KIND ("fp32" for vg_gemm, else vitgrad's bf16 backend) on THREADS threads (1 or 2)
ceiling_for() {
    local t=$2
    CEIL=0
    case "$1" in
    amx) amx_ceiling; CEIL=$([ "$t" = 1 ] && echo "$APEAK1" || echo "$APEAK2")
         CEIL_NAME="the AMX tdpbf16ps ceiling (bench/amx_peak.c)" ;;
    vdpbf16ps) bf16_ceiling; CEIL=$([ "$t" = 1 ] && echo "$BPEAK1" || echo "$BPEAK2")
         CEIL_NAME="the vdpbf16ps ceiling (bench/bf16_peak.c)" ;;
    fp32|rounded) CEIL=$([ "$t" = 1 ] && echo "$PEAK1" || echo "$PEAK2")
         CEIL_NAME="the FP32 FMA ceiling (bench/fma_peak.c)" ;;
    *) CEIL_NAME="no ceiling (backend $1)" ;;
    esac
    case "$t" in 1|2) ;; *) CEIL=0 ;; esac
}
# warn_if_slow WHAT GFLOPS KIND THREADS: the WARNING line when a GEMM row ran below half its ceiling
warn_if_slow() {
    ceiling_for "$3" "$4"
    awk -v w="$1" -v g="$2" -v c="${CEIL:-0}" -v n="$CEIL_NAME" -v t="$4" 'BEGIN {
        if (c > 0 && g < c / 2)
            printf "WARNING: %s: %.1f GFLOP/s, below half of %s, %.1f GFLOP/s on %d thread%s (%.0f%%)\n",
                   w, g, n, c, t, t == 1 ? "" : "s", 100 * g / c }'
}
# check_rows THR_COL GFLOPS_COL KIND LABEL_COLS PREFIX KERNEL <<< "$table": warn_if_slow for every
# Markdown row of the table whose first cell starts with a digit (columns counted from 1): the
# figure in GFLOPS_COL, measured by KIND on the threads in THR_COL, named by PREFIX, the cells of
# LABEL_COLS (e.g. "1,2,3") and KERNEL. Feed it with <<<, not a pipe: the ceilings it may measure
# on first use must stay measured for the rest of the script.
check_rows() {
    local thr_col=$1 g_col=$2 kind=$3 label_cols=$4 prefix=$5 kernel=$6 line label thr g
    while IFS= read -r line; do
        [[ $line =~ ^\|\ *[0-9] ]] || continue
        thr=$(echo "$line" | awk -F'|' -v c="$thr_col" '{gsub(/ /, "", $(c + 1)); print $(c + 1)}')
        g=$(echo "$line" | awk -F'|' -v c="$g_col" '{gsub(/ /, "", $(c + 1)); print $(c + 1)}')
        label=$(echo "$line" | awk -F'|' -v cs="$label_cols" '{n = split(cs, c, ","); s = "";
            for (i = 1; i <= n; i++) { f = $(c[i] + 1); gsub(/^ +| +$/, "", f); s = s (i > 1 ? " " : "") f }; print s}')
        warn_if_slow "$prefix $label, $thr thread$([ "$thr" = 1 ] || echo s), kernel $kernel" "$g" "$kind" "$thr"
    done
}

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
bf16_ceiling
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

# ---- PyTorch 2.x from PyPI with timm's VisionTransformer (eager and torch.compile, FP32 and bf16
# autocast) against ./train and ./train --amp, in a venv outside the repository
if part torch2; then
echo "## vitgrad vs PyTorch 2.x (PyPI) with timm's VisionTransformer: eager and torch.compile, FP32 and bf16 autocast"
echo
TORCH2_PY="$TORCH2_VENV/bin/python"
if ! "$TORCH2_PY" -c "import torch, timm" 2>/dev/null; then
    # PyPI's only torch wheel for x86-64 Linux is the CUDA build: ~0.5 GB of torch, ~5 GB with its
    # nvidia-* dependencies; the CPU code in it is what runs here
    echo "note: creating $TORCH2_VENV: $TORCH2_BASE_PYTHON -m venv, then pip install torch timm from PyPI (the CUDA build, ~5.5 GB; minutes; log in $TORCH2_VENV/install.log)"
    T2_T0=$SECONDS; T2_WHY=""
    if [ ! -x "$TORCH2_PY" ] && ! T2_WHY=$("$TORCH2_BASE_PYTHON" -m venv "$TORCH2_VENV" 2>&1); then
        echo "note: $TORCH2_BASE_PYTHON -m venv $TORCH2_VENV failed: $(echo "$T2_WHY" | tail -1)"
    elif "$TORCH2_VENV/bin/pip" install --retries 5 torch timm > "$TORCH2_VENV/install.log" 2>&1; then
        echo "note: $TORCH2_VENV made in $((SECONDS - T2_T0)) s"
    else
        echo "note: pip install torch timm failed after $((SECONDS - T2_T0)) s: $(tail -1 "$TORCH2_VENV/install.log")"
    fi
fi
if ! "$TORCH2_PY" -c "import torch, timm" 2>/dev/null; then
    echo "torch2: skipped: $TORCH2_PY cannot import torch and timm (see $TORCH2_VENV/install.log; remove $TORCH2_VENV to start again)"
else
echo "torch $("$TORCH2_PY" -c 'import torch; print(torch.__version__)' 2>/dev/null), timm $("$TORCH2_PY" -c 'import timm; print(timm.__version__)' 2>/dev/null) ($TORCH2_VENV); vitgrad: $("$TRAIN" --model vit-mnist --bench 1 --batch 8 --threads 1 2>&1 | grep -m1 '^kernels:')"
echo
# one run: torch2_line PRESET THREADS STEPS eager|compile [--amp] → its "timm …" line
torch2_line() {
    local mode=()
    [ "$4" = compile ] && mode=(--compile)
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=$2 OMP_WAIT_POLICY=passive \
        $PRIO "$TORCH2_PY" bench/timm_vit_bench.py "$1" "$2" "$3" 128 "${mode[@]}" ${5:-} 2>&1 | grep -m1 '^timm '
}
T2_COMPILE_ERR=""
echo "| preset | thr | steps | precision | vitgrad img/s | timm eager img/s | ratio | timm compile img/s | ratio |"
echo "|---|---|---|---|---|---|---|---|---|"
for spec in $PRESETS; do
    P=${spec%%:*}; N=${spec##*:}
    for T in 1 2; do
        for prec in fp32 bf16; do
            amp=$([ $prec = bf16 ] && echo --amp)
            v_ips=0; e_ips=0; c_ips=0
            for ((r = 0; r < ROUNDS; r++)); do
                line=$($PRIO "$TRAIN" --model "$P" --bench "$N" --threads "$T" $amp 2>&1 | grep '^bench: model')
                v_ips=$(best "$v_ips" "$(ips_of "$line")")
                sleep 0.3
                tl=$(torch2_line "$P" "$T" "$N" eager $amp)
                e_ips=$(best "$e_ips" "$(echo "$tl" | awk '$9 == "images_per_s" {print $10}')")
                sleep 0.3
                if [ -z "$T2_COMPILE_ERR" ]; then
                    tl=$(torch2_line "$P" "$T" "$N" compile $amp)
                    case "$tl" in
                    *" failed: "*) T2_COMPILE_ERR=$tl ;;
                    "") T2_COMPILE_ERR="timm $P threads $T compile $prec: no output" ;;
                    *) c_ips=$(best "$c_ips" "$(echo "$tl" | awk '$9 == "images_per_s" {print $10}')") ;;
                    esac
                    sleep 0.3
                fi
            done
            awk -v P="$P" -v T="$T" -v N="$N" -v pr="$([ $prec = bf16 ] && echo "bf16 (--amp / autocast)" || echo FP32)" \
                -v vi="$v_ips" -v ei="$e_ips" -v ci="$c_ips" 'BEGIN {
                es = (ei > 0) ? sprintf("%.1f", ei) : "—"; er = (ei > 0) ? sprintf("%.2f", vi / ei) : "—"
                cs = (ci > 0) ? sprintf("%.1f", ci) : "—"; cr = (ci > 0) ? sprintf("%.2f", vi / ci) : "—"
                printf "| %s | %d | %d | %s | %.1f | %s | %s | %s | %s |\n", P, T, N, pr, vi, es, er, cs, cr }'
        done
    done
done
echo
[ -n "$T2_COMPILE_ERR" ] && echo "torch.compile: skipped from the first failure on: $T2_COMPILE_ERR" && echo
echo "ratio = vitgrad / timm images per second (best of the alternating rounds of each: ./train, timm"
echo "eager, timm compiled; each round the median step after 2 warm-up steps, which include"
echo "torch.compile's compilation); batch 128. bf16: ./train --amp against the forward under"
echo "torch.autocast(\"cpu\", dtype=torch.bfloat16). timm computes every token in the last block (compare"
echo "with the fp32 part's \"timm's work\" column)."
echo
fi
fi

# ---- the FP32 step at each kernel level this CPU runs (VG_ISA caps the level), against the FMA
# ceiling of that level's vector width (bench/fma_peak.c WIDTH), both measured here
if part isa; then
echo "## The FP32 step at each kernel level of this CPU (VG_ISA=<level> ./train --bench)"
echo
ISA_BEST=$("$TRAIN" --model vit-mnist --bench 1 --batch 8 --threads 1 2>&1 | sed -nE 's/^kernels: .*\(this CPU: ([a-z0-9]+)\).*/\1/p' | head -1)
case "$(uname -m)" in aarch64) ISA_ORDER="generic neon" ;; *) ISA_ORDER="generic avx2 avx512 avx512bf16 amx" ;; esac
if [ -z "$ISA_BEST" ]; then
    echo "isa: skipped: $TRAIN printed no \"kernels: … (this CPU: …)\" line"
else
# the levels from generic up to this CPU's best (ISA_LEVELS keeps only those it names), each
# timed only when its FP32 kernels (GEMM and rows) differ from the level below's
ISA_RUN=(); ISA_SAME=(); declare -A ISA_KERN=(); prev_kern=""
for L in $ISA_ORDER; do
    if [ -z "${ISA_LEVELS:-}" ] || [[ " $ISA_LEVELS " == *" $L "* ]]; then
        k=$(VG_ISA=$L "$TRAIN" --model vit-mnist --bench 1 --batch 8 --threads 1 2>&1 | sed -nE 's/^kernels: [^;]*; ([^;]*).*/\1/p' | head -1)
        if [ -n "$k" ] && [ "$k" = "$prev_kern" ]; then ISA_SAME+=("$L")
        else ISA_RUN+=("$L"); ISA_KERN[$L]=$k; fi
        prev_kern=$k
    fi
    [ "$L" = "$ISA_BEST" ] && break
done
# the ceiling of each width, best of three runs as the FMA peak above (the widest is that one)
declare -A ISA_PK1=() ISA_PK2=()
isa_width() { case "$1" in generic) echo 128 ;; avx2) echo 256 ;; avx512|avx512bf16|amx) echo 512 ;; *) echo "" ;; esac; }
for L in "${ISA_RUN[@]}"; do
    W=$(isa_width "$L")
    { [ -z "$W" ] || [ -n "${ISA_PK1[$W]:-}" ]; } && continue
    if [ "$VEC" = "$W-bit vectors" ]; then ISA_PK1[$W]=$PEAK1; ISA_PK2[$W]=$PEAK2; continue; fi
    WP=$(for i in 1 2 3; do OMP_PROC_BIND=spread OMP_PLACES=cores $PRIO "$B/fma_peak" 2 "$PEAK_RUNS" "$W"; done)
    ISA_PK1[$W]=$(echo "$WP" | awk '$3 == 1 && $5 > m {m = $5} END {print m + 0}')
    ISA_PK2[$W]=$(echo "$WP" | awk '$3 == 2 && $5 > m {m = $5} END {print m + 0}')
done
ISA_CEILS=""
for W in 128 256 512; do
    [ -n "${ISA_PK1[$W]:-}" ] && ISA_CEILS="$ISA_CEILS${ISA_CEILS:+; }$W-bit$([ $W = 128 ] && echo " SSE mul+add") ${ISA_PK1[$W]} / ${ISA_PK2[$W]}"
done
echo "FMA ceilings (bench/fma_peak.c WIDTH, GFLOP/s on 1 thread / 2): $ISA_CEILS"
for L in "${ISA_RUN[@]}"; do echo "- $L: ${ISA_KERN[$L]}"; done
[ ${#ISA_SAME[@]} -gt 0 ] && echo "- ${ISA_SAME[*]}: the same FP32 kernels as the level below (not timed again)"
echo
echo "| preset | thr | steps | level | img/s | GFLOP/s | FMA ceiling GFLOP/s | % of ceiling | × generic |"
echo "|---|---|---|---|---|---|---|---|---|"
for spec in $PRESETS; do
    P=${spec%%:*}; N=${spec##*:}
    for T in 1 2; do
        declare -A ips=(); gf_img=0
        for L in "${ISA_RUN[@]}"; do ips[$L]=0; done
        for ((r = 0; r < ROUNDS; r++)); do
            for L in "${ISA_RUN[@]}"; do      # the levels alternate within each round
                line=$(VG_ISA=$L $PRIO "$TRAIN" --model "$P" --bench "$N" --threads "$T" 2>&1 | grep '^bench: model')
                ips[$L]=$(best "${ips[$L]}" "$(ips_of "$line")")
                gf_img=$(echo "$line" | sed -E 's/.*\(([0-9.]+) GFLOP per image.*/\1/')
                sleep 0.3
            done
        done
        for L in "${ISA_RUN[@]}"; do
            W=$(isa_width "$L")
            pk=$([ "$T" = 1 ] && echo "${ISA_PK1[$W]:-0}" || echo "${ISA_PK2[$W]:-0}")
            awk -v P="$P" -v T="$T" -v N="$N" -v L="$L" -v W="$W" -v vi="${ips[$L]}" -v g="$gf_img" -v pk="$pk" \
                -v base="${ips[generic]:-0}" 'BEGIN {
                ps = (pk > 0) ? sprintf("%.1f (%s-bit)", pk, W) : "—"; sh = (pk > 0) ? sprintf("%.0f%%", 100 * vi * g / pk) : "—"
                xs = (base > 0) ? sprintf("%.2f", vi / base) : "—"
                printf "| %s | %d | %d | %s | %.1f | %.1f | %s | %s | %s |\n", P, T, N, L, vi, vi * g, ps, sh, xs }'
        done
        unset ips
    done
done
echo
echo "Each level's ./train runs with VG_ISA=<level> (FP32, batch 128); the levels alternate within each"
echo "round (ROUNDS=$ROUNDS) and each row keeps its best round. % of ceiling = GFLOP/s / the FMA ceiling of the"
echo "level's vector width on that many threads: 128-bit SSE mul+add for generic (baseline x86-64 has"
echo "no FMA), ymm FMA for avx2, zmm FMA for avx512 and above."
echo
fi
fi

# ---- the ceilings side by side: FP32 FMA, vdpbf16ps, AMX tdpbf16ps
if part amx; then
bf16_ceiling; amx_ceiling
echo "## Ceilings: FP32 FMA, bf16 vdpbf16ps, AMX bf16 tdpbf16ps (GFLOP/s, best of 3 × $PEAK_RUNS runs, one thread per core)"
echo
echo "| ceiling | program | 1 thread | 2 threads |"
echo "|---|---|---|---|"
echo "| FP32 FMA ($VEC) | bench/fma_peak.c | $PEAK1 | $PEAK2 |"
if [ "$BPEAK1" = 0 ]; then echo "| bf16 vdpbf16ps | bench/bf16_peak.c | — | — |"
else echo "| bf16 vdpbf16ps (512-bit) | bench/bf16_peak.c | $BPEAK1 | $BPEAK2 |"; fi
if [ "$APEAK1" = 0 ]; then echo "| AMX bf16 tdpbf16ps | bench/amx_peak.c | — | — |"
else echo "| AMX bf16 tdpbf16ps (2x2 tiles of 16x16) | bench/amx_peak.c | $APEAK1 | $APEAK2 |"; fi
echo
[ -n "$AMX_SKIP" ] && echo "$AMX_SKIP"
[ "$BPEAK1" = 0 ] && echo "$BPEAKS" | head -1
echo
fi

# ---- GEMM
if part gemm && [ -x "$B/gemm_bench" ]; then
    GEMM_OUT=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "${OB_FORCE[@]}" $PRIO "$B/gemm_bench" "$GEMM_REPS")
    echo "$GEMM_OUT"
    # | shape | op | thr | vitgrad | OpenBLAS | ratio | use | max rel diff |
    check_rows 3 4 fp32 "7,1,2" "FP32 GEMM" "$(echo "$GEMM_OUT" | sed -nE "s/.*vitgrad's (.*) micro-kernel.*/\1/p")" <<< "$GEMM_OUT"
fi

# ---- vitgrad's bf16 GEMM against its FP32 GEMM (bench/bf16_gemm_probe.c)
if part bf16gemm; then
echo
echo "## vitgrad's bf16 GEMM (vg_gemm_bf16) vs its FP32 GEMM: bench/bf16_gemm_probe.c, median of $GEMM_REPS rounds"
echo
if make --no-print-directory -s B="$B" "$B/bf16_gemm_probe" >&2; then
    for GP in $GEMM_PRESETS; do
    PROBE_OUT=$($PRIO "$B/bf16_gemm_probe" "$GEMM_REPS" "$GP")
    PROBE_KERNEL=$(echo "$PROBE_OUT" | sed -nE 's/^bf16 GEMM kernel: (.*); FP32: .*/\1/p')
    PROBE_FP32=$(echo "$PROBE_OUT" | sed -nE 's/^bf16 GEMM kernel: .*; FP32: (.*)/\1/p')
    PROBE_BACKEND=$(backend_of_kernel "$PROBE_KERNEL")
    echo "vit-$GP-cifar's Linear products; vitgrad bf16 GEMM backend: $PROBE_BACKEND ($([ -n "${VG_BF16_GEMM:-}" ] && echo "VG_BF16_GEMM=$VG_BF16_GEMM" || echo auto)), kernel: $PROBE_KERNEL"
    echo "$PROBE_OUT"
    echo
    # | shape | op | use | thr | FP32 | bf16 | bf16 / FP32 |
    check_rows 4 5 fp32 "3,1,2" "FP32 GEMM" "$PROBE_FP32" <<< "$PROBE_OUT"
    check_rows 4 6 "$PROBE_BACKEND" "3,1,2" "bf16 GEMM ($PROBE_BACKEND)" "$PROBE_KERNEL" <<< "$PROBE_OUT"
    done
else
    echo "bf16gemm: skipped: $B/bf16_gemm_probe did not build (make $B/bf16_gemm_probe)"
fi
echo
fi

# ---- vitgrad's bf16 GEMM against oneDNN's bf16 matmul (bench/dnnl_gemm.c), 1 and 2 threads
if part dnnl; then
echo
echo "## vitgrad's bf16 GEMM vs oneDNN's bf16 matmul: bench/dnnl_gemm.c, median of $GEMM_REPS rounds"
echo
if [ ! -f /usr/include/oneapi/dnnl/dnnl.h ]; then
    echo "dnnl: skipped: oneDNN is not installed (apt-get install libdnnl-dev)"
elif ! make --no-print-directory -s B="$B" "$B/dnnl_gemm" >&2; then
    echo "dnnl: skipped: $B/dnnl_gemm did not build (make $B/dnnl_gemm)"
else
    DNNL_ALL=""
    for T in 1 2; do
        DNNL_OUT=$(OMP_NUM_THREADS=$T $PRIO "$B/dnnl_gemm" "$GEMM_REPS" ${GEMM_USE:+"$GEMM_USE"})
        if [ "$T" = 1 ]; then echo "$DNNL_OUT"; else echo "$DNNL_OUT" | grep -E '^\| *[0-9]|^dnnl_gemm:'; fi
        DNNL_ALL="$DNNL_ALL$DNNL_OUT"$'\n'
    done
    DNNL_BACKEND=$(echo "$DNNL_ALL" | sed -nE 's/^vitgrad bf16 backend: ([^ ]*) — .*/\1/p' | head -1)
    DNNL_KERNEL=$(echo "$DNNL_ALL" | sed -nE 's/^vitgrad bf16 backend: [^ ]* — (.*) \((auto|chosen).*/\1/p' | head -1)
    DNNL_FP32=$(echo "$DNNL_ALL" | sed -nE 's/^vitgrad bf16 backend: .*; FP32: (.*)/\1/p' | head -1)
    echo
    # | shape | op | use | thr | vitgrad bf16 | oneDNN | oneDNN + reorders | ratio | ratio | vitgrad FP32 | kernel | diff |
    check_rows 4 5 "$DNNL_BACKEND" "3,1,2" "bf16 GEMM ($DNNL_BACKEND)" "$DNNL_KERNEL" <<< "$DNNL_ALL"
    check_rows 4 10 fp32 "3,1,2" "FP32 GEMM" "$DNNL_FP32" <<< "$DNNL_ALL"
fi
echo
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
