/* fuzz_imagefolder.c — image-folder scanning (data/imagefolder.c): the fuzz input is turned into
 * a directory tree ROOT/{train,val}/<class>/<file> in a scratch directory, then both splits are
 * opened. The input is a list of records, read until it runs out:
 *   op byte: op & 7 = what, (op >> 3) & 1 = which split (train / val)
 *     0  class folder <name> (becomes the split's current class folder)
 *     1, 6, 7  file <name> in the current class folder, content: u16 LE length + bytes
 *     2  ROOT/classes.txt, content as above
 *     3  a directory <name> inside the current class folder (where an image is expected)
 *     4  a symlink <name> in the current class folder: dangling, or to its own folder
 *     5  a plain file <name> directly in the split folder (where class folders are expected)
 *   name: length byte (mod 64; 0 → "_") + bytes; '/' and NUL become '_', "." and ".." get an 'x'.
 * A refused tree gets an error naming a path inside ROOT; an accepted one has labels in range and
 * images of nonzero size, and goes through one training and one evaluation batch. */
#include "fuzz/batches.h"
#include "fuzz/common.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct { const uint8_t *p; size_t n, at; } reader;

static int next_byte(reader *r) { return r->at < r->n ? r->p[r->at++] : -1; }

static void next_name(reader *r, char *out) {
    int len = next_byte(r);
    len = len < 0 ? 0 : len % 64;
    int k = 0;
    for (int i = 0; i < len && r->at < r->n; i++) {
        char c = (char)r->p[r->at++];
        out[k++] = c == '/' || c == 0 ? '_' : c;
    }
    out[k] = 0;
    if (!k || !strcmp(out, ".") || !strcmp(out, "..")) { out[k] = 'x'; out[k + 1] = 0; }
}

static const uint8_t *next_content(reader *r, size_t *len) {
    int lo = next_byte(r), hi = next_byte(r);
    size_t n = lo < 0 ? 0 : (size_t)lo | (size_t)(hi < 0 ? 0 : hi) << 8;
    if (n > r->n - r->at) n = r->n - r->at;
    const uint8_t *p = r->p + r->at;
    r->at += n; *len = n;
    return p;
}

static void build_tree(const char *root, const uint8_t *data, size_t size) {
    static const char *split[2] = {"train", "val"};
    char path[4200], cls[2][70] = {"", ""}, name[70];
    reader r = {data, size, 0};
    mkdir(root, 0755);
    for (int s = 0; s < 2; s++) { snprintf(path, sizeof path, "%s/%s", root, split[s]); mkdir(path, 0755); }
    for (int op; (op = next_byte(&r)) >= 0;) {
        int s = (op >> 3) & 1, what = op & 7;
        size_t len;
        const uint8_t *content;
        if (what != 0 && what != 2 && what != 5 && !cls[s][0]) {   /* a class folder first */
            snprintf(cls[s], sizeof cls[s], "c0");
            snprintf(path, sizeof path, "%s/%s/c0", root, split[s]); mkdir(path, 0755);
        }
        switch (what) {
        case 0:
            next_name(&r, cls[s]);
            snprintf(path, sizeof path, "%s/%s/%s", root, split[s], cls[s]); mkdir(path, 0755);
            break;
        case 2:
            content = next_content(&r, &len);
            fuzz_write_file(root, "classes.txt", content, len);
            break;
        case 3:
            next_name(&r, name);
            snprintf(path, sizeof path, "%s/%s/%s/%s", root, split[s], cls[s], name); mkdir(path, 0755);
            break;
        case 4: {
            next_name(&r, name);
            int b = next_byte(&r);
            snprintf(path, sizeof path, "%s/%s/%s/%s", root, split[s], cls[s], name);
            if (symlink(b > 0 && (b & 1) ? "." : "nonexistent-target", path)) {}
            break;
        }
        case 5:
            next_name(&r, name);
            content = next_content(&r, &len);
            snprintf(path, sizeof path, "%s/%s", split[s], name);
            fuzz_write_file(root, path, content, len);
            break;
        default:
            next_name(&r, name);
            content = next_content(&r, &len);
            snprintf(path, sizeof path, "%s/%s/%s", split[s], cls[s], name);
            fuzz_write_file(root, path, content, len);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char root[600];
    snprintf(root, sizeof root, "%.500s/root", fuzz_scratch());
    fuzz_scratch_clear();
    build_tree(root, data, size);
    for (int s = 0; s < 2; s++) {
        char err[VG_DATA_ERRLEN] = "";
        vg_dataset *d = vg_imagefolder_open(root, s ? VG_SPLIT_TEST : VG_SPLIT_TRAIN, 1, err, sizeof err);
        if (!d) { fuzz_expect_error(err, root); continue; }
        fuzz_require(d->n > 0 && d->channels == 3 && d->n_classes > 0, "an image folder has images and classes");
        for (int i = 0; i < d->n; i++) {
            int h, w;
            fuzz_require(vg_dataset_image(d, i, &h, &w) && h > 0 && w > 0, "every image has a size");
            fuzz_require(d->labels[i] >= 0 && d->labels[i] < d->n_classes, "labels in range");
        }
        for (int c = 0; c < d->n_classes; c++) fuzz_require(d->class_names[c] != NULL, "every class has a name");
        fuzz_note("accepted %s split: %d images, %d classes, %d skipped", s ? "val" : "train", d->n, d->n_classes, d->n_skipped);
        fuzz_batches(d, 8);
        vg_dataset_free(d);
    }
    return 0;
}
