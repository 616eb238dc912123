/* inspect.c — ./inspect SUBCOMMAND …: tools that show what the framework does at each step. */
#include <stdio.h>
#include <string.h>

int inspect_data_main(int argc, char **argv);
int inspect_examples_main(int argc, char **argv);
int inspect_trace_main(int argc, char **argv);
int inspect_patches_main(int argc, char **argv);
int inspect_posembed_main(int argc, char **argv);
int inspect_attention_main(int argc, char **argv);
int inspect_graph_main(int argc, char **argv);
int inspect_embed_main(int argc, char **argv);
int inspect_plot_main(int argc, char **argv);
int inspect_augment_main(int argc, char **argv);
int inspect_verify_main(int argc, char **argv);
int inspect_report_main(int argc, char **argv);

typedef struct { const char *name, *summary; int (*run)(int, char **); } subcommand;
static const subcommand subcommands[] = {
    {"data",      "images per split and class, image size, per-channel mean/std", inspect_data_main},
    {"examples",  "the worked examples of ViT courses, computed by the library", inspect_examples_main},
    {"trace",     "shape-flow table of a forward pass: shapes, parameters, FLOPs", inspect_trace_main},
    {"patches",   "an image cut into patches, and the patches as a token sequence (PNG)", inspect_patches_main},
    {"posembed",  "cosine similarity between position embeddings (grid, PNG)", inspect_posembed_main},
    {"attention", "the attention the head reads (class token, or patches for mean pooling), rollout, prediction (PNG)", inspect_attention_main},
    {"graph",     "the autograd graph of one forward + loss as Graphviz dot (--full-last-block: textbook)", inspect_graph_main},
    {"embed",     "k-NN accuracy of the L2-normalised image embeddings (DINO protocol)", inspect_embed_main},
    {"plot",      "loss and accuracy curves from a run's metrics.csv (PNG)", inspect_plot_main},
    {"augment",   "a training batch as the model sees it: RandAugment, erasing, Mixup/CutMix (PNG)", inspect_augment_main},
    {"report",    "one self-contained HTML page of a training run: curves, attention, embeddings, norms", inspect_report_main},
    {"verify",    "a checkpoint's tensors against the CRC-32C recorded when it was written", inspect_verify_main},
};
#define N_SUB (int)(sizeof subcommands / sizeof subcommands[0])

static void usage(FILE *f) {
    fprintf(f, "usage: ./inspect SUBCOMMAND [ARGS…]   (./inspect SUBCOMMAND --help for its flags)\n\nsubcommands:\n");
    for (int i = 0; i < N_SUB; i++) fprintf(f, "  %-12s %s\n", subcommands[i].name, subcommands[i].summary);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);        /* progress shows up even when piped to a file */
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) { usage(argc < 2 ? stderr : stdout); return argc < 2 ? 2 : 0; }
    for (int i = 0; i < N_SUB; i++)
        if (!strcmp(argv[1], subcommands[i].name)) return subcommands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "inspect: unknown subcommand '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
