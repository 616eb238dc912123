/* test_tensor.c — tensors, views, broadcasting, reductions, matmul, the RNG, the arena. */
#include "test.h"
#include "autograd/autograd.h"
#include <string.h>

static bool equals_array(const vg_tensor *t, const real *want, int64_t n) {
    if (!t || vg_numel(t) != n) return false;
    real buf[256];
    vg_copy_to_array(t, buf);
    for (int64_t i = 0; i < n; i++) if (buf[i] != want[i]) return false;
    return true;
}

VG_TEST(tensor_creation) {
    vg_tensor *z = vg_zeros(VG_DIMS(2, 3));
    REQUIRE(z);
    CHECK(z->ndim == 2 && z->shape[0] == 2 && z->shape[1] == 3);
    CHECK(z->strides[0] == 3 && z->strides[1] == 1);
    CHECK(vg_is_contiguous(z) && vg_numel(z) == 6);
    CHECK(equals_array(vg_full(VG_DIMS(2), 2.5), (real[]){2.5, 2.5}, 2));
    CHECK(equals_array(vg_arange(0, 5, 1), (real[]){0, 1, 2, 3, 4}, 5));
    CHECK(equals_array(vg_arange(1, 2, 0.25), (real[]){1, 1.25, 1.5, 1.75}, 4));
    CHECK(vg_arange(0, 5, 0) == NULL);
    CHECK(vg_zeros(VG_DIMS(2, -1)) == NULL && strstr(vg_error(), "negative"));
    vg_tensor *s = vg_full(0, NULL, 7);     /* a 0-d scalar */
    CHECK(s && vg_numel(s) == 1 && vg_item(s) == 7);
    vg_tensor *six = vg_zeros(VG_DIMS(1, 2, 1, 2, 1, 2));
    CHECK(six && six->ndim == 6 && vg_numel(six) == 8);
    vg_arena_reset();
}

VG_TEST(rng_is_seeded_and_restorable) {
    vg_rng a = vg_rng_seed(7), b = vg_rng_seed(7);
    vg_tensor *x = vg_randn(&a, VG_DIMS(100), 0, 1);
    vg_rng saved = a;                       /* the state is a value */
    vg_tensor *y = vg_rand(&a, VG_DIMS(10), -1, 1);
    vg_tensor *x2 = vg_randn(&b, VG_DIMS(100), 0, 1);
    CHECK(memcmp(vg_data(x), vg_data(x2), sizeof(real) * 100) == 0);
    vg_tensor *y2 = vg_rand(&saved, VG_DIMS(10), -1, 1);
    CHECK(memcmp(vg_data(y), vg_data(y2), sizeof(real) * 10) == 0);
    /* moments of a large normal sample, and truncation bounds */
    vg_rng r = vg_rng_seed(1);
    vg_tensor *n = vg_randn(&r, VG_DIMS(100000), 0, 1);
    double s = 0, s2 = 0;
    for (int i = 0; i < 100000; i++) { s += vg_data(n)[i]; s2 += vg_data(n)[i] * vg_data(n)[i]; }
    CHECK_CLOSE(s / 1e5, 0, 0.02);
    CHECK_CLOSE(s2 / 1e5, 1, 0.02);
    vg_tensor *tn = vg_trunc_normal(&r, VG_DIMS(10000), 0, 1, -0.5, 0.5);
    real lo = 1, hi = -1;
    for (int i = 0; i < 10000; i++) { if (vg_data(tn)[i] < lo) lo = vg_data(tn)[i]; if (vg_data(tn)[i] > hi) hi = vg_data(tn)[i]; }
    CHECK(lo >= -0.5 && hi <= 0.5 && lo < -0.45 && hi > 0.45);
    uint32_t counts[3] = {0};
    for (int i = 0; i < 30000; i++) counts[vg_rng_below(&r, 3)]++;
    CHECK(counts[0] > 9500 && counts[1] > 9500 && counts[2] > 9500);
    vg_arena_reset();
}

