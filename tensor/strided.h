/* strided.h — private: row-by-row iteration over up to three strided operands of one shape. */
#ifndef VG_STRIDED_H
#define VG_STRIDED_H
#include "tensor.h"

/* Visit every element of `shape` in row-major order, calling row() once per innermost row with
 * the offsets of that row in up to three strided operands. */
typedef struct {
    int ndim; const int64_t *shape;
    const int64_t *strides[3]; int64_t offsets[3]; int n_ops;
} strided_iter;

#define FOR_EACH_ROW(it, ...)                                                              \
    do {                                                                                   \
        int64_t idx_[VG_MAX_DIMS] = {0};                                                   \
        int nd_ = (it).ndim;                                                               \
        int64_t total_ = 1;                                                                \
        for (int d_ = 0; d_ < nd_ - 1; d_++) total_ *= (it).shape[d_];                     \
        if (nd_ > 0 && (it).shape[nd_ - 1] == 0) total_ = 0;                               \
        int64_t o_[3] = {(it).offsets[0], (it).offsets[1], (it).offsets[2]};               \
        for (int64_t r_ = 0; r_ < total_; r_++) {                                          \
            __VA_ARGS__;                                                                   \
            for (int d_ = nd_ - 2; d_ >= 0; d_--) {                                        \
                for (int k_ = 0; k_ < (it).n_ops; k_++) o_[k_] += (it).strides[k_][d_];    \
                if (++idx_[d_] < (it).shape[d_]) break;                                    \
                for (int k_ = 0; k_ < (it).n_ops; k_++)                                    \
                    o_[k_] -= (it).strides[k_][d_] * (it).shape[d_];                       \
                idx_[d_] = 0;                                                              \
            }                                                                              \
        }                                                                                  \
    } while (0)

/* FOR_EACH_ROW with the outermost dimension split over OpenMP's threads when `big` is true (and
 * the shape has at least two dimensions): each index of dimension 0 is its own sub-iteration, so
 * the rows are visited in an unspecified order — only for bodies whose rows are independent
 * (element-wise results, copies). */
#define FOR_EACH_ROW_PARALLEL(it, big, ...)                                                  \
    do {                                                                                   \
        if (!(big) || (it).ndim < 2) { FOR_EACH_ROW(it, __VA_ARGS__); break; }             \
        const int64_t n0_ = (it).shape[0];                                                 \
        _Pragma("omp parallel for schedule(static)")                                       \
        for (int64_t i0_ = 0; i0_ < n0_; i0_++) {                                          \
            int64_t sh_[VG_MAX_DIMS];                                                      \
            for (int d0_ = 0; d0_ < (it).ndim; d0_++) sh_[d0_] = (it).shape[d0_];          \
            sh_[0] = 1;                                                                    \
            strided_iter sub_ = (it);                                                      \
            sub_.shape = sh_;                                                              \
            for (int k0_ = 0; k0_ < (it).n_ops; k0_++)                                     \
                sub_.offsets[k0_] += i0_ * (it).strides[k0_][0];                           \
            FOR_EACH_ROW(sub_, __VA_ARGS__);                                               \
        }                                                                                  \
    } while (0)

#endif
