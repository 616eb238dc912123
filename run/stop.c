/* stop.c — a graceful stop on SIGINT / SIGTERM, and the command that continues a run.
 *
 * The handler only records the signal (async-signal-safe: a sig_atomic_t and write(2)); the
 * training loop reads it at each step boundary, so the step in flight finishes, a checkpoint is
 * written (atomically, as every checkpoint) and the program exits 128 + signal (130 for SIGINT,
 * 143 for SIGTERM). A second signal exits at once with the same status: `latest` still names the
 * last complete checkpoint, since a checkpoint only becomes `latest` once it is whole.
 * The same signal also ends an evaluation after its current batch (run/evaluate.c): the loop then
 * saves the state of the last step without logging the partial evaluation.
 * The data loader's threads block both signals (data/loader.c), so the main thread takes them. */
#include "run/run.h"
#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop_signal;

static void say(const char *s) { if (write(STDERR_FILENO, s, strlen(s)) < 0) return; }

static void on_stop_signal(int sig) {
    if (stop_signal) {
        say("\ntrain: second signal: exiting now; the last complete checkpoint is kept\n");
        _exit(128 + sig);
    }
    stop_signal = sig;
    say("\ntrain: stopping after this step to save a checkpoint (signal again to exit at once)\n");
}

void run_stop_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;            /* a read or write in flight goes on */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int run_stop_signal(void) { return stop_signal; }

bool run_stop_requested(void) { return vg_dist_any(stop_signal != 0); }

/* s as one shell word: unchanged when it holds only safe characters, else in single quotes */
static void shell_word(const char *s, char *buf, size_t n, size_t *len) {
    bool plain = *s != 0;
    for (const char *p = s; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", *p)) plain = false;
    #define PUT(c) do { if (*len + 1 < n) buf[(*len)++] = (c); } while (0)
    if (plain) { for (const char *p = s; *p; p++) PUT(*p); return; }
    PUT('\'');
    for (const char *p = s; *p; p++) {
        if (*p == '\'') { PUT('\''); PUT('\\'); PUT('\''); PUT('\''); }   /* ' → '\'' */
        else PUT(*p);
    }
    PUT('\'');
    #undef PUT
}

void run_resume_command(int argc, char **argv, const char *out, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        /* flags that start or pick a run: replaced by --resume OUT */
        if (i > 0 && (!strcmp(a, "--resume") || !strcmp(a, "--init") || !strcmp(a, "--stop-at"))) { i++; continue; }
        if (i > 0 && (!strcmp(a, "--overwrite") || !strcmp(a, "--continue"))) continue;
        if (len && len + 1 < n) buf[len++] = ' ';
        shell_word(a, buf, n, &len);
    }
    const char *tail[2] = {"--resume", out};
    for (int k = 0; k < 2; k++) {
        if (len + 1 < n) buf[len++] = ' ';
        shell_word(tail[k], buf, n, &len);
    }
    buf[len < n ? len : n - 1] = 0;
}

void run_command_line(int argc, char **argv, char *buf, size_t n) {
    size_t len = 0;
    for (int i = 0; i < argc; i++) {
        if (i && len + 1 < n) buf[len++] = ' ';
        shell_word(argv[i], buf, n, &len);
    }
    buf[len < n ? len : n - 1] = 0;
}
