/* options.c — ./train's flags: one table row per flag (name, value, help, where it is stored, its
 * range or choices). The parser and --help both read the table, so a flag cannot exist without
 * its help line. A row with `section` set starts a heading in --help. The model's flags are the
 * rows of vit/vit_fields.h, expanded into the table (their ranges and help from there too).
 * Every usage error names the flag given and exits 2; a misspelt flag gets "did you mean". */
#include "run/run.h"
#include "tensor/tensor.h"
#include "vit/vit_fields.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    F_SWITCH,      /* bool, no value */
    F_INT,         /* int in [lo, hi] */
    F_I64,         /* int64_t in [lo, hi] */
    F_U64,         /* uint64_t in [lo, hi] */
    F_REAL,        /* double in [lo, hi] */
    F_STR,         /* const char *, any value */
    F_CHOICE,      /* const char *, one of `choices` ("a|b|c") */
    F_LENGTH,      /* N, Ns (steps) or Ne (epochs): a double and the run_unit right after it */
    F_MODEL,       /* a field of the model (vit/vit_fields.h): the text kept in options.ov[field] */
} flag_kind;

typedef struct {
    const char *section;     /* non-NULL: a heading printed before this flag */
    const char *name, *metavar;
    flag_kind kind;
    size_t offset;           /* into options */
    double lo, hi;           /* F_INT/F_I64/F_U64/F_REAL */
    const char *choices;     /* F_CHOICE; a choice after '/' is accepted but not listed */
    const char *help;        /* '\n' continues on an indented line */
    int field;               /* F_MODEL: the field (VG_VIT_F_*) */
} flag_def;

#define OPT(field) offsetof(options, field)
_Static_assert(offsetof(options, warmup_unit) == offsetof(options, warmup) + sizeof(double) &&
               offsetof(options, patch_drop_until_unit) == offsetof(options, patch_drop_until) + sizeof(double),
               "F_LENGTH: a run_unit right after its double");
