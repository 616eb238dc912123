/* inspect_graph.c — `./inspect graph --model PRESET --out graph.dot`: the autograd graph of one
 * training forward (eval mode, no dropout) plus the cross-entropy loss, as Graphviz dot. A box is
 * a recorded op (vg_node: op name and output shape), an ellipse a leaf: parameters by their
 * state-dict names, the input image; an edge runs from each input to the op that used it.
 * By default the graph is the one training records: with CLS pooling the last block runs for the
 * class token alone (vg_vit_last_block_cls_only: narrow ops, a 1-token query path);
 * --full-last-block sets the model's full_last_block (./train's flag of the same name) and draws
 * the textbook block, every token through every block. Render with `dot -Tsvg graph.dot -o graph.svg`. */
#include "inspect_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int inspect_graph_main(int argc, char **argv);

static void usage(FILE *f) {
    fprintf(f, "usage: inspect graph (--model PRESET [--depth N] | --ckpt FILE) --out GRAPH.dot [--batch B]\n"
               "                     [--full-last-block]\n");
    ic_print_presets(f);
    fprintf(f, "  --depth: keep only the first N blocks of the preset (one block is easy to read)\n"
               "  --batch: images in the traced batch (default 2)\n"
               "  --full-last-block: every token through the last block, the textbook graph (as\n"
               "           ./train --full-last-block). Without it the graph is the one training records:\n"
               "           a class-token (cls pooling) model's logits read only the class token, so its\n"
               "           last block computes keys and values for every token but the query, proj and\n"
               "           MLP for the class token alone (narrow ops); the same loss and gradients for\n"
               "           less work. Mean-pooling models compute every token either way.\n"
               "Writes the graph of forward + cross-entropy loss: ops in topological order (boxes, with\n"
               "output shapes), parameters and the image as leaves (ellipses), one edge per op input.\n"
               "Render: dot -Tpng GRAPH.dot -o graph.png\n");
}

