#!/usr/bin/env bash
# Runs every test program, echoes their output, and sums their closing "N passed, N failed" lines.
B=${1:-build}
BIN=${2:-.}                    # where gradcheck, inspect and train are (make asan: its build dir)
export VG_BIN="$BIN"           # tests that run a program find it here
export VG_TRAIN_MPI="$B/train-mpi"   # tests/test_mpi.c: ./train built with MPI (skipped when absent)
# VG_EXEC_WRAPPER: what the programs run under when they are another architecture's (make
# test-arm64: qemu-aarch64); the tests' runner (tests/test_main.c) puts it before ./train etc. too
X=${VG_EXEC_WRAPPER:-}
export VG_TRAIN_FAULTS="$B/train-faults"   # ./train with the test faults of base/fault.h
total_p=0; total_f=0; total_s=0; status=0
run() {
    local label=$1; shift
    echo "== $label: $*"
    local out; out=$($X "$@" 2>&1); local rc=$?
    echo "$out"
    local line; line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    if [ -z "$line" ]; then
        echo "!! $label printed no summary (exit $rc)"; total_f=$((total_f + 1)); status=1; return
    fi
    local p f s
    p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
    f=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
    s=$(echo "$line" | grep -oE '[0-9]+ skipped' | grep -oE '[0-9]+'); s=${s:-0}
    total_p=$((total_p + p)); total_f=$((total_f + f)); total_s=$((total_s + s))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then echo "!! $label exited $rc"; total_f=$((total_f + 1)); fi
}
run "unit and parity tests (float32)" "$B/run_tests"
# The in-process tests again with the SIMD kernels' intrinsics emulated in C (gemm/emulate/; the
# binary is built for AVX2+FMA): the AVX-512 FP32 GEMM, the vdpbf16ps kernel and the AMX tile
# kernel, so each runs on any x86-64 machine with AVX2. On a CPU with AVX-512 the FP32 kernel ran
# natively above: then only the bf16 tests run here (auto picks the emulated AMX tiles, and
# tests/test_gemm_bf16.c runs every backend). The tests that run ./train or ./inspect are left out.
levels=$($X "$B/run_tests" --isa-levels 2>/dev/null)
best=$(echo "$levels" | tail -n 1)
if [ -x "$B/run_tests_emulated" ]; then
    emu_kernel=$("$B/run_tests_emulated" --gemm-kernel 2>&1)
    emu_bf16=$("$B/run_tests_emulated" --bf16-kernel 2>&1)
    if echo "$levels" | grep -qx avx512; then
        run "bf16 GEMM and --amp tests (float32), bf16 kernel $emu_bf16" "$B/run_tests_emulated" test_gemm_bf16.c test_amp.c amp_train_step
    elif echo "$levels" | grep -qx avx2; then
        run "GEMM, layer and ViT parity tests (float32), GEMM kernel $emu_kernel, bf16 kernel $emu_bf16" \
            "$B/run_tests_emulated" test_gemm.c test_gemm_bf16.c test_tensor.c test_autograd.c test_nn.c test_vit.c test_alloc.c test_amp.c
    else echo "== emulated AVX-512 and bf16 kernels: not run (emulating them needs AVX2+FMA; this CPU: $best)"; fi
fi
# Every instruction-set level this CPU has below its best, capped with VG_ISA (isa/isa.h): the GEMM,
# layer, ViT and --amp tests and a short training run (./train, stopped and resumed bit for bit) on
# that level's kernels. (The float64 gradcheck library has one level, generic: it runs once, below.)
for lv in $levels; do
    [ "$lv" = "$best" ] && continue
    export VG_ISA=$lv
    run "level $lv (VG_ISA=$lv): GEMM, layers, ViT, --amp, a training run" "$B/run_tests" \
        test_gemm.c test_gemm_bf16.c test_tensor.c test_autograd.c test_nn.c test_pool.c test_vit.c test_amp.c train_resume_is_bit_exact
    unset VG_ISA
