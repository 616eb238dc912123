/* test_netns.c — two MPI ranks on two "hosts" joined by a real network link, and faults on that
 * link. Each rank runs in its own network namespace (and UTS namespace: hosts node-a
 * and node-b) with its own address on a veth pair, over TCP; mpirun starts the remote rank through
 * a launch agent that enters node-b's namespace, as ssh would enter another machine. Then:
 *   - the link goes down mid-run: the job ends within --comm-timeout plus a measured bound (run
 *     under ./launch, which ends an mpirun that cannot reach node-b to tear the job down), rank 0
 *     names rank 1 as the one that does not answer, and the last checkpoint resumes bit-exact;
 *   - the link goes down for a second (shorter than --comm-timeout) and comes back: the run goes
 *     on and ends with the same bytes as an undisturbed run.
 * Needs root (ip netns), iproute2, unshare, mpirun and the MPI build; skips visibly otherwise. */
#include "base/clock.h"
#include "test.h"
#include "run_helpers.h"
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TINY "--dataset cifar10 --model vit-micro-cifar --dim 16 --depth 2 --heads 2 --batch 32 --threads 1 " \
             "--loader-threads 1 --eval-every 0 --seed 3 --drop 0.1 --attn-drop 0.1 --lr 3e-3 --warmup 2s"

static char root[256], train_mpi[1024], ns_a[32], ns_b[32], veth_a[16], veth_b[16], agent[320];

static void sleep_s(double s) { struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)}; nanosleep(&t, NULL); }
static int sh(const char *fmt, const char *a, const char *b) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    return system(cmd);
}


/* every process in namespace ns, killed (what the tests started there) */
static void kill_in(const char *ns) {
    sh("for p in $(ip netns pids %s 2>/dev/null); do kill -9 $p 2>/dev/null; done", ns, "");
}

static void teardown(void) {
    kill_in(ns_a); kill_in(ns_b);
    sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", ns_a, ns_b);
}

/* Two namespaces joined by a veth pair: node-a 10.77.0.1, node-b 10.77.0.2. NULL (and why in
 * *skip) when this machine cannot do it. */
static const char *setup(const char **skip) {
    const char *t = getenv("VG_TRAIN_MPI");
    if (geteuid() != 0) { *skip = "network namespaces need root (CI runs as root)"; return NULL; }
    if (!t || access(t, X_OK) != 0 || system("command -v mpirun >/dev/null 2>&1") != 0) {
        *skip = "no mpirun or no MPI build of train (make test builds build/train-mpi when mpicc is present)"; return NULL;
    }
    if (system("command -v ip >/dev/null 2>&1 && command -v unshare >/dev/null 2>&1") != 0) {
        *skip = "needs ip (iproute2) and unshare (util-linux)"; return NULL;
    }
    snprintf(train_mpi, sizeof train_mpi, "%s", t);
    int id = (int)getpid() % 100000;
    snprintf(ns_a, sizeof ns_a, "vgt%da", id); snprintf(ns_b, sizeof ns_b, "vgt%db", id);
    snprintf(veth_a, sizeof veth_a, "vgt%dx", id); snprintf(veth_b, sizeof veth_b, "vgt%dy", id);
    if (!root[0]) {
        snprintf(root, sizeof root, "/tmp/vitgrad-netns-XXXXXX");
        if (!mkdtemp(root)) { *skip = "mkdtemp failed"; root[0] = 0; return NULL; }
        char d[300];
        snprintf(d, sizeof d, "%s/cifar", root);
        mkdir(d, 0755);
        if (!vg_test_write_cifar(d)) { *skip = "cannot write the dataset"; return NULL; }
    }
    teardown();
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "ip netns add %s && ip netns add %s && ip link add %s type veth peer name %s && "
             "ip link set %s netns %s && ip link set %s netns %s && "
             "ip -n %s addr add 10.77.0.1/24 dev %s && ip -n %s addr add 10.77.0.2/24 dev %s && "
             "ip -n %s link set %s up && ip -n %s link set %s up && ip -n %s link set lo up && ip -n %s link set lo up",
             ns_a, ns_b, veth_a, veth_b, veth_a, ns_a, veth_b, ns_b, ns_a, veth_a, ns_b, veth_b, ns_a, veth_a, ns_b, veth_b, ns_a, ns_b);
    if (system(cmd) != 0) { teardown(); *skip = "ip netns add / veth failed (no CAP_SYS_ADMIN in this container?)"; return NULL; }
    /* mpirun's launch agent (in place of ssh): `agent HOST COMMAND…` runs COMMAND on node-b */
    snprintf(agent, sizeof agent, "%s/agent.sh", root);
    FILE *f = fopen(agent, "w");
    if (!f) { teardown(); *skip = "cannot write the agent"; return NULL; }
    fprintf(f, "#!/bin/sh\nshift\nexec ip netns exec %s unshare --uts sh -c \"hostname node-b; $*\"\n", ns_b);
    fclose(f);
    chmod(agent, 0755);
    return root;
}

