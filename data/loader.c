/* loader.c — batches (B, C, S, S) built ahead of the training loop by worker pthreads.
 *
 * Determinism: a batch is a pure function of (root generator, epoch, position). The epoch's
 * order and each sample's augmentation come from generators derived by hashing (root, epoch,
 * sample index), so which worker builds which batch, and how many workers there are, cannot
 * change a single bit. Batches are numbered by a sequence counter; the consumer takes them
 * strictly in sequence order, an end-of-epoch marker taking one number.
 *
 * Slots: prefetch + 1 buffers (one may be held by the caller). Slot states move
 * FREE -> FILLING (a worker owns it) -> READY -> HELD (the caller owns it) -> FREE.
 * vg_loader_state_set bumps a generation counter: batches being built for the old position are
 * thrown away when they finish. */
#include "data/internal.h"
#include "base/clock.h"
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { FREE, FILLING, READY, HELD };

typedef struct perm { uint64_t epoch; int refs; int32_t *idx; } perm;

typedef struct slot {
    int state, end, n, lo, gn;  /* n samples of this shard from lo, of gn in the global batch */
    uint64_t seq, gen, epoch, index;
    vg_rng root;
    perm *p;            /* NULL: dataset order (eval) */
    real *x;
    int32_t *y;
    uint8_t *u8;        /* RandAugment: the uint8 image and the ops' scratch, 2·C·S·S */
} slot;

struct vg_loader {
    const vg_dataset *d;
    vg_loader_config cfg;
    vg_aug aug;                 /* resolved (never AUTO) */
    int C, S;
    size_t elems;               /* C*S*S */
    const float *mean, *std;    /* NULL when cfg.normalize == 0 */
    vg_loader_state st;         /* consumer position */
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_ready;
    uint64_t job_epoch, job_index, next_seq, want_seq, gen;
    vg_rng root;
    perm *cur_perm;
    int nslots, held, stop;
    slot *slots;
    pthread_t *threads;
    int n_started;
    double wait_s;
    uint64_t calls;
};

/* ---- deterministic generators: vg_rng_derive(root, epoch, sample) (tensor/rng.c) ---- */
#define PERM_TAG UINT64_MAX   /* b for the epoch order; sample indices are < 2^31 */

static perm *perm_new(const vg_rng *root, uint64_t epoch, int n) {
    perm *p = malloc(sizeof *p);
    if (!p) return NULL;
    p->idx = malloc((size_t)n * sizeof *p->idx);
    if (!p->idx) { free(p); return NULL; }
    p->epoch = epoch; p->refs = 1;
    for (int i = 0; i < n; i++) p->idx[i] = i;
    vg_rng r = vg_rng_derive(root, epoch, PERM_TAG);
    for (int i = n - 1; i > 0; i--) {      /* Fisher-Yates */
        int j = (int)vg_rng_below(&r, (uint32_t)i + 1);
        int32_t t = p->idx[i]; p->idx[i] = p->idx[j]; p->idx[j] = t;
    }
    return p;
}
static void perm_release(perm *p) { if (p && --p->refs == 0) { free(p->idx); free(p); } }

/* ---- producing ---- */
static int has_batch(const vg_loader *L, uint64_t index) {
    uint64_t n = (uint64_t)L->d->n, B = (uint64_t)L->cfg.batch_size;
    return L->cfg.train ? index + B <= n : index < n;
}

/* this shard's part [lo, lo + n) of a global batch of gn samples */
static void shard_range(int gn, int shard, int n_shards, int *lo, int *n) {
    if (n_shards <= 1) { *lo = 0; *n = gn; return; }
    *lo = (int)((int64_t)gn * shard / n_shards);
    *n = (int)((int64_t)gn * (shard + 1) / n_shards) - *lo;
}