VG_TEST(views_share_storage) {
    vg_tensor *a = vg_arange(0, 12, 1);
    vg_tensor *m = vg_reshape(a, VG_DIMS(3, 4));
    REQUIRE(m);
    CHECK(m->storage == a->storage);                        /* reshape of contiguous is a view */
    vg_tensor *t = vg_transpose(m, 0, 1);
    CHECK(t->storage == a->storage && !vg_is_contiguous(t));
    CHECK(t->shape[0] == 4 && t->strides[0] == 1 && t->strides[1] == 4);
    /* a write through a view is seen by its base */
    vg_set(t, (int64_t[]){1, 2}, 100);                      /* t[1,2] = m[2,1] = a[9] */
    CHECK(vg_data(a)[9] == 100);
    vg_tensor *row = vg_select(m, 0, 1);                    /* m[1] = a[4..8) */
    vg_fill_raw(row, -1);
    CHECK(vg_data(a)[4] == -1 && vg_data(a)[7] == -1 && vg_data(a)[8] == 8);
    vg_tensor *col = vg_narrow(m, 1, 2, 2);                 /* m[:, 2:4] */
    CHECK(col->shape[0] == 3 && col->shape[1] == 2 && col->offset == 2);
    vg_set(col, (int64_t[]){2, 1}, 55);                     /* m[2,3] = a[11] */
    CHECK(vg_data(a)[11] == 55);
    /* expand is stride 0: every row reads the same storage */
    vg_tensor *v = vg_arange(0, 3, 1);
    vg_tensor *e = vg_expand(vg_unsqueeze(v, 0), VG_DIMS(4, -1));
    CHECK(e && e->strides[0] == 0 && e->shape[0] == 4);
    vg_data(v)[1] = 9;
    CHECK(vg_get(e, (int64_t[]){3, 1}) == 9);
    /* contiguous() materialises; it is a no-op on contiguous tensors */
    vg_tensor *c = vg_contiguous(t);
    CHECK(vg_is_contiguous(c) && c->storage != a->storage);
    CHECK(vg_contiguous(m) == m);
    vg_arena_reset();
}

VG_TEST(permute_reshape_round_trip) {
    vg_rng r = vg_rng_seed(3);
    vg_tensor *x = vg_randn(&r, VG_DIMS(2, 3, 4, 5), 0, 1);
    vg_tensor *p = vg_permute(x, (int[]){3, 1, 0, 2});       /* (5, 3, 2, 4) */
    CHECK(p->shape[0] == 5 && p->shape[1] == 3 && p->shape[2] == 2 && p->shape[3] == 4);
    vg_tensor *back = vg_permute(p, (int[]){2, 1, 3, 0});
    CHECK(vg_same_shape(back, x));
    CHECK(memcmp(back->strides, x->strides, sizeof(int64_t) * 4) == 0);   /* the identity view */
    /* reshape of a permuted tensor must copy (PyTorch semantics) and keep row-major values */
    vg_tensor *flat = vg_reshape(p, VG_DIMS(-1));
    CHECK(flat && flat->storage != x->storage && vg_numel(flat) == 120);
    int64_t i = 0; bool ok = true;
    for (int64_t a = 0; a < 5; a++) for (int64_t b = 0; b < 3; b++) for (int64_t c = 0; c < 2; c++) for (int64_t d = 0; d < 4; d++)
        ok &= vg_data(flat)[i++] == vg_get(x, (int64_t[]){c, b, d, a});
    CHECK(ok);
    vg_tensor *un = vg_permute(vg_reshape(flat, VG_DIMS(5, 3, 2, 4)), (int[]){2, 1, 3, 0});
    CHECK(memcmp(vg_data(vg_contiguous(un)), vg_data(x), sizeof(real) * 120) == 0);
    /* view of a transposed tensor that merges non-adjacent memory fails with a message; splitting works */
    vg_tensor *t = vg_transpose(vg_reshape(x, VG_DIMS(6, 20)), 0, 1);   /* (20, 6) */
    CHECK(vg_view(t, VG_DIMS(120)) == NULL && strstr(vg_error(), "view"));
    vg_tensor *split = vg_view(t, VG_DIMS(4, 5, 6));
    CHECK(split && split->storage == x->storage && split->strides[0] == 5 && split->strides[1] == 1 && split->strides[2] == 20);
    CHECK(vg_reshape(x, VG_DIMS(7, -1)) == NULL && strstr(vg_error(), "infer"));
    CHECK(vg_reshape(x, VG_DIMS(-1, -1)) == NULL);
    CHECK(vg_permute(x, (int[]){0, 0, 1, 2}) == NULL);
    CHECK(vg_squeeze(x, 1) == NULL && strstr(vg_error(), "size 3"));
    CHECK(vg_narrow(x, 1, 2, 2) == NULL && strstr(vg_error(), "outside"));
    vg_arena_reset();
}

