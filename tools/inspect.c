/* inspect.c — ./inspect SUBCOMMAND …: tools that show what the framework does at each step. */
#include <stdio.h>
#include <string.h>

int inspect_data_main(int argc, char **argv);

typedef struct { const char *name, *summary; int (*run)(int, char **); } subcommand;
static const subcommand subcommands[] = {
    {"data", "images per split and class, image size, per-channel mean/std", inspect_data_main},
};
#define N_SUB (int)(sizeof subcommands / sizeof subcommands[0])

static void usage(FILE *f) {
    fprintf(f, "usage: ./inspect SUBCOMMAND [ARGS…]   (./inspect SUBCOMMAND --help for its flags)\n\nsubcommands:\n");
    for (int i = 0; i < N_SUB; i++) fprintf(f, "  %-12s %s\n", subcommands[i].name, subcommands[i].summary);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) { usage(argc < 2 ? stderr : stdout); return argc < 2 ? 2 : 0; }
    for (int i = 0; i < N_SUB; i++)
        if (!strcmp(argv[1], subcommands[i].name)) return subcommands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "inspect: unknown subcommand '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
