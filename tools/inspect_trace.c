/* inspect_trace.c — `./inspect trace --model PRESET [--batch B]`: the shape-flow table of one
 * forward pass (vg_vit_trace): output shape, parameters and forward FLOPs per stage. */
#include "inspect_common.h"
#include <stdio.h>
#include <string.h>

int inspect_trace_main(int argc, char **argv);

static void usage(FILE *f) {
    fprintf(f, "usage: inspect trace (--model PRESET | --ckpt FILE) [--batch B]\n");
    ic_print_presets(f);
    fprintf(f, "  --ckpt: a model.safetensors written by ./train (its config is in the metadata)\n"
               "  --batch: batch size of the traced forward (default 8)\n"
               "Prints stage, output shape, parameters and forward FLOPs (for the whole batch).\n");
}

int inspect_trace_main(int argc, char **argv) {
    ic_source_opts o = {0};
    int batch = 8;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (ic_is_help(argv[i])) { usage(stdout); return 0; }
        if ((r = ic_source_arg("trace", argc, argv, &i, &o))) { if (r < 0) return IC_USAGE; continue; }
        if ((r = ic_take("trace", argc, argv, &i, "--batch", &v))) {
            if (r < 0 || !ic_int("trace", "--batch", v, 1, 4096, &batch)) return IC_USAGE;
            continue;
        }
        fprintf(stderr, "inspect trace: unknown argument '%s'\n", argv[i]); usage(stderr); return IC_USAGE;
    }
    if (!o.ckpt == !o.preset) { fprintf(stderr, "inspect trace: give exactly one of --model PRESET or --ckpt FILE\n"); usage(stderr); return IC_USAGE; }
    ic_model m;
    if (ic_source_model("trace", &o, &m)) return o.preset ? IC_USAGE : IC_FAIL;
    bool ok = vg_vit_trace(&m.m, batch, stdout);
    if (!ok) fprintf(stderr, "inspect trace: %s\n", vg_error());
    ic_model_free(&m);
    vg_arena_reset();
    return ok ? 0 : IC_FAIL;
}
