/* The README's example: fit y = 2x − 1 with one weight and one bias, by hand-written SGD. */
#include "autograd/autograd.h"

int main(void) {
    vg_rng rng = vg_rng_seed(0);
    vg_tensor *w = vg_param(VG_DIMS(1, 1)), *b = vg_param(VG_DIMS(1));  /* persistent leaves */
    vg_tensor *x = vg_persist(vg_randn(&rng, VG_DIMS(64, 1), 0, 1));
    for (int step = 0; step < 200; step++) {
        vg_tensor *y = vg_add_scalar(vg_mul_scalar(x, 2), -1);              /* target */
        vg_tensor *pred = vg_add(vg_matmul(x, w), b);                       /* (64,1) + (1,) */
        vg_tensor *loss = vg_mean_all(vg_pow_scalar(vg_sub(pred, y), 2));
        if (!loss) { fprintf(stderr, "error: %s\n", vg_error()); return 1; }
        vg_zero_grad(w); vg_zero_grad(b);
        vg_backward(loss, NULL);                                            /* fills w->grad, b->grad */
        vg_data(w)[0] -= 0.1f * vg_data(w->grad)[0];
        vg_data(b)[0] -= 0.1f * vg_data(b->grad)[0];
        if (step % 50 == 0) printf("step %3d  loss %.6f\n", step, vg_item(loss));
        vg_arena_reset();                                                   /* frees the step's graph */
    }
    printf("w = %.4f, b = %.4f\n", vg_data(w)[0], vg_data(b)[0]);
    vg_tensor_free(w); vg_tensor_free(b); vg_tensor_free(x);
    return 0;
}