#define IMAX ((double)(INT64_MAX / 4))
static const flag_def flags[] = {
    {"data", "--dataset", "NAME", F_CHOICE, OPT(dataset), 0, 0, "cifar10|imagefolder|fashion-mnist/mnist",
     "cifar10 | imagefolder | fashion-mnist            (default cifar10)"},
    {NULL, "--data", "DIR", F_STR, OPT(data), 0, 0, NULL,
     "dataset folder (default: $CIFAR10_DIR, ./data/cifar-10-batches-bin,\n"
     "../shared/data/cifar-10-batches-bin; fashion-mnist: $FASHION_MNIST_DIR,\n"
     "/usr/share/datasets/fashion-mnist; imagefolder: $IMAGENET_SUBSET_DIR,\n"
     "../shared/data/imagenet-subset)"},
    {NULL, "--aug", "KIND", F_CHOICE, OPT(aug), 0, 0, "auto|none|crop|rrc",
     "auto | none | crop | rrc  (crop = 4-px pad + random crop, rrc =\n"
     "random-resized-crop; both with horizontal flip)      (default auto)"},
    {NULL, "--loader-threads", "N", F_INT, OPT(loader_threads), 0, 64, NULL, "background data threads (default 1)"},
    {NULL, "--aa", "SPEC", F_STR, OPT(aa), 0, 0, NULL,
     "RandAugment: timm's config string, e.g. rand-m9-mstd0.5-inc1\n"
     "(rand-m<M>[-n<N>][-mstd<S>][-mmax<X>][-p<P>][-inc1]) or trivial\n"
     "(TrivialAugment over timm's ops); after crop/flip (default off)"},
    {NULL, "--reprob", "P", F_REAL, OPT(reprob), 0, 1, NULL,
     "random erasing probability (timm's per-pixel mode, on the\n"
     "normalised image) (default 0)"},
    {NULL, "--mixup", "A", F_REAL, OPT(mixup), 0, 100, NULL, "Mixup: lambda ~ Beta(A, A) per batch; 0 = off (default 0)"},
    {NULL, "--cutmix", "A", F_REAL, OPT(cutmix), 0, 100, NULL,
     "CutMix: lambda ~ Beta(A, A), box pasted from the flipped batch,\n"
     "lambda corrected to the box's area; 0 = off (default 0)"},
    {NULL, "--mixup-prob", "P", F_REAL, OPT(mixup_prob), 0, 1, NULL, "chance a batch is mixed at all (default 1)"},
    {NULL, "--mixup-switch-prob", "P", F_REAL, OPT(mixup_switch_prob), 0, 1, NULL,
     "with both on: chance of CutMix instead of Mixup (default 0.5)"},

    {"model", "--model", "PRESET", F_STR, OPT(model), 0, 0, NULL,
     "(default: vit-tiny-cifar; vit-mnist for fashion-mnist; vit-tiny-in64\n"
     "for imagefolder). The flags below override the preset:"},
    /* the model's fields with a flag, in vit_fields.h's order (rows without a flag: name NULL) */
#define X(KIND, type, name, def, lo, hi, META, CMP, flag, metavar, help) \
    {NULL, flag, metavar, F_MODEL, 0, lo, hi, NULL, help, VG_VIT_F_##name},
    VG_VIT_FIELDS(X)
#undef X
    {NULL, "--patch-drop-until", "N[s|e]", F_LENGTH, OPT(patch_drop_until), 0, 1e12, NULL,
     "patch dropout only up to epoch (step) N, then every patch for the\n"
     "rest of the run: the model meets the token count it is evaluated\n"
     "on before the end (FLIP's unmasked tuning); units as --warmup\n"
     "(default: patch dropout to the end)"},
    {NULL, "--full-last-block", NULL, F_SWITCH, OPT(full_last_block), 0, 0, NULL,
     "compute every token in the last block, as timm does (with CLS\n"
     "pooling only the class token's output is read, so by default the\n"
     "last block computes that token alone: the same results, less work);\n"
     "for timing against PyTorch on equal work"},

    {"schedule", "--epochs", "N", F_INT, OPT(epochs), 1, 100000, NULL, "epochs to train (default 30)"},
    {NULL, "--steps", "N", F_I64, OPT(steps), 1, IMAX, NULL, "train N steps instead of whole epochs"},
    {NULL, "--batch", "N", F_INT, OPT(batch), 1, 65536, NULL, "batch size (default 128)"},
    {NULL, "--lr", "X", F_REAL, OPT(lr), 0, 10, NULL, "peak learning rate (default 1e-3)"},
    {NULL, "--wd", "X", F_REAL, OPT(wd), 0, 10, NULL, "AdamW weight decay (default 0.05)"},
    {NULL, "--warmup", "N[s|e]", F_LENGTH, OPT(warmup), 0, 1e12, NULL,
     "linear warmup, in epochs with --epochs, in steps with --steps;\n"
     "a suffix 's' or 'e' says which (default 10% of training)"},
    {NULL, "--min-lr", "X", F_REAL, OPT(min_lr), 0, 10, NULL, "cosine decays to this (default 1e-5)"},
    {NULL, "--layer-decay", "X", F_REAL, OPT(layer_decay), 0, 1, NULL,
     "layer-wise lr decay for fine-tuning (timm's): block i learns at\n"
     "lr*X^(depth-i), the embeddings at lr*X^(depth+1), the final norm\n"
     "and head at lr; 0 or 1 = off (default off)"},
    {NULL, "--muon", NULL, F_SWITCH, OPT(muon), 0, 0, NULL,
     "Muon (torch.optim.Muon, nesterov) for the blocks' 2-d weights (qkv,\n"
     "proj, fc1, fc2), AdamW for the rest; its Newton-Schulz FLOPs are\n"
     "counted in the run's compute"},
    {NULL, "--muon-lr", "X", F_REAL, OPT(muon_lr), 0, 10, NULL,
     "Muon's peak lr, on the same warmup + cosine (default: --lr)"},
    {NULL, "--muon-momentum", "M", F_REAL, OPT(muon_momentum), 0, 0.999999, NULL, "(default 0.95)"},
    {NULL, "--muon-adjust", "FN", F_CHOICE, OPT(muon_adjust), 0, 0, "match_rms_adamw|original",
     "the update's scale: match_rms_adamw 0.2*sqrt(max(rows, cols)) (Moonshot;\n"
     "AdamW's lr and wd carry over) or original sqrt(max(1, rows/cols))\n"
     "(Keller Jordan's, torch's default; with a lr near 0.02) (default\n"
     "match_rms_adamw)"},
    {NULL, "--label-smoothing", "X", F_REAL, OPT(label_smoothing), 0, 0.999, NULL, "(default 0.1); with Mixup/CutMix folded into the soft targets"},
    {NULL, "--smoothing", "X", F_REAL, OPT(label_smoothing), 0, 0.999, NULL, "the same (timm's name)"},
    {NULL, "--grad-accum-steps", "K", F_INT, OPT(grad_accum_steps), 1, 4096, NULL,
     "K micro-batches of --batch per optimizer step: the update of one\n"
     "batch K times larger (default 1)"},
    {NULL, "--model-ema", NULL, F_SWITCH, OPT(model_ema), 0, 0, NULL,
     "keep an EMA of the weights (timm's ModelEmaV2), evaluated beside\n"
     "the model and saved as model_ema.safetensors (same keys)"},
    {NULL, "--model-ema-decay", "D", F_REAL, OPT(model_ema_decay), 0, 1, NULL,
     "ema = D*ema + (1-D)*model after each optimizer step (default 0.9998)"},
    {NULL, "--clip", "X", F_REAL, OPT(clip), 0, 1e9, NULL, "clip the global gradient norm to X; 0 = off (default 1.0)"},
    {NULL, "--seed", "N", F_U64, OPT(seed), 0, (double)INT64_MAX, NULL, "seeds init, shuffling, augmentation, dropout (default 0)"},
    {NULL, "--threads", "N", F_INT, OPT(threads), 1, 1024, NULL,
     "compute threads per process (default: the process's share of its\n"
     "node's cores; all of them for a single process)"},
    {NULL, "--amp", NULL, F_SWITCH, OPT(amp), 0, 0, NULL,
     "bf16 mixed precision (timm's flag; as torch.autocast on CPU): the\n"
     "matrix products of Linear, the patch conv and attention take bf16\n"
     "inputs and sum in FP32, forward and backward; weights, gradients,\n"
     "AdamW and checkpoints stay FP32. Where no bf16 kernel beats FP32\n"
     "(no AMX, and vdpbf16ps at half the FMA rate as on Intel) it runs\n"
     "FP32 GEMMs and says so (--amp-kernel)"},
    {NULL, "--amp-kernel", "NAME", F_CHOICE, OPT(amp_kernel), 0, 0, "auto|amx|vdpbf16ps|rounded|fp32",
     "with --amp, the bf16 GEMM: auto (the default: AMX tiles where usable,\n"
     "else vdpbf16ps where it outruns FP32 (AMD Zen 4/5), else fp32),\n"
     "amx, vdpbf16ps, rounded (bf16-rounded inputs on the FP32 kernel: bf16\n"
     "numbers on any CPU, slower) or fp32 (FP32 GEMMs, the bits of no --amp);\n"
     "also VG_BF16_GEMM"},
    {NULL, "--amp-dtype", "TYPE", F_CHOICE, OPT(amp_dtype), 0, 0, "bfloat16|float16",
     "with --amp: bfloat16 (the default; float16 is refused)"},

    {"several processes (make MPI=1; mpirun -np N ./train: --batch is the global batch)",
     "--bucket-mb", "X", F_REAL, OPT(bucket_mb), 0.001, 4096, NULL,
     "sum gradients over the processes in buckets of X MiB, each as soon\n"
     "as backward has finished it (default 2)"},
    {NULL, "--comm-timeout", "S", F_REAL, OPT(comm_timeout), 1, 1e6, NULL,
     "end the job when the other processes do not answer for S seconds\n"
     "(a process died or cannot be reached) (default 300)"},

    {"output", "--out", "DIR", F_STR, OPT(out), 0, 0, NULL, "metrics.csv, checkpoints (default runs/last)"},
    {NULL, "--eval-every", "N", F_I64, OPT(eval_every), 0, IMAX, NULL,
     "evaluate every N epochs (steps with --steps); 0 = only at the end\n"
     "(default: every epoch; with --steps N every ceil(N/10) steps)"},
    {NULL, "--eval-batch", "N", F_INT, OPT(eval_batch), 1, 65536, NULL,
     "evaluation batch size (default: --batch, so evaluation needs no more\n"
     "memory than a training step)"},
    {NULL, "--tta", "KIND", F_CHOICE, OPT(tta), 0, 0, "none|flip",
     "test-time augmentation: flip also evaluates each image's mirror and\n"
     "averages the two logits (airbench's); printed and logged (metrics.csv\n"
     "tta_test_*) beside the plain figures; evaluation costs 2x (default none)"},
    {NULL, "--save-every", "N", F_I64, OPT(save_every), 0, IMAX, NULL,
     "checkpoint every N epochs (steps with --steps); 0 = only at the end\n"
     "(default: every epoch; with --steps N every ceil(N/10) steps)"},
    {NULL, "--snapshots", "N", F_INT, OPT(snapshots), 0, 10000, NULL,
     "weights saved in OUT/snapshots at N moments (step 0, ~1 %, evaluations)\n"
     "beside per-layer norms, for ./inspect report; 0 = none (default 8)"},
    {NULL, "--log-every", "N", F_I64, OPT(log_every), 1, IMAX, NULL, "log line / metrics row every N steps (default 50)"},
    {NULL, "--stop-at", "N", F_I64, OPT(stop_at), 1, IMAX, NULL,
     "save a checkpoint and stop after step N, as if interrupted (the\n"
     "schedule still spans --epochs/--steps; continue with --resume)"},
    {NULL, "--overwrite", NULL, F_SWITCH, OPT(overwrite), 0, 0, NULL,
     "start a new run in an --out that already holds one (its checkpoints\n"
     "and metrics are removed); without it ./train refuses"},
    {NULL, "--continue", NULL, F_SWITCH, OPT(continue_run), 0, 0, NULL,
     "resume the run in --out if it has a checkpoint (a finished run is\n"
     "reported, not retrained), else start one (what `make train` does)"},
    {NULL, "--resume", "PATH", F_STR, OPT(resume), 0, 0, NULL, "continue a run: an OUT dir, a checkpoint dir or its .safetensors file"},
    {NULL, "--init", "FILE", F_STR, OPT(init), 0, 0, NULL,
     "start from these weights only (model.safetensors); the position\n"
     "embedding is interpolated if the resolution differs"},
    {NULL, "--interp", "KIND", F_CHOICE, OPT(interp_name), 0, 0, "bicubic|bilinear",
     "position-embedding interpolation: bicubic | bilinear (default bicubic)"},

    {"other modes", "--eval-only", NULL, F_SWITCH, OPT(eval_only), 0, 0, NULL,
     "evaluate (--init or --resume weights) on the test split and exit"},
    {NULL, "--trace-shapes", NULL, F_SWITCH, OPT(trace_shapes), 0, 0, NULL, "print the shape flow of one forward pass and exit"},
    {NULL, "--bench", "N", F_INT, OPT(bench), 1, 100000, NULL,
     "time N training steps on random data; print median step ms,\n"
     "images/s and GFLOP/s, then exit"},
    {NULL, "--profile", NULL, F_SWITCH, OPT(profile), 0, 0, NULL,
     "with --bench: also print where each step's wall time goes, by op\n"
     "(forward and backward, per input and output shapes) and phase"},
};
#define N_FLAGS (sizeof flags / sizeof flags[0])

/* a field's default as --help shows it: "(default: the preset's)" when a preset sets it */
static void model_default(int field, char *out, size_t n) {
    const vg_vit_config d = vg_vit_config_default();
    char a[64], b[64];
    vg_vit_field_format(&d, field, a, sizeof a);
    for (int k = 0; vg_vit_preset_names[k]; k++) {
        vg_vit_config p;
        if (!vg_vit_preset(vg_vit_preset_names[k], &p)) continue;
        vg_vit_field_format(&p, field, b, sizeof b);
        if (strcmp(a, b)) { snprintf(out, n, "(default: the preset's)"); return; }
    }
    if (vg_vit_fields[field].kind == VG_FIELD_REAL) snprintf(a, sizeof a, "%g", vg_vit_field_number(&d, field));
    snprintf(out, n, "(default %s)", a);
}

void vg_options_usage(FILE *f) {
    fprintf(f, "usage: ./train [FLAGS]\n"
               "Train a Vision Transformer (timm layout) with AdamW, warmup + cosine, label smoothing.\n");
    for (size_t k = 0; k < N_FLAGS; k++) {
        const flag_def *d = &flags[k];
        if (!d->name) continue;                          /* a model field without a flag */
        if (d->section) fprintf(f, "\n%s\n", d->section);
        char head[64], help[1024];
        snprintf(head, sizeof head, "%s%s%s", d->name, d->metavar ? " " : "", d->metavar ? d->metavar : "");
        if (d->offset == OPT(model)) {                   /* the preset names, from vit/presets.c */
            size_t len = 0;
            for (int i = 0; vg_vit_preset_names[i]; i++)
                len += (size_t)snprintf(help + len, sizeof help - len, "%s%s", i ? " | " : "", vg_vit_preset_names[i]);
            snprintf(help + len, sizeof help - len, "\n%s", d->help);
        } else if (d->kind == F_MODEL && !strstr(d->help, "default")) {
            char def[96];
            model_default(d->field, def, sizeof def);
            const char *last = strrchr(d->help, '\n');
            size_t last_len = strlen(last ? last + 1 : d->help);
            snprintf(help, sizeof help, "%s%s%s", d->help, last_len + strlen(def) < 68 ? " " : "\n", def);
        } else snprintf(help, sizeof help, "%s", d->help);
        /* the help text: first line beside the flag (column 23), the rest below it */
        const char *h = help;
        int first = (int)strcspn(h, "\n");
        if (strlen(head) > 20) fprintf(f, "  %s\n  %-20s %.*s\n", head, "", first, h);
        else fprintf(f, "  %-20s %.*s\n", head, first, h);
        for (h += first; *h == '\n';) {
            h++;
            int len = (int)strcspn(h, "\n");
            fprintf(f, "  %-20s %.*s\n", "", len, h);
            h += len;
        }
    }
    fprintf(f, "  %-20s %s\n", "--help", "this text");
}

/* usage error naming the flag (NULL: the message names them): exit status 2 */
static void bad_flag(const char *flag, const char *fmt, ...) {
    va_list ap; va_start(ap, fmt);
    fprintf(stderr, "train: ");
    if (flag) fprintf(stderr, "%s: ", flag);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see ./train --help)\n");
    va_end(ap);
    exit(2);
}