VG_TEST(broadcasting_rules) {
    vg_tensor *a = vg_arange(0, 6, 1);
    vg_tensor *m = vg_reshape(a, VG_DIMS(2, 3));
    vg_tensor *col = vg_reshape(vg_arange(10, 12, 1), VG_DIMS(2, 1));
    vg_tensor *row = vg_arange(100, 103, 1);
    CHECK(equals_array(vg_add(m, col), (real[]){10, 11, 12, 14, 15, 16}, 6));
    CHECK(equals_array(vg_add(m, row), (real[]){100, 102, 104, 103, 105, 107}, 6));
    vg_tensor *outer = vg_mul(col, row);                    /* (2,1) * (3,) → (2,3) */
    CHECK(outer && outer->shape[0] == 2 && outer->shape[1] == 3 && vg_data(outer)[5] == 1122);
    vg_tensor *s = vg_full(0, NULL, 2);                     /* 0-d scalar broadcasts */
    CHECK(equals_array(vg_div(m, s), (real[]){0, 0.5, 1, 1.5, 2, 2.5}, 6));
    vg_tensor *b4 = vg_zeros(VG_DIMS(4, 1, 3));
    vg_tensor *r = vg_sub(b4, vg_zeros(VG_DIMS(5, 1)));
    CHECK(r && r->ndim == 3 && r->shape[0] == 4 && r->shape[1] == 5 && r->shape[2] == 3);
    /* shapes that must fail do fail, with a message naming both shapes */
    CHECK(vg_add(m, vg_zeros(VG_DIMS(2))) == NULL);
    CHECK(strstr(vg_error(), "(2, 3)") && strstr(vg_error(), "(2,)") && strstr(vg_error(), "broadcast"));
    CHECK(vg_mul(vg_zeros(VG_DIMS(3, 4)), vg_zeros(VG_DIMS(4, 3))) == NULL);
    CHECK(vg_matmul(vg_zeros(VG_DIMS(2, 3)), vg_zeros(VG_DIMS(4, 5))) == NULL && strstr(vg_error(), "inner"));
    CHECK(vg_matmul(vg_zeros(VG_DIMS(2, 2, 3)), vg_zeros(VG_DIMS(3, 3, 4))) == NULL && strstr(vg_error(), "batch"));
    /* NULL propagates through a chain: one check at the end */
    vg_tensor *chain = vg_exp(vg_add(vg_add(m, vg_zeros(VG_DIMS(5))), m));
    CHECK(chain == NULL);
    vg_arena_reset();
}

VG_TEST(reductions) {
    vg_tensor *x = vg_reshape(vg_arange(0, 24, 1), VG_DIMS(2, 3, 4));
    vg_tensor *s1 = vg_sum(x, 1, (int[]){1}, false);
    CHECK(s1->ndim == 2 && s1->shape[0] == 2 && s1->shape[1] == 4);
    CHECK(equals_array(s1, (real[]){12, 15, 18, 21, 48, 51, 54, 57}, 8));
    vg_tensor *s02 = vg_sum(x, 2, (int[]){0, -1}, true);
    CHECK(s02->ndim == 3 && s02->shape[0] == 1 && s02->shape[1] == 3 && s02->shape[2] == 1);
    CHECK(equals_array(s02, (real[]){60, 92, 124}, 3));
    CHECK(vg_item(vg_sum_all(x)) == 276);
    CHECK(vg_item(vg_mean_all(x)) == (real)11.5);
    CHECK(equals_array(vg_max(x, 1, (int[]){2}, false), (real[]){3, 7, 11, 15, 19, 23}, 6));
    CHECK(equals_array(vg_mean(vg_transpose(x, 0, 2), 1, (int[]){0}, false), (real[]){1.5, 13.5, 5.5, 17.5, 9.5, 21.5}, 6));
    CHECK(vg_sum(x, 1, (int[]){3}, false) == NULL && strstr(vg_error(), "out of range"));
    CHECK(vg_sum(x, 2, (int[]){1, 1}, false) == NULL && strstr(vg_error(), "twice"));
    vg_arena_reset();
}

