/* durable.c — crash-safe file writes (durable.h). */
#include "durable.h"
#include "fault.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int vg_write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n > 0) {
        ssize_t k = write(fd, c, n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n);
        if (k < 0) { if (errno == EINTR) continue; return -1; }
        c += k; n -= (size_t)k;
    }
    return 0;
}

int vg_fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    if (rc != 0 && (errno == EINVAL || errno == EROFS)) rc = 0;   /* fs without directory fsync */
    int e = errno; close(fd); errno = e;
    return rc;
}

int vg_fsync_parent_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir;
    if (!slash) dir = strdup(".");
    else if (slash == path) dir = strdup("/");
    else dir = strndup(path, (size_t)(slash - path));
    if (!dir) { errno = ENOMEM; return -1; }
    int rc = vg_fsync_dir(dir);
    int e = errno; free(dir); errno = e;
    return rc;
}

int vg_mkdir_p(const char *path, char *err, size_t errlen) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        snprintf(err, errlen, "%.200s...: cannot create directory: %s", path, strerror(errno));
        return -1;
    }
    /* each parent in turn, then path itself (the loop's last pass) */
    for (char *p = buf + 1;; p++) {
        if (*p && *p != '/') continue;
        char c = *p;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "%s: cannot create directory: %s", buf, strerror(errno));
            return -1;
        }
        if (!c) return 0;
        *p = c;
    }
}

int vg_atomic_open(vg_atomic_file *a, const char *path, char *err, size_t errlen) {
    *a = (vg_atomic_file){.fd = -1, .path = path};
    size_t tlen = strlen(path) + 32;
    if (!(a->tmp = malloc(tlen))) { snprintf(err, errlen, "%s: out of memory", path); return -1; }
    snprintf(a->tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
    a->fd = open(a->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (a->fd < 0) {
        snprintf(err, errlen, "%s: cannot create temp file %s: %s", path, a->tmp, strerror(errno));
        free(a->tmp); a->tmp = NULL;
        return -1;
    }
    return 0;
}

void vg_atomic_write(vg_atomic_file *a, const void *p, size_t n) {
    if (!a->failed && vg_write_all(a->fd, p, n)) { a->failed = 1; a->err_no = errno; }
}

int vg_atomic_commit(vg_atomic_file *a, char *err, size_t errlen) {
    int rc = -1;
    const char *path = a->path, *tmp = a->tmp;
    if (a->failed || fsync(a->fd) != 0) {
        snprintf(err, errlen, "%s: writing temp file %s failed: %s", path, tmp, strerror(a->failed ? a->err_no : errno));
        close(a->fd); unlink(tmp); goto done;
    }
    if (close(a->fd) != 0) {
        snprintf(err, errlen, "%s: closing temp file %s failed: %s", path, tmp, strerror(errno));
        unlink(tmp); goto done;
    }
    if (vg_fault("crash_before_rename")) {
        snprintf(err, errlen, "%s: simulated crash before rename (fault crash_before_rename); temp file left at %s", path, tmp);
        goto done;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: rename from %s failed: %s", path, tmp, strerror(errno));
        unlink(tmp); goto done;
    }
    if (vg_fsync_parent_dir(path) != 0) {
        snprintf(err, errlen, "%s: written, but fsync of its directory failed: %s", path, strerror(errno));
        goto done;
    }
    rc = 0;
done:
    free(a->tmp); a->tmp = NULL; a->fd = -1;
    return rc;
}

void vg_remove_flat_dir(const char *dir) {
    char f[4096 + 300];
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(f, sizeof f, "%s/%s", dir, e->d_name);
        unlink(f);
    }
    closedir(d);
    rmdir(dir);
}

int vg_symlink_replace(const char *dir, const char *name, const char *target, char *err, size_t errlen) {
    char tmp[4096 + 64], link[4096 + 64];
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp.%d", dir, name, (int)getpid());
    snprintf(link, sizeof link, "%s/%s", dir, name);
    unlink(tmp);
    if (symlink(target, tmp) != 0) { snprintf(err, errlen, "%s: cannot create symlink: %s", tmp, strerror(errno)); return -1; }
    if (rename(tmp, link) != 0) { snprintf(err, errlen, "%s: cannot replace: %s", link, strerror(errno)); unlink(tmp); return -1; }
    return 0;
}