/* give slot s the next job in sequence (caller holds mu or is single-threaded); 0 or -1 (OOM) */
static int assign(vg_loader *L, slot *s) {
    s->seq = L->next_seq++; s->gen = L->gen; s->root = L->root;
    s->epoch = L->job_epoch; s->p = NULL; s->n = s->lo = s->gn = 0; s->index = L->job_index;
    if (!has_batch(L, L->job_index)) {
        s->end = 1;
        L->job_epoch++; L->job_index = 0;
        perm_release(L->cur_perm); L->cur_perm = NULL;
        return 0;
    }
    s->end = 0;
    if (L->cfg.train) {
        if (!L->cur_perm) L->cur_perm = perm_new(&L->root, L->job_epoch, L->d->n);
        if (!L->cur_perm) return -1;
        s->p = L->cur_perm; s->p->refs++;
    }
    uint64_t left = (uint64_t)L->d->n - L->job_index;
    s->gn = left < (uint64_t)L->cfg.batch_size ? (int)left : L->cfg.batch_size;
    shard_range(s->gn, L->cfg.shard, L->cfg.n_shards, &s->lo, &s->n);
    L->job_index += (uint64_t)L->cfg.batch_size;
    return 0;
}

/* the crop and flip of a training sample (or the eval transform) into out, normalised with
 * (mean, std) or as x/255 when mean == NULL; r: the sample's generator */
static void crop_one(const vg_loader *L, vg_rng *rp, int sample, real *out, const float *mean, const float *std) {
    const vg_dataset *d = L->d;
    const vg_loader_config *c = &L->cfg;
    int h, w;
    const uint8_t *img = vg_dataset_image(d, sample, &h, &w);
    if (!rp) { vg_eval_transform(img, L->C, h, w, L->S, out, mean, std); return; }
    if (L->aug == VG_AUG_PAD_CROP) {
        int oy = (int)vg_rng_below(rp, (uint32_t)(2 * c->crop_pad + 1));
        int ox = (int)vg_rng_below(rp, (uint32_t)(2 * c->crop_pad + 1));
        int flip = c->hflip && vg_rng_uniform(rp) < 0.5;
        vg_pad_crop_flip(img, L->C, h, w, c->crop_pad, oy, ox, flip, out, mean, std);
    } else if (L->aug == VG_AUG_RRC) {
        int x0, y0, bw, bh;
        vg_rrc_params(rp, h, w, c->scale_min, c->scale_max, c->ratio_min, c->ratio_max, &x0, &y0, &bw, &bh);
        int flip = c->hflip && vg_rng_uniform(rp) < 0.5;
        vg_resample_box(img, L->C, h, w, x0, y0, bw, bh, out, L->S, L->S, flip, mean, std);
    } else {  /* NONE: eval geometry, flip only */
        int flip = c->hflip && vg_rng_uniform(rp) < 0.5;
        if (h == L->S && w == L->S) vg_pad_crop_flip(img, L->C, h, w, 0, 0, 0, flip, out, mean, std);
        else {
            vg_resize_center_crop(img, L->C, h, w, L->S, out, mean, std);
            if (flip)
                for (int ch = 0; ch < L->C; ch++)
                    for (int y = 0; y < L->S; y++) {
                        real *row = out + ((size_t)ch * L->S + y) * L->S;
                        for (int a = 0, b = L->S - 1; a < b; a++, b--) { real t = row[a]; row[a] = row[b]; row[b] = t; }
                    }
        }
    }
}

/* a sample as the model sees it: crop and flip; RandAugment on the uint8 crop; normalise; random
 * erasing. Every draw comes from the sample's own generator derived from (root, epoch, sample). */
static void transform_one(const vg_loader *L, const slot *s, int sample, real *out) {
    const vg_loader_config *c = &L->cfg;
    if (!c->train) { crop_one(L, NULL, sample, out, L->mean, L->std); return; }
    vg_rng r = vg_rng_derive(&s->root, s->epoch, (uint64_t)sample);
    if (!c->randaugment) crop_one(L, &r, sample, out, L->mean, L->std);
    else {
        uint8_t *img = s->u8, fill[3];
        crop_one(L, &r, sample, out, NULL, NULL);                     /* x/255 */
        for (size_t i = 0; i < L->elems; i++) img[i] = (uint8_t)lrint((double)out[i] * 255.0);
        for (int ch = 0; ch < L->C && ch < 3; ch++) fill[ch] = (uint8_t)lrint(255.0 * L->d->mean[ch]);
        vg_randaugment_apply(&c->ra, img, L->C, L->S, L->S, fill, &r, img + L->elems);
        vg_pad_crop_flip(img, L->C, L->S, L->S, 0, 0, 0, 0, out, L->mean, L->std);
    }
    if (c->reprob > 0) vg_random_erasing(out, L->C, L->S, L->S, c->reprob, &r);
}

