#!/usr/bin/env bash
# Runs every test program, echoes their output, and sums their closing "N passed, N failed" lines.
B=${1:-build}
BIN=${2:-.}                    # where gradcheck, inspect and train are (make asan: its build dir)
export VG_BIN="$BIN"           # tests that run a program find it here
export VG_TRAIN_MPI="$B/train-mpi"   # tests/test_mpi.c: ./train built with MPI (skipped when absent)
export VG_TRAIN_FAULTS="$B/train-faults"   # ./train with the test faults of base/fault.h
total_p=0; total_f=0; total_s=0; status=0
run() {
    local label=$1; shift
    echo "== $label: $*"
    local out; out=$("$@" 2>&1); local rc=$?
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
# The in-process tests that multiply matrices again with the AVX-512 GEMM kernel, the vdpbf16ps
# kernel and the AMX tile kernel, their intrinsics emulated in C where the machine lacks them
# (gemm/emulate/; needs AVX2+FMA); there the bf16 GEMM runs on the emulated AMX tiles (auto picks
# them) and tests/test_gemm_bf16.c runs every backend. The tests that run ./train or ./inspect are
# left out: those programs are built with this machine's kernels.
emu_kernel=$("$B/run_tests_emulated" --gemm-kernel 2>&1)
emu_bf16=$("$B/run_tests_emulated" --bf16-kernel 2>&1)
case "$emu_kernel" in
    *emulated*) run "GEMM, layer and ViT parity tests (float32), GEMM kernel $emu_kernel, bf16 kernel $emu_bf16" \
                    "$B/run_tests_emulated" test_gemm.c test_gemm_bf16.c test_tensor.c test_autograd.c test_nn.c test_vit.c test_alloc.c test_amp.c ;;
    avx512*) echo "== AVX-512 GEMM kernel: this machine runs it natively in the tests above"
             case "$emu_bf16" in
                 *emulated*) run "bf16 GEMM and --amp tests (float32), bf16 kernel $emu_bf16" "$B/run_tests_emulated" test_gemm_bf16.c test_amp.c amp_train_step ;;
             esac ;;
    *) echo "== AVX-512 and bf16 GEMM kernels: not run (this build can only use $emu_kernel: emulating AVX-512 needs AVX2+FMA)" ;;
esac
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
ex_out=$("$B/autograd_example" 2>&1); echo "$ex_out"
if echo "$ex_out" | grep -q "w = 2.0000, b = -1.0000"; then
    total_p=$((total_p + 1)); echo "  ok   readme example converges"
else total_f=$((total_f + 1)); echo "  FAIL readme example did not converge"; fi
if [ "$total_s" -gt 0 ]; then echo "$total_p passed, $total_f failed, $total_s skipped"
else echo "$total_p passed, $total_f failed"; fi
[ "$total_f" -eq 0 ]
