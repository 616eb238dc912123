/* fields.c — the configuration fields of vit_fields.h as data: defaults, text in and out, ranges.
 * The checkpoint metadata (checkpoint/model_meta.c), ./train's flags (run/options.c) and
 * vg_vit_config_check read the fields through these. */
#include "vit.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(vg_vit_pool) == sizeof(int) && sizeof(vg_vit_posembed) == sizeof(int),
               "CHOICE fields are read and written as int");

#define KIND_INT    VG_FIELD_INT
#define KIND_REAL   VG_FIELD_REAL
#define KIND_BOOL   VG_FIELD_BOOL
#define KIND_CHOICE VG_FIELD_CHOICE
#define KIND_STEM   VG_FIELD_STEM
#define META_ALWAYS true
#define META_IF_SET false
#define CMP_NO        VG_FIELD_CMP_NO, NULL
#define CMP_SAME      VG_FIELD_CMP_SAME, NULL
#define CMP_ON(label) VG_FIELD_CMP_ON, label

const vg_vit_field vg_vit_fields[VG_VIT_NFIELDS] = {
#define X(KIND, type, name, def, lo, hi, META, CMP, flag, metavar, help) \
    {#name, KIND_##KIND, offsetof(vg_vit_config, name), lo, hi, META_##META, CMP_##CMP, flag, metavar, help},
    VG_VIT_FIELDS(X)
#undef X
};

vg_vit_config vg_vit_config_default(void) {
    return (vg_vit_config){
#define X(KIND, type, name, def, ...) .name = def,
        VG_VIT_FIELDS(X)
#undef X
    };
}

static void *field_ptr(const vg_vit_config *c, int f) { return (char *)c + vg_vit_fields[f].offset; }

double vg_vit_field_number(const vg_vit_config *c, int f) {
    const void *p = field_ptr(c, f);
    switch (vg_vit_fields[f].kind) {
    case VG_FIELD_INT: case VG_FIELD_CHOICE: return *(const int *)p;
    case VG_FIELD_REAL: return *(const double *)p;
    case VG_FIELD_BOOL: return *(const bool *)p;
    case VG_FIELD_STEM: return vg_vit_stem_depth(c);
    }
    return 0;
}

/* the i-th name of "a|b|c" into out; false past the last */
static bool choice_name(const char *choices, int i, char *out, size_t n) {
    for (const char *s = choices; *s; i--) {
        size_t len = strcspn(s, "|");
        if (!i) { snprintf(out, n, "%.*s", (int)len, s); return true; }
        s += len + (s[len] == '|');
    }
    return false;
}

void vg_vit_field_format(const vg_vit_config *c, int f, char *out, size_t n) {
    const vg_vit_field *d = &vg_vit_fields[f];
    switch (d->kind) {
    case VG_FIELD_INT: snprintf(out, n, "%d", *(const int *)field_ptr(c, f)); break;
    case VG_FIELD_REAL: snprintf(out, n, "%.17g", *(const double *)field_ptr(c, f)); break;
    case VG_FIELD_BOOL: snprintf(out, n, "%d", *(const bool *)field_ptr(c, f) ? 1 : 0); break;
    case VG_FIELD_CHOICE:
        if (!choice_name(d->metavar, *(const int *)field_ptr(c, f), out, n)) snprintf(out, n, "%d", *(const int *)field_ptr(c, f));
        break;
    case VG_FIELD_STEM: vg_vit_stem_str(c, out, n); break;
    }
}

bool vg_vit_field_parse(vg_vit_config *c, int f, const char *v) {
    const vg_vit_field *d = &vg_vit_fields[f];
    void *p = field_ptr(c, f);
    char *end;
    switch (d->kind) {
    case VG_FIELD_INT: case VG_FIELD_BOOL: {
        errno = 0;
        long x = strtol(v, &end, 10);
        if (end == v || *end || errno == ERANGE || x < INT_MIN || x > INT_MAX) {
            vg_set_error("expected an integer, got '%.40s'", v);
            return false;
        }
        if (d->kind == VG_FIELD_BOOL) *(bool *)p = x != 0;
        else *(int *)p = (int)x;
        return true;
    }
    case VG_FIELD_REAL: {
        double x = strtod(v, &end);
        if (end == v || *end || !isfinite(x)) { vg_set_error("expected a finite number, got '%.40s'", v); return false; }
        *(double *)p = x;
        return true;
    }
    case VG_FIELD_CHOICE: {
        char name[64];
        for (int i = 0; choice_name(d->metavar, i, name, sizeof name); i++)
            if (!strcmp(name, v)) { *(int *)p = i; return true; }
        /* "expected cls, mean or seq, got 'x'" */
        char list[256] = "";
        int k = 0;
        while (choice_name(d->metavar, k, name, sizeof name)) k++;
        for (int i = 0; i < k && choice_name(d->metavar, i, name, sizeof name); i++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%s", i == 0 ? "" : i == k - 1 ? " or " : ", ", name);
        }
        vg_set_error("expected %s, got '%.40s'", list, v);
        return false;
    }
    case VG_FIELD_STEM: return vg_vit_parse_stem(v, c);
    }
    return false;
}

bool vg_vit_field_in_range(const vg_vit_config *c, int f) {
    const vg_vit_field *d = &vg_vit_fields[f];
    if (d->kind == VG_FIELD_STEM) {
        const int n = vg_vit_stem_depth(c);
        for (int i = 0; i < VG_VIT_MAX_STEM; i++)
            if (i < n ? c->conv_stem[i] < d->lo || c->conv_stem[i] > d->hi : c->conv_stem[i] != 0) return false;
        return true;
    }
    const double x = vg_vit_field_number(c, f);
    return x >= d->lo && x <= d->hi;                   /* false for NaN */
}

bool vg_vit_field_is_default(const vg_vit_config *c, int f) {
    const vg_vit_config d = vg_vit_config_default();
    char a[64], b[64];
    vg_vit_field_format(c, f, a, sizeof a);
    vg_vit_field_format(&d, f, b, sizeof b);
    return !strcmp(a, b);
}