static void fill(const vg_loader *L, slot *s) {
    for (int k = 0; k < s->n; k++) {
        uint64_t pos = s->index + (uint64_t)(s->lo + k);
        int sample = s->p ? s->p->idx[pos] : (int)pos;
        transform_one(L, s, sample, s->x + (size_t)k * L->elems);
        s->y[k] = L->d->labels[sample];
    }
}

static slot *free_slot(vg_loader *L) {
    for (int i = 0; i < L->nslots; i++) if (L->slots[i].state == FREE) return &L->slots[i];
    return NULL;
}

static void *worker(void *arg) {
    vg_loader *L = arg;
    /* SCHED_BATCH: a worker woken by the consumer does not preempt it (on 2 cores it otherwise
     * often runs on the consumer's core, which then "waits" a whole batch build) */
    struct sched_param sp = {0};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
    pthread_mutex_lock(&L->mu);
    while (!L->stop) {
        slot *s = free_slot(L);
        if (!s || L->next_seq - L->want_seq >= (uint64_t)L->cfg.prefetch) { pthread_cond_wait(&L->cv_work, &L->mu); continue; }
        if (assign(L, s)) { L->stop = 1; pthread_cond_broadcast(&L->cv_ready); break; } /* OOM */
        s->state = FILLING;
        if (!s->end) { pthread_mutex_unlock(&L->mu); fill(L, s); pthread_mutex_lock(&L->mu); }
        perm_release(s->p); s->p = NULL;
        if (s->gen != L->gen) { s->state = FREE; pthread_cond_broadcast(&L->cv_work); }
        else { s->state = READY; pthread_cond_broadcast(&L->cv_ready); }
    }
    pthread_mutex_unlock(&L->mu);
    return NULL;
}

/* ---- public ---- */
vg_loader_config vg_loader_config_default(void) {
    vg_loader_config c;
    memset(&c, 0, sizeof c);
    c.batch_size = 128; c.train = 1; c.image_size = 0; c.n_threads = 2; c.prefetch = 3; c.seed = 0;
    c.aug = VG_AUG_AUTO; c.crop_pad = 4; c.hflip = 1;
    c.scale_min = 0.08; c.scale_max = 1.0; c.ratio_min = 3.0 / 4.0; c.ratio_max = 4.0 / 3.0;
    c.normalize = 1;
    c.shard = 0; c.n_shards = 1;
    return c;
}

void vg_loader_free(vg_loader *L) {
    if (!L) return;
    pthread_mutex_lock(&L->mu);
    L->stop = 1;
    pthread_cond_broadcast(&L->cv_work);
    pthread_mutex_unlock(&L->mu);
    for (int i = 0; i < L->n_started; i++) pthread_join(L->threads[i], NULL);
    for (int i = 0; i < L->nslots && L->slots; i++) { free(L->slots[i].x); free(L->slots[i].y); free(L->slots[i].u8); perm_release(L->slots[i].p); }
    perm_release(L->cur_perm);
    free(L->slots); free(L->threads);
    pthread_mutex_destroy(&L->mu); pthread_cond_destroy(&L->cv_work); pthread_cond_destroy(&L->cv_ready);
    free(L);
}

