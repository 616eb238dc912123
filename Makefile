# vitgrad — plain Makefile, no configure step.
#   make            library + programs (train, gradcheck, inspect, predict)
#   make test       build and run every test; last line "N passed, N failed"
#   make CROSS=aarch64  everything for ARM64 into build-arm64/; make test-arm64 runs it under qemu-aarch64
#   make asan       the tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make train      train the default model on CIFAR-10
#   make demo       the whole loop in about a minute: train a tiny model, predict, plot
#   make reference  regenerate tests/reference/*.safetensors with PyTorch (python3-torch)
#   make bench      speed comparison vs PyTorch and OpenBLAS (not a test)
#   make MPI=1      ./train with MPI (mpicc; run with mpirun -np N ./train); plain make needs no MPI
#   make bench-mpi  1 process vs 2 ranks, shared memory and TCP (not a test; needs MPI)
#   make fuzz       every input parser under libFuzzer + ASan + UBSan (clang), FUZZ_SECONDS each
#   make check-timm vitgrad against the real timm (pip-installed; not a test)
CC      ?= gcc
# `make CROSS=aarch64`: everything for ARM64 with Debian's cross compiler (gcc-aarch64-linux-gnu, and
# libpng-dev:arm64 libstb-dev:arm64 zlib1g-dev:arm64 after `dpkg --add-architecture arm64`), into
# build-arm64/ (programs too, so ./train stays the host's), without MPI; `make test-arm64` runs the
# tests under qemu-aarch64 (below).
ifeq ($(CROSS),aarch64)
CC      := aarch64-linux-gnu-gcc
B       ?= build-arm64
BIN     ?= build-arm64
MPI     :=
endif
# The target: the baseline of the compiler's architecture, so one binary runs on every CPU of it;
# the kernels that need more (gemm/gemm_<isa>.c, simd/rows_<isa>.c, gemm/bf16_dp.c) are compiled
# with their own flags (ISA_FLAGS below) and chosen at run time (isa/dispatch.c). `make
# ARCH=-march=native` builds the rest for this machine instead.
MACHINE := $(shell $(CC) -dumpmachine 2>/dev/null)
ifneq ($(findstring x86_64,$(MACHINE)),)
ARCH    ?= -march=x86-64 -mtune=generic
ISA_X86 := yes
else ifneq ($(findstring aarch64,$(MACHINE)),)
ARCH    ?= -march=armv8-a
else
ARCH    ?=
endif
OPT     ?= -O3
WARN    := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wno-missing-field-initializers
# -fno-math-errno: libm calls need not set errno, so sqrt can become one vector instruction (AdamW).
# It changes no result (unlike -ffast-math, which this project never uses).
# -ffp-contract=fast: a*b + c may become one fused multiply-add (one rounding instead of two; no
# reassociation, NaN and Inf kept, so not -ffast-math). -std=c11 turns contraction off by default,
# which left every polynomial (GELU's erf and exp, softmax, LayerNorm) at twice the instructions:
# +6 % images/s on vit-tiny.
CFLAGS  := -std=c11 -D_GNU_SOURCE $(OPT) $(ARCH) -fopenmp -fno-math-errno -ffp-contract=fast $(WARN) -I. $(EXTRA_CFLAGS)
LDLIBS  := -fopenmp -lstb -lpng -lz -lm -lpthread $(EXTRA_LDFLAGS)
B       ?= build
# where the programs go: the repository root, except for `make asan`, whose instrumented programs
# stay in its build directory (so it never replaces ./train, ./gradcheck or ./inspect)
BIN     ?= .