/* the command that runs 2 ranks, rank 0 on node-a and rank 1 on node-b, training into ROOT/name */
static void job(char *cmd, size_t n, const char *name, const char *flags) {
    snprintf(cmd, n, "ip netns exec %s unshare --uts sh -c 'hostname node-a; exec env ASAN_OPTIONS=detect_leaks=0 "
             "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe --bind-to none "
             "--host 10.77.0.1,10.77.0.2 -np 2 --mca plm_rsh_agent %s --mca btl tcp,self "
             "--mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 "
             "%s " TINY " --data %s/cifar %s --out %s/%s'", ns_a, agent, train_mpi, root, flags, root, name);
}

static void link_set(const char *state) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ip -n %s link set %s %s", ns_b, veth_b, state);
    if (system(cmd) != 0) fprintf(stderr, "%s failed\n", cmd);
}

static char out[65536];

VG_TEST(netns_a_link_cut_between_hosts_ends_the_job_naming_the_rank_and_resumes_exactly) {
    const char *why = NULL;
    if (!setup(&why)) VG_SKIP(why);
    char cmd[4096], launch_cmd[4400], log[512], latest[512], csv[512];
    const double timeout = 3;
    snprintf(log, sizeof log, "%s/cut.log", root);
    snprintf(latest, sizeof latest, "%s/cut/latest", root);
    snprintf(csv, sizeof csv, "%s/cut/metrics.csv", root);
    job(cmd, sizeof cmd, "cut", "--steps 1000000 --save-every 10 --log-every 10 --comm-timeout 3");
    snprintf(launch_cmd, sizeof launch_cmd, "./launch --max-restarts 0 --grace 3 -- %s", cmd);
    int launcher = vg_test_spawn(launch_cmd, log);
    double t0 = vg_now_s();
    while (vg_now_s() - t0 < 60 && vg_test_count_lines(csv) < 6) sleep_s(0.05);       /* 50 steps, 5 checkpoints */
    bool started = vg_test_count_lines(csv) >= 6;
    link_set("down");
    double t_cut = vg_now_s();
    int rc = vg_test_wait(launcher);                                 /* --grace bounds a lingering mpirun */
    double took = vg_now_s() - t_cut;
    kill_in(ns_b); kill_in(ns_a);
    link_set("up");
    char *text = vg_test_read_file(log, NULL);
    snprintf(out, sizeof out, "%s", text ? text : "");
    free(text);
    REQUIRE(started);
    CHECK_MSG(rc == 4 && strstr(out, "rank 0 (node-a): waited 3 s for the other ranks") &&
              strstr(out, "no answer from rank 1 (on node-b)") && strstr(out, "cut off by the network"),
              "exit %d:\n%s", rc, out);
    /* measured: 3 s of timeout, 1 s of liveness check, --grace 3 s for mpirun, a few s of slack on a busy machine */
    CHECK_MSG(took < timeout + 20, "the job ended %.1f s after the link went down (--comm-timeout %.0f)", took, timeout);
    printf("    link down: rank 0 named rank 1 and the job ended %.1f s later (--comm-timeout 3 s, liveness check 1 s, --grace 3 s)\n", took);

    /* the last checkpoint resumes, on both hosts again, and matches an undisturbed run to the same step */
    char target[512] = "";
    ssize_t len = readlink(latest, target, sizeof target - 1);
    target[len > 0 ? len : 0] = 0;
    long long step = strstr(target, "step-") ? atoll(strstr(target, "step-") + 5) : 0;
    /* metrics.csv's line of step 50 can come before step 50's checkpoint is switched in (a slow
     * machine, ASan): the one of step 40 is there by then */
    REQUIRE(step >= 40);
    char flags[512];
    snprintf(flags, sizeof flags, "--steps 1000000 --log-every 10 --save-every 0 --comm-timeout 30 --stop-at %lld --resume %s/cut", step + 20, root);
    job(cmd, sizeof cmd, "cut", flags);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "resumed from") && strstr(out, "rank 0 on node-a, 1 on node-b"), "resume: exit %d:\n%s", rc, out);
    snprintf(flags, sizeof flags, "--steps 1000000 --log-every 10 --save-every 0 --comm-timeout 30 --stop-at %lld", step + 20);
    job(cmd, sizeof cmd, "calm-cut", flags);
    rc = vg_test_run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "undisturbed: exit %d:\n%s", rc, out);
    char a[512], b[512], la[16384], lb[16384];
    snprintf(a, sizeof a, "%s/calm-cut/model.safetensors", root);
    snprintf(b, sizeof b, "%s/cut/model.safetensors", root);
    CHECK_MSG(vg_test_same_bytes(a, b), "resumed after the cut: weights at step %lld differ from the undisturbed run's", step + 20);
    snprintf(a, sizeof a, "%s/calm-cut/metrics.csv", root);
    snprintf(b, sizeof b, "%s/cut/metrics.csv", root);
    vg_test_loss_columns(a, la, sizeof la);
    vg_test_loss_columns(b, lb, sizeof lb);
    CHECK_MSG(la[0] && !strcmp(la, lb), "loss rows differ:\n%s\nvs\n%s", lb, la);
    teardown();
}

