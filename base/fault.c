/* fault.c — the VG_FAULT table of fault.h (only in builds with -DVG_FAULTS). */
#ifdef VG_FAULTS
#include "fault.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_FAULTS = 16, MAX_NAME = 48 };
static struct { char name[MAX_NAME]; long value; } faults[MAX_FAULTS];
static int nfaults;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void set(const char *name, size_t len, long value) {
    if (len == 0 || len >= MAX_NAME) return;
    for (int i = 0; i < nfaults; i++)
        if (strlen(faults[i].name) == len && !strncmp(faults[i].name, name, len)) { faults[i].value = value; return; }
    if (nfaults == MAX_FAULTS) { fprintf(stderr, "VG_FAULT: more than %d faults, %.*s ignored\n", MAX_FAULTS, (int)len, name); return; }
    memcpy(faults[nfaults].name, name, len);
    faults[nfaults].name[len] = 0;
    faults[nfaults++].value = value;
}

/* "a=3,b" → {a: 3, b: 1} */
static void parse_env(void) {
    const char *s = getenv("VG_FAULT");
    while (s && *s) {
        size_t item = strcspn(s, ","), name = strcspn(s, "=,");
        set(s, name, name < item ? atol(s + name + 1) : 1);
        s += item + (s[item] == ',');
    }
}

long vg_fault(const char *name) {
    pthread_once(&once, parse_env);
    for (int i = 0; i < nfaults; i++)
        if (!strcmp(faults[i].name, name)) return faults[i].value;
    return 0;
}

void vg_fault_set(const char *name, long value) {
    pthread_once(&once, parse_env);
    set(name, strlen(name), value);
}
#else
typedef int vg_fault_compiled_out;   /* ISO C forbids an empty translation unit */
#endif