vg_loader *vg_loader_new(const vg_dataset *d, const vg_loader_config *cfg, char *err, size_t errlen) {
    vg_loader_config c = cfg ? *cfg : vg_loader_config_default();
    if (!d || d->n <= 0) { vg__err(err, errlen, "loader: empty dataset"); return NULL; }
    if (c.batch_size < 1) { vg__err(err, errlen, "loader: batch_size %d must be >= 1", c.batch_size); return NULL; }
    if (c.train && c.batch_size > d->n) { vg__err(err, errlen, "loader: training batch size %d is larger than the dataset (%d images, %s): no full batch", c.batch_size, d->n, d->path); return NULL; }
    if (c.n_threads < 0 || c.n_threads > 64) { vg__err(err, errlen, "loader: n_threads %d out of range 0..64", c.n_threads); return NULL; }
    if (c.prefetch < 1 || c.prefetch > 64) { vg__err(err, errlen, "loader: prefetch %d out of range 1..64", c.prefetch); return NULL; }
    if (c.n_shards < 1) c.n_shards = 1;
    if (c.shard < 0 || c.shard >= c.n_shards) { vg__err(err, errlen, "loader: shard %d out of range 0..%d", c.shard, c.n_shards - 1); return NULL; }
    if (c.train && c.batch_size % c.n_shards) { vg__err(err, errlen, "loader: batch size %d is not divisible by %d shards (processes)", c.batch_size, c.n_shards); return NULL; }
    int S = c.image_size;
    if (S == 0) {
        if (!d->height || d->height != d->width) { vg__err(err, errlen, "loader: %s images are not all square of one size; set image_size", d->path); return NULL; }
        S = d->height;
    }
    if (S < 1 || S > 4096) { vg__err(err, errlen, "loader: image_size %d out of range", S); return NULL; }
    int native = d->height == S && d->width == S;
    vg_aug aug = c.aug;
    if (aug == VG_AUG_AUTO) aug = native ? VG_AUG_PAD_CROP : VG_AUG_RRC;
    if (aug == VG_AUG_PAD_CROP && !native) { vg__err(err, errlen, "loader: pad-and-crop augmentation needs every image to be %dx%d already (%s)", S, S, d->path); return NULL; }
    if (aug == VG_AUG_PAD_CROP && (c.crop_pad < 0 || c.crop_pad > S)) { vg__err(err, errlen, "loader: crop_pad %d out of range 0..%d", c.crop_pad, S); return NULL; }
    if (aug == VG_AUG_RRC && !(c.scale_min > 0 && c.scale_min <= c.scale_max && c.scale_max <= 1 && c.ratio_min > 0 && c.ratio_min <= c.ratio_max)) {
        vg__err(err, errlen, "loader: random-resized-crop needs 0 < scale_min <= scale_max <= 1 and 0 < ratio_min <= ratio_max"); return NULL;
    }
    if (c.train && !(c.reprob >= 0 && c.reprob <= 1)) { vg__err(err, errlen, "loader: random-erasing probability %g is not in [0, 1]", c.reprob); return NULL; }
    if (c.train && c.randaugment && d->channels != 1 && d->channels != 3) { vg__err(err, errlen, "loader: RandAugment needs 1- or 3-channel images (%s has %d)", d->path, d->channels); return NULL; }
    vg_loader *L = calloc(1, sizeof *L);
    if (!L) { vg__err(err, errlen, "out of memory"); return NULL; }
    pthread_mutex_init(&L->mu, NULL); pthread_cond_init(&L->cv_work, NULL); pthread_cond_init(&L->cv_ready, NULL);
    L->d = d; L->cfg = c; L->aug = aug; L->C = d->channels; L->S = S;
    L->elems = (size_t)L->C * S * S;
    L->mean = c.normalize ? d->mean : NULL; L->std = c.normalize ? d->std : NULL;
    L->root = vg_rng_seed(c.seed);
    L->st.rng = L->root;
    L->held = -1;
    L->nslots = c.n_threads ? c.prefetch + 1 : 1;
    L->slots = calloc((size_t)L->nslots, sizeof *L->slots);
    if (!L->slots) goto oom;
    const size_t per_shard = (size_t)((c.batch_size + c.n_shards - 1) / c.n_shards);
    size_t xbytes = (per_shard * L->elems * sizeof(real) + 63) / 64 * 64;
    for (int i = 0; i < L->nslots; i++) {
        L->slots[i].x = aligned_alloc(64, xbytes);
        L->slots[i].y = malloc(per_shard * sizeof(int32_t));
        if (c.randaugment) L->slots[i].u8 = malloc(2 * L->elems);
        if (!L->slots[i].x || !L->slots[i].y || (c.randaugment && !L->slots[i].u8)) goto oom;
    }
    if (c.n_threads) {
        L->threads = calloc((size_t)c.n_threads, sizeof *L->threads);
        if (!L->threads) goto oom;
        /* workers start with SIGINT and SIGTERM blocked: a program's stop signal reaches its own
         * thread (./train's graceful stop), never a worker in the middle of a batch */
        sigset_t stop, old;
        sigemptyset(&stop); sigaddset(&stop, SIGINT); sigaddset(&stop, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &stop, &old);
        for (int i = 0; i < c.n_threads; i++) {
            if (pthread_create(&L->threads[i], NULL, worker, L) != 0) {
                pthread_sigmask(SIG_SETMASK, &old, NULL);
                vg__err(err, errlen, "loader: cannot start worker thread %d", i); vg_loader_free(L); return NULL;
            }
            L->n_started++;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    return L;
oom:
    vg_loader_free(L);
    vg__err(err, errlen, "loader: out of memory for batch buffers");
    return NULL;
}

int vg_loader_next(vg_loader *L, vg_batch *b) {
    double t0 = vg_now_s();
    slot *s = NULL;
    L->calls++;
    if (!L->cfg.n_threads) {
        if (L->held >= 0) { L->slots[L->held].state = FREE; L->held = -1; }
        s = &L->slots[0];
        if (assign(L, s)) { memset(b, 0, sizeof *b); return 0; } /* OOM: treat as end */
        if (!s->end) fill(L, s);
        perm_release(s->p); s->p = NULL;
        L->want_seq++;
    } else {
        pthread_mutex_lock(&L->mu);
        if (L->held >= 0) { L->slots[L->held].state = FREE; L->held = -1; pthread_cond_broadcast(&L->cv_work); }
        for (;;) {
            for (int i = 0; i < L->nslots && !s; i++)
                if (L->slots[i].state == READY && L->slots[i].seq == L->want_seq && L->slots[i].gen == L->gen) s = &L->slots[i];
            if (s || L->stop) break;
            pthread_cond_wait(&L->cv_ready, &L->mu);
        }
        if (!s) { pthread_mutex_unlock(&L->mu); memset(b, 0, sizeof *b); L->wait_s += vg_now_s() - t0; return 0; }
        L->want_seq++;
        s->state = HELD;
        pthread_cond_broadcast(&L->cv_work);
        pthread_mutex_unlock(&L->mu);
    }
    L->wait_s += vg_now_s() - t0;
    if (s->end) {
        L->st.epoch = s->epoch + 1; L->st.index = 0;   /* read before the slot is handed back */
        if (L->cfg.n_threads) { pthread_mutex_lock(&L->mu); s->state = FREE; pthread_cond_broadcast(&L->cv_work); pthread_mutex_unlock(&L->mu); }
        memset(b, 0, sizeof *b);
        return 0;
    }
    L->held = (int)(s - L->slots);
    L->st.epoch = s->epoch; L->st.index = s->index + (uint64_t)s->gn;
    b->n = s->n; b->c = L->C; b->h = L->S; b->w = L->S;
    b->x = s->x; b->y = s->y; b->epoch = s->epoch; b->index = s->index;
    b->offset = s->lo; b->global_n = s->gn;
    return 1;
}

vg_loader_state vg_loader_state_get(const vg_loader *L) { return L->st; }

int vg_loader_state_set(vg_loader *L, const vg_loader_state *s, char *err, size_t errlen) {
    if (s->index > (uint64_t)L->d->n)
        return vg__err(err, errlen, "loader state: position %llu is past the end of %s (%d images); saved for another dataset?",
                       (unsigned long long)s->index, L->d->path, L->d->n);
    pthread_mutex_lock(&L->mu);
    L->gen++;
    for (int i = 0; i < L->nslots; i++)
        if (L->slots[i].state == READY || L->slots[i].state == HELD) L->slots[i].state = FREE;
    L->held = -1;
    L->want_seq = L->next_seq;
    L->job_epoch = s->epoch; L->job_index = s->index;
    L->root = s->rng;
    perm_release(L->cur_perm); L->cur_perm = NULL;
    L->st = *s;
    pthread_cond_broadcast(&L->cv_work);
    pthread_mutex_unlock(&L->mu);
    return 0;
}

int vg_loader_batches_per_epoch(const vg_loader *L) {
    int n = L->d->n, B = L->cfg.batch_size;
    return L->cfg.train ? n / B : (n + B - 1) / B;
}
double vg_loader_wait_seconds(const vg_loader *L) { return L->wait_s; }
uint64_t vg_loader_calls(const vg_loader *L) { return L->calls; }