VG_TEST(matmul_values_and_transposed_operands) {
    vg_tensor *a = vg_from_array(VG_DIMS(2, 3), (real[]){1, 2, 3, 4, 5, 6});
    vg_tensor *b = vg_from_array(VG_DIMS(3, 2), (real[]){7, 8, 9, 10, 11, 12});
    CHECK(equals_array(vg_matmul(a, b), (real[]){58, 64, 139, 154}, 4));
    /* Aᵀ as a strided view: (3,2)ᵀ @ (3,2)... use bᵀ (2,3) @ aᵀ (3,2) = (ab)ᵀ */
    CHECK(equals_array(vg_matmul(vg_transpose(b, 0, 1), vg_transpose(a, 0, 1)), (real[]){58, 139, 64, 154}, 4));
    vg_tensor *v = vg_from_array(VG_DIMS(3), (real[]){1, 0, -1});
    vg_tensor *mv = vg_matmul(a, v);
    CHECK(mv->ndim == 1 && equals_array(mv, (real[]){-2, -2}, 2));
    vg_tensor *vm = vg_matmul(v, b);
    CHECK(vm->ndim == 1 && equals_array(vm, (real[]){-4, -4}, 2));
    /* broadcast batch: (2,1,2,3) @ (3,3,2) → (2,3,2,2) */
    vg_rng r = vg_rng_seed(5);
    vg_tensor *x = vg_randn(&r, VG_DIMS(2, 1, 2, 3), 0, 1), *y = vg_randn(&r, VG_DIMS(3, 3, 2), 0, 1);
    vg_tensor *z = vg_matmul(x, y);
    REQUIRE(z && z->ndim == 4 && z->shape[0] == 2 && z->shape[1] == 3);
    double want = 0;
    for (int k = 0; k < 3; k++) want += vg_get(x, (int64_t[]){1, 0, 1, k}) * vg_get(y, (int64_t[]){2, k, 0});
    CHECK_CLOSE(vg_get(z, (int64_t[]){1, 2, 1, 0}), want, 1e-5);
    vg_arena_reset();
}

VG_TEST(concat_and_print) {
    vg_tensor *a = vg_from_array(VG_DIMS(1, 2), (real[]){1, 2});
    vg_tensor *b = vg_from_array(VG_DIMS(2, 2), (real[]){3, 4, 5, 6});
    vg_tensor *c = vg_concat(2, (vg_tensor *[]){a, b}, 0);
    CHECK(c && c->shape[0] == 3 && equals_array(c, (real[]){1, 2, 3, 4, 5, 6}, 6));
    CHECK(vg_concat(2, (vg_tensor *[]){a, b}, 1) == NULL && strstr(vg_error(), "incompatible"));
    char buf[4096] = {0};
    FILE *f = fmemopen(buf, sizeof buf, "w");
    vg_fprint(f, vg_transpose(b, 0, 1), "bt", -1);
    fclose(f);
    CHECK(strstr(buf, "shape (2, 2)") && strstr(buf, "strides (1, 2)") && strstr(buf, "[[3, 5],\n [4, 6]]"));
    vg_arena_reset();
}

VG_TEST(arena_mark_release_and_reuse) {
    vg_arena_reset();
    vg_arena_mark m = vg_arena_get_mark();
    size_t before = vg_arena_bytes_used();
    vg_tensor *big = vg_zeros(VG_DIMS(1 << 20));            /* 4 MiB */
    CHECK(big && vg_arena_bytes_used() >= before + (4u << 20));
    void *p1 = vg_data(big);
    vg_arena_release(m);
    CHECK(vg_arena_bytes_used() == before);
    vg_tensor *again = vg_zeros(VG_DIMS(1 << 20));
    CHECK(vg_data(again) == p1);                            /* same memory handed out again */
    CHECK(((uintptr_t)vg_data(again) & 63) == 0);           /* 64-byte aligned */
    size_t reserved = vg_arena_bytes_reserved();
    vg_tensor *huge = vg_empty(VG_DIMS(40 << 20));          /* larger than a chunk */
    CHECK(huge != NULL);
    vg_arena_reset();
    vg_empty(VG_DIMS(40 << 20));
    vg_arena_reset();
    CHECK(vg_arena_bytes_reserved() <= reserved + (160u << 20) + (64u << 20));
}