/* "must be >= 1", "must be between 0 and 0.99": a range as a person reads it */
static void range_text(double lo, double hi, char *out, size_t n) {
    if (hi >= 1e15) snprintf(out, n, "must be >= %.15g", lo);
    else snprintf(out, n, "must be between %.15g and %.15g", lo, hi);
}

static int64_t parse_int(const char *flag, const char *v, double lo, double hi) {
    char *end; errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end) bad_flag(flag, "expected an integer, got '%s'", v);
    if ((double)x < lo || (double)x > hi) {
        char r[96]; range_text(lo, hi, r, sizeof r);
        bad_flag(flag, "%s, got %lld", r, x);
    }
    return x;
}

static double parse_real(const char *flag, const char *v, double lo, double hi) {
    char *end; errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x)) bad_flag(flag, "expected a number, got '%s'", v);
    if (x < lo || x > hi) {
        char r[96]; range_text(lo, hi, r, sizeof r);
        bad_flag(flag, "%s, got %g", r, x);
    }
    return x;
}

/* v is one of "a|b/c" (everything after '/' accepted, not listed in messages) */
static bool is_choice(const char *choices, const char *v) {
    size_t n = strlen(v);
    for (const char *c = choices; *c;) {
        size_t len = strcspn(c, "|/");
        if (len == n && !strncmp(c, v, n)) return true;
        c += len + (c[len] != 0);
    }
    return false;
}

