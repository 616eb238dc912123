/* inspect_verify.c — `./inspect verify PATH…`: is a checkpoint still the file that was written?
 * Every safetensors file vitgrad writes records a CRC-32C per tensor (tensor/safetensors.h); this
 * recomputes each one and lists every damaged tensor (loading stops at the first). PATH is a
 * .safetensors file, a checkpoint's step directory, or a run's --out directory: then every
 * checkpoint under checkpoints/ is checked, and the output says which one `latest` names, so a
 * damaged last checkpoint points to the previous one. Exit 0 when every file is whole, 1 when any
 * is damaged or unreadable, 2 on a usage error. */
#include "inspect_common.h"
#include "tensor/safetensors.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int inspect_verify_main(int argc, char **argv);

static void usage(FILE *f) {
    fprintf(f, "usage: inspect verify PATH…\n"
               "  PATH: a .safetensors file, a checkpoint directory (checkpoints/step-N) or a run's --out\n"
               "        directory (every checkpoint in it). Recomputes the CRC-32C of every tensor and\n"
               "        compares it with the one recorded when the file was written.\n");
}

static bool is_dir(const char *p) { struct stat st; return stat(p, &st) == 0 && S_ISDIR(st.st_mode); }
static bool ends_with(const char *s, const char *t) { size_t a = strlen(s), b = strlen(t); return a >= b && !strcmp(s + a - b, t); }

/* one file: 0 whole (or without checksums), 1 damaged or unreadable */
static int verify_file(const char *path) {
    char err[1024];
    vg_st_file *f = vg_st_open_unverified(path, err, sizeof err);
    if (!f) { printf("%s: DAMAGED: %s\n", path, err); return 1; }
    size_t n = vg_st_count(f), with = 0, bad = 0, bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const vg_st_tensor *t = vg_st_at(f, i);
        bytes += t->nbytes;
        if (!t->has_checksum) continue;
        with++;
        uint32_t c = vg_crc32c(t->data, t->nbytes);
        if (c != t->checksum) {
            if (!bad) printf("%s: DAMAGED:\n", path);
            printf("  tensor \"%s\" (%zu bytes): CRC-32C %08x, recorded %08x\n", t->name, t->nbytes, (unsigned)c, (unsigned)t->checksum);
            bad++;
        }
    }
    if (bad) printf("  %zu of %zu tensors damaged\n", bad, n);
    else if (with == n) printf("%s: ok: %zu tensors, %zu bytes, every CRC-32C matches\n", path, n, bytes);
    else if (with == 0) printf("%s: no checksums (written by another tool, or before vitgrad recorded them): the header and sizes are sound, the data cannot be checked\n", path);
    else printf("%s: ok: %zu of %zu tensors have a checksum, each matches (%zu bytes)\n", path, with, n, bytes);
    vg_st_close(f);
    return bad ? 1 : 0;
}

/* every *.safetensors directly in dir, in name order; -1 when there is none */
static int verify_dir_files(const char *dir) {
    struct dirent **names;
    int k = scandir(dir, &names, NULL, alphasort), rc = -1;
    for (int i = 0; i < k; i++) {
        if (ends_with(names[i]->d_name, ".safetensors")) {
            char p[4400];
            snprintf(p, sizeof p, "%s/%s", dir, names[i]->d_name);
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISREG(st.st_mode)) rc = (rc > 0 ? rc : 0) | verify_file(p);
        }
        free(names[i]);
    }
    if (k >= 0) free(names);
    return rc;
}

static int verify_path(const char *path) {
    if (!is_dir(path)) return verify_file(path);
    char ck[4200];
    snprintf(ck, sizeof ck, "%s/checkpoints", path);
    if (!is_dir(ck)) {                               /* a step directory, or any directory of files */
        int rc = verify_dir_files(path);
        if (rc < 0) { printf("%s: no .safetensors files here\n", path); return 1; }
        return rc;
    }
    char latest[4300], target[512] = "";
    snprintf(latest, sizeof latest, "%s/latest", path);
    ssize_t len = readlink(latest, target, sizeof target - 1);
    target[len > 0 ? len : 0] = 0;
    struct dirent **names;
    int k = scandir(ck, &names, NULL, alphasort), rc = 0, found = 0;
    for (int i = k - 1; i >= 0; i--) {               /* newest first */
        if (!strncmp(names[i]->d_name, "step-", 5)) {
            char step[4500], rel[300];
            snprintf(step, sizeof step, "%s/%s", ck, names[i]->d_name);
            snprintf(rel, sizeof rel, "checkpoints/%s", names[i]->d_name);
            printf("%s%s\n", step, !strcmp(rel, target) ? " (latest)" : "");
            int r = verify_dir_files(step);
            rc |= r < 0 ? 0 : r;
            found++;
        }
    }
    for (int i = 0; i < k; i++) free(names[i]);
    if (k >= 0) free(names);
    if (!found) { printf("%s: no checkpoints under checkpoints/\n", path); return 1; }
    return rc;
}

int inspect_verify_main(int argc, char **argv) {
    int rc = 0, paths = 0;
    for (int i = 1; i < argc; i++) {
        if (ic_is_help(argv[i])) { usage(stdout); return 0; }
        if (!strncmp(argv[i], "--", 2)) { fprintf(stderr, "inspect verify: unknown flag '%s'\n", argv[i]); usage(stderr); return IC_USAGE; }
    }
    for (int i = 1; i < argc; i++) { rc |= verify_path(argv[i]); paths++; }
    if (!paths) { fprintf(stderr, "inspect verify: give a file or directory\n"); usage(stderr); return IC_USAGE; }
    return rc ? 1 : 0;
}
