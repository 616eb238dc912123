/* test_alloc.c — a steady-state training step (forward, loss, backward, grad-norm clip,
 * AdamW, arena reset) calls no malloc/calloc/realloc/aligned_alloc/free — in FP32 and under --amp.
 *
 * The test binary is linked with -Wl,--wrap=malloc,... (Makefile), so every allocation call made
 * by our own code (the library objects are linked statically into run_tests) goes through the
 * counting wrappers below first. OpenMP's runtime (a shared library) is not counted. */
#include "test.h"
#include "nn/nn.h"
#include "optim/optim.h"
#include "vit/vit.h"
#include <stdatomic.h>
#include <stdlib.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void __real_free(void *p);

static atomic_long alloc_calls;
void *__wrap_malloc(size_t n) { atomic_fetch_add(&alloc_calls, 1); return __real_malloc(n); }
void *__wrap_calloc(size_t k, size_t n) { atomic_fetch_add(&alloc_calls, 1); return __real_calloc(k, n); }
void *__wrap_realloc(void *p, size_t n) { atomic_fetch_add(&alloc_calls, 1); return __real_realloc(p, n); }
void *__wrap_aligned_alloc(size_t a, size_t n) { atomic_fetch_add(&alloc_calls, 1); return __real_aligned_alloc(a, n); }
void __wrap_free(void *p) { if (p) atomic_fetch_add(&alloc_calls, 1); __real_free(p); }

/* four warm-up steps, then four counted ones; amp: under bf16 autocast (--amp), whose GEMM packs
 * into per-thread scratch kept between calls */
static void steady_state_steps_allocate_nothing(bool amp) {
    REQUIRE(vg_autocast_set(amp));
    vg_vit_config cfg = vg_vit_config_default();
    cfg.img_size = 16; cfg.patch_size = 4; cfg.in_chans = 3; cfg.num_classes = 10;
    cfg.embed_dim = 32; cfg.depth = 2; cfg.num_heads = 2;
    cfg.drop_rate = 0.1; cfg.attn_drop_rate = 0.1;          /* the dropout paths too */
    vg_rng rng = vg_rng_seed(5), drop_rng = vg_rng_seed(6);
    vg_vit m;
    REQUIRE(vg_vit_init(&m, &cfg, &rng));
    vg_params params = {0};
    vg_vit_params(&m, &params);
    vg_adamw *opt = vg_adamw_new(&params, 0.05);
    vg_tensor *x = vg_persist(vg_randn(&rng, VG_DIMS(8, 3, 16, 16), 0, 1));
    int32_t labels[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    long before = 0;
    double first = 0, last = 0;
    for (int step = 0; step < 8; step++) {
        if (step == 4) before = atomic_load(&alloc_calls);   /* steps 0–3 warm up */
        vg_tensor *logits = vg_vit_forward(&m, x, true, &drop_rng);
        vg_tensor *loss = vg_cross_entropy_fn(logits, labels, 0.1);
        REQUIRE(loss);
        last = vg_item(loss);
        if (step == 0) first = last;
        (void)vg_top1_correct(logits, labels);
        vg_params_zero_grad(&params);
        REQUIRE(vg_backward(loss, NULL));
        vg_clip_grad_norm(&params, 1.0);
        vg_adamw_step(opt, 1e-3);
        vg_arena_reset();
    }
    CHECK_MSG(before > 0, "the counting wrappers saw no call during set-up: is run_tests linked with --wrap?");
    long calls = atomic_load(&alloc_calls) - before;
    CHECK_MSG(calls == 0, "%ld allocation calls in 4 steady-state steps%s", calls, amp ? " (--amp)" : "");
    CHECK(last < first);                                      /* and the steps did train */
    vg_tensor_free(x);
    vg_adamw_free(opt);
    vg_params_free(&params);
    vg_vit_free(&m);
}

VG_TEST(train_step_makes_no_allocation_calls) { steady_state_steps_allocate_nothing(false); }
VG_TEST(amp_train_step_makes_no_allocation_calls) {
    steady_state_steps_allocate_nothing(true);
    vg_autocast_set(false);                                   /* also after an early return */
}