int inspect_graph_main(int argc, char **argv) {
    ic_source_opts o = {0};
    const char *out = NULL;
    int batch = 2, depth = 0;
    bool full_last_block = false;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (ic_is_help(argv[i])) { usage(stdout); return 0; }
        if (!strcmp(argv[i], "--full-last-block")) { full_last_block = true; continue; }
        if ((r = ic_source_arg("graph", argc, argv, &i, &o))) { if (r < 0) return IC_USAGE; continue; }
        if ((r = ic_take("graph", argc, argv, &i, "--out", &out))) { if (r < 0) return IC_USAGE; continue; }
        if ((r = ic_take("graph", argc, argv, &i, "--depth", &v))) { if (r < 0 || !ic_int("graph", "--depth", v, 1, 64, &depth)) return IC_USAGE; continue; }
        if ((r = ic_take("graph", argc, argv, &i, "--batch", &v))) { if (r < 0 || !ic_int("graph", "--batch", v, 1, 256, &batch)) return IC_USAGE; continue; }
        fprintf(stderr, "inspect graph: unknown argument '%s'\n", argv[i]); usage(stderr); return IC_USAGE;
    }
    if (!o.ckpt == !o.preset) { fprintf(stderr, "inspect graph: give exactly one of --model PRESET or --ckpt FILE\n"); usage(stderr); return IC_USAGE; }
    if (!out) { fprintf(stderr, "inspect graph: --out FILE is required\n"); usage(stderr); return IC_USAGE; }

    if (depth && !o.preset) { fprintf(stderr, "inspect graph: --depth only goes with --model PRESET\n"); return IC_USAGE; }
    ic_model mm;
    if (ic_source_model("graph", &o, &mm)) return o.preset ? IC_USAGE : IC_FAIL;
    vg_vit *m = &mm.m;
    if (depth && depth < m->cfg.depth) {                 /* keep the first `depth` blocks only */
        for (int b = depth; b < m->cfg.depth; b++) {
            vg_vit_block *bl = &m->blocks[b];
            vg_layernorm_free(&bl->norm1); vg_mhsa_free(&bl->attn); vg_layernorm_free(&bl->norm2);
            vg_linear_free(&bl->fc1); vg_linear_free(&bl->fc2);
        }
        m->cfg.depth = depth;
        snprintf(mm.source + strlen(mm.source), sizeof mm.source - strlen(mm.source), " with depth %d", depth);
    }
    if (full_last_block) {
        m->full_last_block = true;
        snprintf(mm.source + strlen(mm.source), sizeof mm.source - strlen(mm.source), ", full last block");
    } else if (vg_vit_last_block_cls_only(m))
        snprintf(mm.source + strlen(mm.source), sizeof mm.source - strlen(mm.source), ", last block for the class token");
    vg_params st = {0};
    vg_vit_state(m, &st);
    for (int k = 0; k < st.n; k++) st.items[k].tensor->name = st.items[k].name;   /* only in this tool */

    vg_rng rng = vg_rng_seed(0);
    const vg_vit_config *c = &m->cfg;
    vg_tensor *img = vg_randn(&rng, VG_DIMS(batch, c->in_chans, c->img_size, c->img_size), 0, 1);
    if (img) img->name = "image";
    int32_t *labels = calloc(batch, sizeof *labels);
    for (int b = 0; b < batch; b++) labels[b] = b % c->num_classes;
    vg_tensor *loss = vg_cross_entropy_fn(vg_vit_forward(m, img, false, NULL), labels, 0.1);
    const int max_nodes = 1 << 16;
    vg_node **nodes = malloc(sizeof *nodes * max_nodes);
    int n = loss && nodes ? vg_graph_nodes(loss, nodes, max_nodes) : -1;
    int rc = 0;
    FILE *f = NULL;
    if (n < 0 || n > max_nodes) { fprintf(stderr, "inspect graph: forward failed: %s\n", loss ? "graph too large" : vg_error()); rc = IC_FAIL; goto done; }
    if (!(f = fopen(out, "w"))) { fprintf(stderr, "inspect graph: %s: cannot write\n", out); rc = IC_FAIL; goto done; }

    /* leaves get ids in order of first use; a small linear table is enough (≈ 100 leaves) */
    vg_tensor **leaves = malloc(sizeof *leaves * (size_t)n * VG_NODE_MAX_INPUTS);
    int n_leaves = 0, n_edges = 0, n_params = 0;
    fprintf(f, "// autograd graph of %s: forward (batch %d) + cross-entropy loss, from ./inspect graph\n", mm.source, batch);
    fprintf(f, "digraph vit {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n");
    for (int k = 0; k < n; k++) {
        char s[96];
        vg_shape_str(nodes[k]->out, s, sizeof s);
        fprintf(f, "  n%d [label=\"%s\\n%s\"%s];\n", k, nodes[k]->op, s, k == n - 1 ? ", style=filled, fillcolor=\"#ffd0d0\"" : "");
    }
    for (int k = 0; k < n; k++)
        for (int i = 0; i < nodes[k]->n_inputs; i++) {
            vg_tensor *t = nodes[k]->inputs[i];
            if (t->node) {                                     /* inputs come earlier in topological order */
                int src = k - 1;
                while (src >= 0 && nodes[src] != t->node) src--;
                fprintf(f, "  n%d -> n%d;\n", src, k);
                n_edges++;
                continue;
            }
            int id = -1;
            for (int q = 0; q < n_leaves; q++) if (leaves[q] == t) id = q;
            if (id < 0) {
                id = n_leaves++;
                leaves[id] = t;
                char s[96];
                vg_shape_str(t, s, sizeof s);
                const bool param = t->name && strcmp(t->name, "image");
                n_params += param;
                fprintf(f, "  l%d [label=\"%s\\n%s\", shape=ellipse, style=filled, fillcolor=\"%s\"];\n", id,
                        t->name ? t->name : t->requires_grad ? "leaf" : "constant", s, param ? "#d0e0ff" : "#e0e0e0");
            }
            fprintf(f, "  l%d -> n%d;\n", id, k);
            n_edges++;
        }
    fprintf(f, "}\n");
    free(leaves);
    if (fclose(f)) { fprintf(stderr, "inspect graph: %s: write failed\n", out); rc = IC_FAIL; goto done; }
    printf("%s: forward + loss = %d ops, %d leaves (%d named parameters), %d edges, loss %.4f\nwrote %s\n",
           mm.source, n, n_leaves, n_params, n_edges, (double)vg_item(loss), out);
done:
    free(nodes); free(labels);
    for (int k = 0; k < st.n; k++) st.items[k].tensor->name = NULL;
    vg_params_free(&st);
    vg_arena_reset();
    ic_model_free(&mm);
    return rc;
}