/* a model flag: read and range-checked now (its text is applied to the preset, or to an --init
 * file's model, by vg_options_apply_model_flags) */
static void check_model_flag(const flag_def *d, const char *v) {
    vg_vit_config c = vg_vit_config_default();
    if (!vg_vit_field_parse(&c, d->field, v)) bad_flag(d->name, "%s", vg_error());
    if (d->field == VG_VIT_F_num_classes && c.num_classes < 1)
        bad_flag(d->name, "must be >= 1 (training needs a head), got %s", v);
    if (!vg_vit_field_in_range(&c, d->field)) {
        if (vg_vit_fields[d->field].kind == VG_FIELD_STEM) bad_flag(d->name, "%s", vg_error());
        char r[96]; range_text(d->lo, d->hi, r, sizeof r);
        bad_flag(d->name, "%s, got %s", r, v);
    }
}

static void set_flag(options *o, const flag_def *d, const char *v) {
    char *field = (char *)o + d->offset;
    switch (d->kind) {
    case F_SWITCH: *(bool *)field = true; break;
    case F_INT: *(int *)field = (int)parse_int(d->name, v, d->lo, d->hi); break;
    case F_I64: *(int64_t *)field = parse_int(d->name, v, d->lo, d->hi); break;
    case F_U64: *(uint64_t *)field = (uint64_t)parse_int(d->name, v, d->lo, d->hi); break;
    case F_REAL: *(double *)field = parse_real(d->name, v, d->lo, d->hi); break;
    case F_STR: *(const char **)field = v; break;
    case F_MODEL: check_model_flag(d, v); o->ov[d->field] = v; break;
    case F_CHOICE: {
        if (!is_choice(d->choices, v)) {
            char listed[256]; size_t k = 0;          /* "a|b/c" -> "a, b" */
            for (const char *c = d->choices; *c && *c != '/' && k + 3 < sizeof listed; c++) {
                if (*c == '|') { listed[k++] = ','; listed[k++] = ' '; } else listed[k++] = *c;
            }
            listed[k] = 0;
            bad_flag(d->name, "unknown %s '%s' (%s)", d->name + 2, v, listed);
        }
        *(const char **)field = v;
        break;
    }
    case F_LENGTH: {                 /* N, Ns (steps) or Ne (epochs) */
        char buf[64]; snprintf(buf, sizeof buf, "%s", v);
        size_t n = strlen(buf);
        run_unit *unit = (run_unit *)((char *)field + sizeof(double));
        *unit = UNIT_DEFAULT;
        if (n && (buf[n - 1] == 's' || buf[n - 1] == 'e')) { *unit = buf[n - 1] == 's' ? UNIT_STEPS : UNIT_EPOCHS; buf[n - 1] = 0; }
        *(double *)field = parse_real(d->name, buf, d->lo, d->hi);
        break;
    }
    }
}