done
# The default binary on older CPUs, under Debian's qemu-user: as a Nehalem (SSE4.2, no AVX) it
# must choose the generic kernels, as a Haswell (AVX2+FMA, no AVX-512, no bf16) the avx2 ones and
# FP32 GEMMs for --amp, and run a training step without executing an instruction those CPUs lack
# (qemu raises SIGILL). VG_ISA is dropped for them: they test what the CPU model alone picks.
# Skipped without qemu-x86_64, on other machines, and under ASan.
if [ "$(uname -m)" != x86_64 ] || [ -n "$X" ] || ! command -v qemu-x86_64 >/dev/null 2>&1; then
    echo "== qemu-x86_64 CPU models: skipped (needs qemu-user and an x86-64 build on an x86-64 machine)"; total_s=$((total_s + 1))
elif ldd "$BIN/train" 2>/dev/null | grep -q libasan; then
    echo "== qemu-x86_64 CPU models: skipped under ASan"; total_s=$((total_s + 1))
else
    for m in Nehalem:generic Haswell:avx2; do
        cpu=${m%%:*}; lv=${m#*:}
        echo "== qemu-x86_64 -cpu $cpu $BIN/train --bench 1 --amp"
        q_out=$(env -u VG_ISA qemu-x86_64 -cpu "$cpu" "$BIN/train" --model vit-micro-cifar --bench 1 --batch 2 --threads 1 --amp 2>&1)
        q_rc=$?
        q_out=$(echo "$q_out" | grep -v "TCG doesn't support")
        echo "$q_out"
        if [ "$q_rc" -eq 0 ] && echo "$q_out" | grep -q "kernels: $lv (this CPU: $lv)" && echo "$q_out" | grep -q "FP32 GEMMs" \
           && echo "$q_out" | grep -q "median step"; then
            total_p=$((total_p + 1)); echo "  ok   a $cpu runs the $lv kernels"
        else total_f=$((total_f + 1)); status=1; echo "  FAIL a $cpu: exit $q_rc, or not the $lv kernels"; fi
    done
fi
run "gradcheck (float64)" "$BIN/gradcheck"
# every parser's fuzz harness on its committed seeds, campaign corpus and crash regressions
# (fuzz/README.md), through a plain main(): no clang needed
for h in safetensors checkpoint cifar10 idx imagefolder image_decode; do
    dirs=(fuzz/corpus/$h); [ -d fuzz/regressions/$h ] && dirs+=(fuzz/regressions/$h)
    run "fuzz corpus replay: $h" "$B/fuzz/replay_$h" "${dirs[@]}"
done
# every bench program still builds by the line in its header comment (built, never run); their
# lines name build/, so only the plain `make test` runs this
if [ "$B" = build ]; then run "bench programs build (tests/bench_probes.sh)" bash tests/bench_probes.sh "$B"
else echo "== bench programs: built only by the plain make test (their build lines name build/)"; fi
# the README's example must run and converge
echo "== README example: $B/autograd_example"
ex_out=$($X "$B/autograd_example" 2>&1); echo "$ex_out"
if echo "$ex_out" | grep -q "w = 2.0000, b = -1.0000"; then
    total_p=$((total_p + 1)); echo "  ok   readme example converges"
else total_f=$((total_f + 1)); echo "  FAIL readme example did not converge"; fi
# the docs' quoted outputs, the gradcheck example and the library examples run natively only (not
# under make test-arm64's wrapper, which builds none of them)
if [ -z "$X" ]; then
# the program outputs quoted in the docs, run and compared (tests/tools/docs_check.c; the slow ones and
# those that need a training run: docs/tutorial_assets.sh)
run "docs' quoted outputs" "$B/docs_check" --bin "$BIN" docs/tutorial.md README.md
# vg_gradcheck on a user's function, float64 (examples/gradcheck_example.c): two right rules pass, a wrong one fails
echo "== gradcheck example: $B/gradcheck_example"
if "$B/gradcheck_example"; then total_p=$((total_p + 1)); echo "  ok   gradcheck example"
else total_f=$((total_f + 1)); echo "  FAIL gradcheck example"; fi
# the library examples (examples/*.c, docs/library.md), 30 steps on CIFAR-10: a pass when they
# exit 0 (every training loss finite; the MLP's parameters reload by name) and the loss on their
# fixed evaluation batch (512 test images, no augmentation) is a plain number that went down;
# exit 77 means no CIFAR-10 (CIFAR10_DIR, else ../shared/data): a skip
for ex in mlp_cifar10 cnn_cifar10; do
    args=(--steps 30); [ "$ex" = mlp_cifar10 ] && args+=(--save "$B/mlp_cifar10.safetensors")
    echo "== library example: $B/$ex ${args[*]}"
    ex_out=$("$B/$ex" "${args[@]}" 2>&1); rc=$?; echo "$ex_out"
    if [ "$rc" -eq 77 ]; then total_s=$((total_s + 1)); echo "  skip $ex: no CIFAR-10"; continue; fi
    if [ "$rc" -eq 0 ] && echo "$ex_out" | awk '/^result: eval loss / { n = /^result: eval loss [0-9]+\.[0-9]+ -> [0-9]+\.[0-9]+ / && $6 < $4 } END { exit !n }'; then
        total_p=$((total_p + 1)); echo "  ok   $ex: evaluation loss went down"
    else total_f=$((total_f + 1)); echo "  FAIL $ex (exit $rc): no finite evaluation loss that went down"; fi
done
fi
# ARM64 under Debian's qemu-user: make test cross-builds $VG_ARM64_B (build-arm64/) when
# aarch64-linux-gnu-gcc, qemu-aarch64 and the arm64 libraries are installed (.ci/run installs them),
# and runs a subset here that fits CI's time: the GEMM tests that take seconds under qemu, the
# layer parity tests against PyTorch, gradcheck of the layers, and ./train's start-up line and a
# step on the NEON kernels. `make test-arm64` runs the whole suite there (it takes an hour).
if [ -z "$X" ]; then
    A=${VG_ARM64_B:-}
    if [ -z "$A" ]; then
        echo "== arm64 under qemu-aarch64: skipped (needs aarch64-linux-gnu-gcc, qemu-aarch64 and libpng-dev:arm64" \
             "libstb-dev:arm64 zlib1g-dev:arm64; see .ci/run)"; total_s=$((total_s + 1))
    elif [ "$A" = sanitizers ]; then
        echo "== arm64 under qemu-aarch64: skipped under the sanitizers (make asan)"; total_s=$((total_s + 1))
    elif [ "$A" = failed ]; then
        echo "  FAIL arm64: the cross build failed (its messages are above)"; total_f=$((total_f + 1)); status=1
    elif [ ! -x "$A/run_tests" ] || [ ! -x "$A/gradcheck" ] || [ ! -x "$A/train" ]; then
        echo "  FAIL arm64: $A/run_tests, gradcheck or train missing (the cross build failed)"; total_f=$((total_f + 1)); status=1
    else
        qa=qemu-aarch64
        t_arm=$SECONDS
        X=$qa run "arm64 (qemu-aarch64): GEMM, layer parity" "$A/run_tests" gemm_all_transposes gemm_alpha_beta \
            gemm_degenerate gemm_batched gemm_inside_parallel nn_parity_ test_pool.c nn_bias_gelu_accuracy nn_attention_softmax
        export VG_ISA=generic
        X=$qa run "arm64 (qemu-aarch64), level generic (VG_ISA=generic): GEMM" "$A/run_tests" gemm_all_transposes gemm_alpha_beta
        unset VG_ISA
        X=$qa run "arm64 (qemu-aarch64): gradcheck (float64) of the layers" "$A/gradcheck" linear layernorm gelu attention
        echo "== $qa $A/train --bench 1"
        q_out=$($qa "$A/train" --model vit-micro-cifar --bench 1 --batch 2 --threads 1 2>&1); q_rc=$?
        echo "$q_out"
        if [ "$q_rc" -eq 0 ] && echo "$q_out" | grep -q "kernels: neon (this CPU: neon); GEMM neon" \
           && echo "$q_out" | grep -q "median step"; then
            total_p=$((total_p + 1)); echo "  ok   ./train runs a step on the NEON kernels"
        else total_f=$((total_f + 1)); status=1; echo "  FAIL arm64 ./train: exit $q_rc, or not the neon kernels"; fi
        echo "== arm64 under qemu-aarch64: $((SECONDS - t_arm)) s"
    fi
fi
if [ "$total_s" -gt 0 ]; then echo "$total_p passed, $total_f failed, $total_s skipped"
else echo "$total_p passed, $total_f failed"; fi
[ "$total_f" -eq 0 ]