LIB_DIRS := base tensor isa gemm simd autograd nn vit data optim checkpoint dist run
# the communicator is linked into each program, not the library: dist/single.c (one process) or,
# with MPI=1, dist/mpi.c compiled by mpicc
COMM_SRC := dist/single.c dist/mpi.c
LIB_SRC  := $(filter-out $(COMM_SRC),$(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))
MPICC    ?= mpicc
HAVE_MPI := $(if $(CROSS),,$(shell command -v $(MPICC) >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1 && echo yes))
ifeq ($(MPI),1)
COMM_OBJ := $(B)/mpi/dist/mpi.o
TRAIN_LD := $(MPICC)
else
COMM_OBJ := $(B)/f32/dist/single.o
TRAIN_LD := $(CC)
endif
TEST_SRC := $(wildcard tests/test_*.c) tests/test_main.c
GC_SRC   := $(wildcard tools/gradcheck*.c)
INSPECT_SRC := $(filter-out $(GC_SRC) tools/predict.c,$(wildcard tools/*.c))

OBJ32 := $(LIB_SRC:%.c=$(B)/f32/%.o)
OBJ64 := $(LIB_SRC:%.c=$(B)/f64/%.o)
# Test faults (base/fault.h) are compiled only into the test builds: the library sources that use
# them get a second object with -DVG_FAULTS, and $(B)/libvitgrad-faults.a (linked into run_tests
# and $(B)/train-faults, the ./train the fault tests drive) takes those in place of the plain ones.
FAULT_SRC := $(sort base/fault.c $(shell grep -l '"base/fault.h"\|"fault.h"' $(LIB_SRC)))
OBJ_FAULTS := $(FAULT_SRC:%.c=$(B)/faults/%.o) $(filter-out $(FAULT_SRC:%.c=$(B)/f32/%.o),$(OBJ32))

PROGRAMS := $(BIN)/gradcheck train-binary $(if $(INSPECT_SRC),$(BIN)/inspect) $(BIN)/predict $(BIN)/launch

.PHONY: all test asan fuzz fuzz-binaries fuzz-seeds train-binary train-fashion train-imagenet recipe-flags reference bench bench-mpi data clean plot check-pytorch check-timm
all: $(PROGRAMS)

# Objects depend on the compile command too: a changed flag (or CC) rebuilds everything.
$(B)/cflags.stamp: FORCE
	@mkdir -p $(B); echo '$(CC) $(CFLAGS)' | cmp -s - $@ || echo '$(CC) $(CFLAGS)' > $@
FORCE:

# the source a run's command.txt names: git describe of this tree ("-dirty": uncommitted changes);
# only run/run_dir.o is rebuilt when it changes
VG_SOURCE := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
$(B)/source.stamp: FORCE
	@mkdir -p $(B); echo '$(VG_SOURCE)' | cmp -s - $@ || echo '$(VG_SOURCE)' > $@
$(B)/f32/run/run_dir.o $(B)/f64/run/run_dir.o: $(B)/source.stamp
$(B)/f32/run/run_dir.o $(B)/f64/run/run_dir.o: DEFS = -DVG_SOURCE='"$(VG_SOURCE)"'

# Each instruction set's kernel files get that set's target flags (after CFLAGS: they win over
# ARCH); the dispatcher runs them only on CPUs that have it.
ifeq ($(ISA_X86),yes)
ISA_AVX2   := -march=x86-64-v3
ISA_AVX512 := -march=x86-64-v4
$(B)/f32/gemm/gemm_avx2.o $(B)/f32/simd/rows_avx2.o: ISA_FLAGS := $(ISA_AVX2)
$(B)/f32/gemm/gemm_avx512.o $(B)/f32/simd/rows_avx512.o: ISA_FLAGS := $(ISA_AVX512)
$(B)/f32/gemm/bf16_dp.o: ISA_FLAGS := $(ISA_AVX512) -mavx512bf16
endif
# Each object depends on the headers it includes, as the compiler lists them (-MMD -MP writes
# OBJ.d beside OBJ; the -include below reads them), so a change rebuilds what depends on it.
# DEFS: per-object defines. They are not added to CFLAGS, which cflags.stamp records: a
# target-specific CFLAGS would reach the stamp when it is remade for that target, and flip it.
DEPFLAGS = -MMD -MP
$(B)/f32/%.o: %.c $(B)/cflags.stamp
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ISA_FLAGS) $(DEFS) $(DEPFLAGS) -c $< -o $@
$(B)/mpi/dist/mpi.o: dist/mpi.c $(B)/cflags.stamp
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@
$(B)/f64/%.o: %.c $(B)/cflags.stamp
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEFS) $(DEPFLAGS) -DVG_DOUBLE -c $< -o $@
$(B)/faults/%.o: %.c $(B)/cflags.stamp
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEFS) $(DEPFLAGS) -DVG_FAULTS -c $< -o $@
# the tests set faults in their own process (vg_fault_set)
$(B)/f32/tests/%.o: DEFS = -DVG_FAULTS
-include $(shell find $(B) -name '*.d' 2>/dev/null)

$(B)/libvitgrad.a: $(OBJ32)
	@rm -f $@; ar rcs $@ $^
$(B)/libvitgrad64.a: $(OBJ64)
	@rm -f $@; ar rcs $@ $^
$(B)/libvitgrad-faults.a: $(OBJ_FAULTS)
	@rm -f $@; ar rcs $@ $^

$(BIN)/gradcheck: $(GC_SRC:%.c=$(B)/f64/%.o) $(B)/libvitgrad64.a
	$(CC) $^ -o $@ $(LDLIBS)
$(BIN)/inspect: $(INSPECT_SRC:%.c=$(B)/f32/%.o) $(B)/f32/tools/report_page_js.o $(B)/libvitgrad.a
	$(CC) $^ -o $@ $(LDLIBS)
# ./inspect report's JavaScript, compiled in as the C string report_page_js
$(B)/tools/report_page_js.c: tools/report_page.js
	@mkdir -p $(dir $@)
	{ echo 'const char report_page_js[] ='; sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } > $@
$(B)/f32/tools/report_page_js.o: $(B)/tools/report_page_js.c
	$(CC) $(CFLAGS) -c $< -o $@
# ./predict: classify images with a trained model (shares the model and image loading of ./inspect)
$(BIN)/predict: $(B)/f32/tools/predict.o $(B)/f32/tools/inspect_common.o $(B)/libvitgrad.a
	$(CC) $^ -o $@ $(LDLIBS)
# ./launch: restarts a failed job from its checkpoint (launcher/launch.c; needs nothing of the library)
$(BIN)/launch: $(B)/f32/launcher/launch.o
	$(CC) $^ -o $@ $(EXTRA_LDFLAGS)
$(B)/autograd_example: $(B)/f32/examples/autograd_example.o $(B)/libvitgrad.a
	$(CC) $^ -o $@ $(LDLIBS)
# the program outputs quoted in docs/tutorial.md and README.md, run and compared (tests/run.sh)
$(B)/docs_check: $(B)/f32/tests/tools/docs_check.o
	$(CC) $^ -o $@ $(EXTRA_LDFLAGS)
# vg_gradcheck on a user's function: float64 (-DVG_DOUBLE, the f64 objects) against libvitgrad64.a
$(B)/gradcheck_example: $(B)/f64/examples/gradcheck_example.o $(B)/libvitgrad64.a
	$(CC) $^ -o $@ $(LDLIBS)
# the library examples on CIFAR-10 (docs/library.md); `make test` runs each for a few steps
# (export_image: one dataset image as a PNG, for `make demo`)
EXAMPLES := $(B)/mlp_cifar10 $(B)/cnn_cifar10 $(B)/export_image
$(EXAMPLES): $(B)/%: $(B)/f32/examples/%.o $(B)/libvitgrad.a
	$(CC) $^ -o $@ $(LDLIBS)
# run_tests counts our code's allocation calls (tests/test_alloc.c): the library is linked statically,
# so --wrap reroutes its malloc/free calls through the test's counting wrappers.
WRAP_ALLOC := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,--wrap=free
$(B)/run_tests: $(TEST_SRC:%.c=$(B)/f32/%.o) $(B)/f32/dist/single.o $(B)/libvitgrad-faults.a
	$(CC) $^ -o $@ $(WRAP_ALLOC) $(LDLIBS)

# The GEMM, layer and ViT tests again with the SIMD kernels' intrinsics in plain C (gemm/emulate/),
# built for AVX2+FMA: the FP32 AVX-512 kernel (MR 12, NR 32), the vdpbf16ps kernel and the AMX tile
# kernel, so every kernel runs on any x86-64 machine with AVX2 (on machines with AVX512_BF16 or AMX
# the tests also check the C against the instructions). Without -fno-var-tracking-assignments,
# `make asan`'s -g build of them takes minutes.
EMU_CFLAGS := $(CFLAGS) -march=x86-64-v3 -fno-var-tracking-assignments -DVG_GEMM_EMULATE_AVX512
$(B)/emulated/gemm/gemm_avx512.o: gemm/gemm_avx512.c $(B)/cflags.stamp
	@mkdir -p $(dir $@)
	$(CC) $(EMU_CFLAGS) $(DEPFLAGS) -c $< -o $@
$(B)/emulated/gemm/bf16_dp.o: gemm/bf16_dp.c $(B)/cflags.stamp
	@mkdir -p $(dir $@)
	$(CC) $(EMU_CFLAGS) $(DEPFLAGS) -DVG_GEMM_EMULATE_BF16 -c $< -o $@
$(B)/emulated/gemm/amx.o: gemm/amx.c $(B)/cflags.stamp
	@mkdir -p $(dir $@)
	$(CC) $(EMU_CFLAGS) $(DEPFLAGS) -DVG_GEMM_EMULATE_AMX -c $< -o $@
EMULATED := gemm_avx512 bf16_dp amx
$(B)/run_tests_emulated: $(TEST_SRC:%.c=$(B)/f32/%.o) $(B)/f32/dist/single.o $(EMULATED:%=$(B)/emulated/gemm/%.o) $(filter-out $(EMULATED:%=$(B)/f32/gemm/%.o),$(OBJ_FAULTS))
	$(CC) $^ -o $@ $(WRAP_ALLOC) $(LDLIBS)

# ---- fuzz harnesses (fuzz/): `make test` replays their committed corpora through a plain main()
# (fuzz/replay.c); `make fuzz` links the same harnesses with clang's libFuzzer. stb_image is
# compiled in from its header (fuzz/stb_image_impl.c) instead of linking libstb, so the fuzzer
# sees the decoder's code.
FUZZ_HARNESSES := safetensors checkpoint cifar10 idx imagefolder image_decode
FUZZ_SUPPORT   := $(addprefix $(B)/f32/fuzz/,common.o batches.o stb_image_impl.o)
FUZZ_LDLIBS    := $(filter-out -lstb,$(LDLIBS))
FUZZ_REPLAY    := $(FUZZ_HARNESSES:%=$(B)/fuzz/replay_%)
$(B)/f32/fuzz/stb_image_impl.o: fuzz/stb_image_impl.c $(B)/cflags.stamp
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -w -c $< -o $@
$(B)/fuzz/replay_%: $(B)/f32/fuzz/fuzz_%.o $(B)/f32/fuzz/replay.o $(FUZZ_SUPPORT) $(B)/libvitgrad.a
	@mkdir -p $(dir $@)
	$(CC) $^ -o $@ $(WRAP_ALLOC) $(FUZZ_LDLIBS)
$(B)/fuzz/fuzz_%: $(B)/f32/fuzz/fuzz_%.o $(FUZZ_SUPPORT) $(B)/libvitgrad.a
	@mkdir -p $(dir $@)
	$(CC) $^ -o $@ -fsanitize=fuzzer $(FUZZ_LDLIBS)
.SECONDARY: $(FUZZ_HARNESSES:%=$(B)/f32/fuzz/fuzz_%.o) $(B)/f32/fuzz/replay.o $(FUZZ_SUPPORT)
fuzz-binaries: $(FUZZ_HARNESSES:%=$(B)/fuzz/fuzz_%)
FUZZ_SECONDS ?= 60
fuzz:
	$(MAKE) B=build-fuzz BIN=build-fuzz CC=clang OPT="-O1 -g -fno-omit-frame-pointer" \
	  EXTRA_CFLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
	  EXTRA_LDFLAGS="-fsanitize=address,undefined" fuzz-binaries
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash fuzz/run.sh build-fuzz $(FUZZ_TARGETS)
# regenerate the committed seed corpora fuzz/corpus/*/seed-*
$(B)/make_seeds: $(B)/f32/fuzz/make_seeds.o $(B)/libvitgrad.a
	$(CC) $^ -o $@ $(LDLIBS)
fuzz-seeds: $(B)/make_seeds
	$(B)/make_seeds

# with mpicc and mpirun present, the tests also run ./train as 2 MPI ranks ($(B)/train-mpi) and the
# gradient bucketer over 2 ranks ($(B)/dist_check) $(FUZZ_REPLAY)
test: all $(B)/run_tests $(B)/run_tests_emulated $(B)/train-faults $(B)/autograd_example $(B)/gradcheck_example $(B)/docs_check $(EXAMPLES) $(if $(HAVE_MPI),$(B)/train-mpi $(B)/dist_check) $(FUZZ_REPLAY)
	+@a=$(if $(findstring sanitize,$(EXTRA_CFLAGS)),sanitizers); if [ -z "$(CROSS)$(findstring aarch64,$(MACHINE))$(findstring sanitize,$(EXTRA_CFLAGS))" ] && $(ARM64_READY); then \
	  echo "cross-building build-arm64/ for the tests under qemu-aarch64"; a=build-arm64; \
	  $(ARM64_MAKE) build-arm64/run_tests build-arm64/gradcheck train-binary || a=failed; fi; \
	VG_ARM64_B=$$a bash tests/run.sh $(B) $(BIN)

# ---- ARM64 on this machine: cross-built (make CROSS=aarch64, above) and run under Debian's qemu-user.
# Needs gcc-aarch64-linux-gnu, qemu-user and, after `dpkg --add-architecture arm64`, libpng-dev:arm64
# libstb-dev:arm64 zlib1g-dev:arm64 libgomp1:arm64. make test runs a subset (tests/run.sh); make
# test-arm64 all of tests/run.sh with every program under qemu-aarch64 (VG_EXEC_WRAPPER). qemu runs
# them with the multiarch loader and libraries (not -L /usr/aarch64-linux-gnu: the cross package's
# ld.so with the multiarch libc.so.6 hangs in pthread_create).
ARM64_MAKE  := $(MAKE) --no-print-directory CROSS=aarch64 CC=aarch64-linux-gnu-gcc ARCH=-march=armv8-a \
               B=build-arm64 BIN=build-arm64 MPI= OPT=-O3 EXTRA_CFLAGS= EXTRA_LDFLAGS=
ARM64_QEMU  := qemu-aarch64
ARM64_READY := command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 && command -v qemu-aarch64 >/dev/null 2>&1 && \
               [ -e /lib/ld-linux-aarch64.so.1 ] && [ -e /usr/lib/aarch64-linux-gnu/libgomp.so.1 ] && \
               echo 'int main(void) { return 0; }' | aarch64-linux-gnu-gcc -x c - -o /dev/null -lstb -lpng -lz 2>/dev/null
.PHONY: test-arm64
test-arm64:
	$(ARM64_MAKE) all build-arm64/run_tests build-arm64/autograd_example $(FUZZ_HARNESSES:%=build-arm64/fuzz/replay_%)
	VG_EXEC_WRAPPER="$(ARM64_QEMU)" bash tests/run.sh build-arm64 build-arm64

asan:
	$(MAKE) B=build-asan BIN=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	  EXTRA_LDFLAGS="-fsanitize=address,undefined" test

# ---- the main job: train the default model on CIFAR-10 (finds or downloads the data first)
CIFAR_DIR = $(firstword $(foreach d,$(CIFAR10_DIR) data/cifar-10-batches-bin ../shared/data/cifar-10-batches-bin,$(if $(wildcard $(d)/test_batch.bin),$(d))))
# TRAIN_EXTRA: flags added after the recipe's (a later flag wins), e.g. TRAIN_EXTRA="--amp --out runs/cifar10-amp"
TRAIN_EXTRA ?=
# train: the default recipe (vit-micro-cifar with CCT's max-pool conv tokenizer, mean pooling, sin-cos
# positions, patch dropout 0.75, Muon for the blocks' matrices and AdamW for the rest, 72 epochs =
# 492.8 TFLOP with Muon's Newton-Schulz FLOPs; flip TTA and a weight average reported beside the plain
# figure): 86.90 % over two seeds in FP32 (docs/results.md)
TRAIN_FLAGS ?= --model vit-micro-cifar --pool mean --pos sincos2d --patch-drop 0.75 --conv-stem 32,64 --stem-pool 1 --muon --tta flip --model-ema --epochs 72 --eval-every 6 --batch 128 --lr 2e-3 --wd 0.05 --warmup 1e --min-lr 1e-5 --label-smoothing 0.1 --clip 1.0 --seed 0 --out runs/cifar10-muon
# train-long: the 1,000 TFLOP recipe (the default's shape with a conv stem instead of the
# patch cut, TrivialAugment, a weight average, 114 epochs, bf16 products): 108 minutes on 2 Zen 4
# cores (docs/results.md); a second seed with TRAIN_EXTRA="--seed 1 --out runs/cifar10-long-stem-s1"
TRAIN_LONG_FLAGS ?= --model vit-micro-cifar --pool mean --pos sincos2d --patch-drop 0.5 --conv-stem 32,64 --aa trivial --model-ema --epochs 114 --eval-every 3 --batch 128 --lr 2e-3 --wd 0.05 --warmup 1e --min-lr 1e-5 --label-smoothing 0.1 --clip 1.0 --seed 0 --amp --out runs/cifar10-long-stem
.PHONY: train train-long
train train-long: train-binary
	@dir="$(CIFAR_DIR)"; if [ -z "$$dir" ]; then \
	  $(MAKE) --no-print-directory data || { echo "make $@: no CIFAR-10 (the download's message is above); stopping" >&2; exit 1; }; \
	  dir=data/cifar-10-batches-bin; fi; \
	echo "CIFAR-10 from $$dir"; $(BIN)/train --dataset cifar10 --data "$$dir" $(if $(filter train-long,$@),$(TRAIN_LONG_FLAGS),$(TRAIN_FLAGS)) $(TRAIN_EXTRA) --continue
train-binary: $(B)/f32/train.o $(COMM_OBJ) $(B)/libvitgrad.a
	$(TRAIN_LD) $^ -o $(BIN)/train $(LDLIBS)
# ./train with the test faults (base/fault.h), for the tests that make it fail on purpose
$(B)/train-faults: $(B)/f32/train.o $(B)/f32/dist/single.o $(B)/libvitgrad-faults.a
	$(CC) $^ -o $@ $(LDLIBS)
$(B)/train-mpi: $(B)/f32/train.o $(B)/mpi/dist/mpi.o $(B)/libvitgrad.a
	$(MPICC) $^ -o $@ $(LDLIBS)
$(B)/dist_check: $(B)/f32/tests/tools/dist_check.o $(B)/mpi/dist/mpi.o $(B)/libvitgrad.a
	$(MPICC) $^ -o $@ $(LDLIBS)
TRAIN_FASHION_FLAGS ?= --dataset fashion-mnist --model vit-mnist --epochs 10 --lr 2e-3 --warmup 1e --aug none --out runs/fashion-mnist
train-fashion: train-binary
	$(BIN)/train $(TRAIN_FASHION_FLAGS) --continue
# train-imagenet: vit-tiny-in64 with CIFAR-10's winners (the max-pool conv tokenizer, Muon), 21
# epochs = 82.5 TFLOP with Muon's Newton-Schulz FLOPs (docs/results.md: 85.40 % over two seeds in FP32)
TRAIN_IMAGENET_FLAGS ?= --dataset imagefolder --model vit-tiny-in64 --pool mean --pos sincos2d --patch-drop 0.5 --conv-stem 32,64 --stem-pool 1 --muon --tta flip --epochs 21 --batch 128 --lr 1e-3 --wd 0.05 --warmup 1e --min-lr 1e-5 --label-smoothing 0.1 --clip 1.0 --seed 0 --out runs/in64-muon
train-imagenet: train-binary
	$(BIN)/train $(TRAIN_IMAGENET_FLAGS) --continue
# each training recipe's flags, one line each (tests/test_train.c has ./train check them all)
recipe-flags:
	@printf '%s\n' "train: $(TRAIN_FLAGS)" "train-long: $(TRAIN_LONG_FLAGS)" \
	  "train-imagenet: $(TRAIN_IMAGENET_FLAGS)" "train-fashion: $(TRAIN_FASHION_FLAGS)"
data:
	sh data/download_cifar10.sh

# make demo: the whole loop in about a minute on 2 cores — vit-mnist on Fashion-MNIST for 300 steps
# (~79 % test top-1), then ./predict on a test image and the curves plot; runs again from scratch
DEMO_OUT ?= runs/demo
FASHION_DIR ?= /usr/share/datasets/fashion-mnist
.PHONY: demo
demo: all $(B)/export_image
	$(BIN)/train --dataset fashion-mnist --data $(FASHION_DIR) --model vit-mnist --steps 300 --lr 2e-3 --warmup 30 --aug none --eval-every 100 --out $(DEMO_OUT) --overwrite
	$(B)/export_image fashion-mnist $(FASHION_DIR) test 0 $(DEMO_OUT)/test-0.png
	$(BIN)/predict --ckpt $(DEMO_OUT) $(DEMO_OUT)/test-0.png --top 3
	$(BIN)/inspect plot --csv $(DEMO_OUT)/metrics.csv --out $(DEMO_OUT)/curves.png
	@echo "make demo: curves in $(DEMO_OUT)/curves.png, the model in $(DEMO_OUT)/model.safetensors"

# loss/accuracy curves of a run: make plot OUT=runs/cifar10 → OUT/curves.png
OUT ?= runs/last
plot: $(BIN)/inspect
	$(BIN)/inspect plot --csv $(OUT)/metrics.csv --out $(OUT)/curves.png

# a checkpoint from ./train loads into PyTorch (strict) and gives the same logits (needs python3-torch)
$(B)/vit_logits: $(B)/f32/tests/tools/vit_logits.o $(B)/libvitgrad.a
	$(CC) $^ -o $@ $(LDLIBS)
CKPT ?= runs/last/model.safetensors
check-pytorch: $(B)/vit_logits
	/usr/bin/python3 tests/reference/check_checkpoint_in_pytorch.py $(CKPT) $(B)/vit_logits
# the real timm (pip-installed, not in Debian; see tests/reference/check_timm.py): its published ViT
# layouts load into vitgrad with timm's logits, and vitgrad's checkpoints load into timm (strict)
check-timm: $(B)/vit_logits
	/usr/bin/python3 tests/reference/check_timm.py $(B)/vit_logits

reference:
	/usr/bin/python3 tests/reference/safetensors_io.py
	/usr/bin/python3 tests/reference/make_nn_reference.py
	/usr/bin/python3 tests/reference/make_vit_reference.py
	/usr/bin/python3 tests/reference/make_timm_reference.py
	/usr/bin/python3 tests/reference/make_train_reference.py
	/usr/bin/python3 tests/reference/make_amp_reference.py
	/usr/bin/python3 tests/reference/make_regularization_reference.py

# ---- benchmarks (not tests)
$(B)/gemm_bench: $(B)/f32/bench/gemm_bench.o $(B)/libvitgrad.a
	$(CC) $^ -o $@ -lopenblas $(LDLIBS)
# vg_gemm_bf16 vs vg_gemm (bench/run.sh's "bf16gemm" part), and vs oneDNN's bf16 matmul (its "dnnl"
# part; needs libdnnl-dev, the part says so and skips without it)
$(B)/bf16_gemm_probe: $(B)/f32/bench/bf16_gemm_probe.o $(B)/libvitgrad.a
	$(CC) $^ -o $@ $(LDLIBS)
$(B)/dnnl_gemm: $(B)/f32/bench/dnnl_gemm.o $(B)/libvitgrad.a
	$(CC) $^ -o $@ -ldnnl $(LDLIBS)
bench: train-binary $(B)/gemm_bench
	bash bench/run.sh $(B)
# data-parallel speed: 1 process vs 2 ranks over shared memory and TCP, and a scaling model
bench-mpi: $(B)/train-mpi
	bash bench/mpi.sh $(B)

clean:
	rm -rf build build-asan build-fuzz build-arm64 train gradcheck inspect predict launch