/* Levenshtein distance of a and b (each under 64 characters; longer: a large number) */
static int edit_distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n >= 64 || m >= 64) return 1000;
    int row[64];
    for (size_t j = 0; j <= m; j++) row[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[m];
}

/* an unknown flag: "did you mean --epochs?" — the flags it begins (a flag cut short), else the
 * closest within edit distance 2, else the flags it begins with */
static void unknown_flag(const char *f) {
    const char *near[3];
    int k = 0, best = 3;
    const size_t len = strlen(f);
    for (size_t i = 0; i < N_FLAGS; i++)
        if (flags[i].name && len >= 4 && !strncmp(flags[i].name, f, len) && k < 3) near[k++] = flags[i].name;
    for (size_t i = 0; !k && i < N_FLAGS; i++) {
        if (!flags[i].name) continue;
        int dist = edit_distance(f, flags[i].name);
        if (dist < best) { best = dist; k = 0; }
        if (dist == best && dist <= 2 && k < 3) near[k++] = flags[i].name;
    }
    for (size_t i = 0; !k && i < N_FLAGS; i++) {
        const char *n = flags[i].name;
        if (n && strlen(n) >= 4 && !strncmp(f, n, strlen(n)) && k < 3) near[k++] = n;
    }
    if (!k) bad_flag(f, "unknown flag");
    char list[256] = "";
    for (int i = 0; i < k; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? (i == k - 1 ? " or " : ", ") : "", near[i]);
    bad_flag(f, "unknown flag; did you mean %s?", list);
}