VG_TEST(netns_a_short_blip_of_the_link_changes_nothing) {
    const char *why = NULL;
    if (!setup(&why)) VG_SKIP(why);
    char cmd[4096], log[512], csv[512];
    const char *flags = "--steps 600 --log-every 1 --save-every 0 --comm-timeout 10";
    job(cmd, sizeof cmd, "calm", flags);
    int rc = vg_test_run(cmd, out, sizeof out);
    REQUIRE(rc == 0);
    job(cmd, sizeof cmd, "blip", flags);
    snprintf(log, sizeof log, "%s/blip.log", root);
    snprintf(csv, sizeof csv, "%s/blip/metrics.csv", root);
    int pid = vg_test_spawn(cmd, log);
    double t0 = vg_now_s();
    while (vg_now_s() - t0 < 60 && vg_test_count_lines(csv) < 100) sleep_s(0.01);
    int before = vg_test_count_lines(csv);
    link_set("down");
    sleep_s(1.0);
    int during = vg_test_count_lines(csv) - before;
    link_set("up");
    double t_up = vg_now_s();
    while (vg_now_s() - t_up < 30 && vg_test_count_lines(csv) <= before + during + 1) sleep_s(0.01);
    double resumed_after = vg_now_s() - t_up;
    rc = vg_test_wait(pid);
    kill_in(ns_b);
    char *text = vg_test_read_file(log, NULL);
    snprintf(out, sizeof out, "%s", text ? text : "");
    free(text);
    CHECK_MSG(before >= 100 && before < 590, "the blip did not land mid-run (%d rows logged before it)", before);
    const char *tail = strlen(out) > 2000 ? out + strlen(out) - 2000 : out;
    char calm_csv[512];
    snprintf(calm_csv, sizeof calm_csv, "%s/calm/metrics.csv", root);
    CHECK_MSG(rc == 0 && vg_test_count_lines(csv) == vg_test_count_lines(calm_csv), "exit %d, %d rows in metrics.csv (undisturbed: %d):\n…%s", rc, vg_test_count_lines(csv), vg_test_count_lines(calm_csv), tail);
    CHECK_MSG(during <= 2, "%d steps were logged while the link was down", during);
    char a[512], b[512], la[65536], lb[65536];
    snprintf(a, sizeof a, "%s/calm/model.safetensors", root);
    snprintf(b, sizeof b, "%s/blip/model.safetensors", root);
    CHECK_MSG(vg_test_same_bytes(a, b), "the run with a blip ended with other weights than the undisturbed run");
    snprintf(a, sizeof a, "%s/calm/metrics.csv", root);
    snprintf(b, sizeof b, "%s/blip/metrics.csv", root);
    vg_test_loss_columns(a, la, sizeof la);
    vg_test_loss_columns(b, lb, sizeof lb);
    CHECK_MSG(la[0] && !strcmp(la, lb), "the loss rows differ from the undisturbed run's");
    printf("    link down 1.0 s at step %d: %d steps logged meanwhile, training went on %.1f s after it came back; "
           "weights and losses equal the undisturbed run's\n", before - 1, during, resumed_after);
    teardown();
}