/* the preset named by --model (or the dataset's default) with the model flags applied */
static void resolve_model(options *o) {
    o->model_given = o->model != NULL;
    if (!o->model) o->model = !strcmp(o->dataset, "fashion-mnist") || !strcmp(o->dataset, "mnist") ? "vit-mnist"
                            : !strcmp(o->dataset, "imagefolder") ? "vit-tiny-in64" : "vit-tiny-cifar";
    if (!vg_vit_preset(o->model, &o->vit)) {
        char names[256] = "";
        for (int k = 0; vg_vit_preset_names[k]; k++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", vg_vit_preset_names[k]);
        bad_flag("--model", "unknown preset '%s' (%s)", o->model, names);
    }
    vg_options_apply_model_flags(o, &o->vit);
}

void vg_options_apply_model_flags(const options *o, vg_vit_config *c) {
    for (int f = 0; f < VG_VIT_NFIELDS; f++)
        if (o->ov[f] && !vg_vit_field_parse(c, f, o->ov[f])) bad_flag(vg_vit_fields[f].flag, "%s", vg_error());
    /* a configuration the model cannot have: the message names the flags (the fields without one
     * by their names) */
    const char *names[VG_VIT_NFIELDS];
    for (int f = 0; f < VG_VIT_NFIELDS; f++) names[f] = vg_vit_fields[f].flag;
    if (!vg_vit_config_check_as(c, names)) bad_flag(NULL, "%s", vg_error());
}

options vg_options_parse(int argc, char **argv) {
    options o = {0};
    o.dataset = "cifar10"; o.out = "runs/last"; o.epochs = 30; o.batch = 128;
    o.lr = 1e-3; o.wd = 0.05; o.min_lr = 1e-5; o.label_smoothing = 0.1; o.clip = 1.0;
    o.warmup = -1; o.patch_drop_until = -1; o.patch_drop_until_step = -1; o.eval_every = -1; o.save_every = -1; o.log_every = 50; o.snapshots = 8;   /* -1: by run length */
    o.mixup_prob = 1.0; o.mixup_switch_prob = 0.5; o.model_ema_decay = 0.9998; o.grad_accum_steps = 1; o.tta = "none";
    o.muon_momentum = 0.95; o.muon_adjust = "match_rms_adamw";
    o.threads = 0; o.loader_threads = 1; o.bucket_mb = 2; o.comm_timeout = 300; o.interp_name = "bicubic"; o.aug = "auto";
    const char *bf16_gemm = getenv("VG_BF16_GEMM");
    o.amp_dtype = "bfloat16"; o.amp_kernel = bf16_gemm && *bf16_gemm ? bf16_gemm : "auto";
    bool given[N_FLAGS] = {0};
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) { vg_options_usage(stdout); exit(0); }
        if (strncmp(f, "--", 2)) bad_flag(f, "unexpected argument (flags start with --)");
        const flag_def *d = NULL;
        for (size_t k = 0; k < N_FLAGS && !d; k++) if (flags[k].name && !strcmp(f, flags[k].name)) d = &flags[k];
        if (!d) unknown_flag(f);
        given[d - flags] = true;
        if (d->kind == F_SWITCH) { set_flag(&o, d, NULL); continue; }
        if (i + 1 >= argc) bad_flag(f, "needs a value");
        set_flag(&o, d, argv[++i]);
    }
    if (o.resume && o.init) bad_flag("--init", "cannot be combined with --resume");
    if (o.profile && !o.bench) bad_flag("--profile", "needs --bench N (it profiles the benchmark's steps)");
    for (size_t k = 0; k < N_FLAGS; k++)
        if (given[k] && !o.muon && !strncmp(flags[k].name, "--muon-", 7)) bad_flag(flags[k].name, "needs --muon");
    if (!strcmp(o.amp_dtype, "float16"))
        bad_flag("--amp-dtype", "float16 is not supported: vitgrad's mixed precision is bf16 only (FP32's "
                 "exponent range, so no loss scaling); use --amp-dtype bfloat16");
    o.interp = !strcmp(o.interp_name, "bilinear") ? VG_INTERP_BILINEAR : VG_INTERP_BICUBIC;
    resolve_model(&o);
    if (o.patch_drop_until >= 0 && !(o.vit.patch_drop_rate > 0))
        bad_flag("--patch-drop-until", "needs --patch-drop P > 0 (there is no patch dropout to end)");
    if (o.min_lr > o.lr) {                   /* the cosine decays from --lr down to --min-lr */
        bool lr_given = false, min_given = false;
        for (size_t k = 0; k < N_FLAGS; k++) {
            if (flags[k].offset == OPT(lr) && flags[k].kind == F_REAL) lr_given |= given[k];
            if (flags[k].offset == OPT(min_lr) && flags[k].kind == F_REAL) min_given |= given[k];
        }
        if (!min_given)
            bad_flag("--lr", "%g is below --min-lr's default %g, where the cosine schedule ends: give a larger --lr, "
                     "or --min-lr too (e.g. --min-lr 0)", o.lr, o.min_lr);
        if (!lr_given)
            bad_flag("--min-lr", "%g is above --lr's default %g, where the cosine schedule starts: give a smaller "
                     "--min-lr, or --lr too", o.min_lr, o.lr);
        bad_flag("--min-lr", "%g is above --lr %g: the cosine schedule decays from --lr down to --min-lr", o.min_lr, o.lr);
    }
    o.every_in_steps = o.steps > 0;
    if (!o.eval_batch) o.eval_batch = o.batch;
    /* about ten evaluations and checkpoints over a --steps run, every epoch over an --epochs run */
    int64_t every = o.steps > 0 ? (o.steps + 9) / 10 : 1;
    if (o.eval_every < 0) o.eval_every = every;
    if (o.save_every < 0) o.save_every = every;
    if (o.aa) {
        vg_randaugment_config ra; char e[256];
        if (vg_randaugment_parse(o.aa, &ra, e, sizeof e)) bad_flag("--aa", "%s", e);
    }
    return o;
}
