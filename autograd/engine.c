/* engine.c — recording nodes, the backward walk, grad mode, gradient accumulation. */
#include "autograd.h"
#include <stdlib.h>
#include <string.h>

static int no_grad_depth;
bool vg_grad_enabled(void) { return no_grad_depth == 0; }
void vg_no_grad_begin(void) { no_grad_depth++; }
void vg_no_grad_end(void) { if (no_grad_depth > 0) no_grad_depth--; }

bool vg_needs_grad(int n, vg_tensor *const *inputs) {
    if (no_grad_depth) return false;
    for (int i = 0; i < n; i++) if (inputs[i] && inputs[i]->requires_grad) return true;
    return false;
}

vg_node *vg_record(vg_tensor *out, const char *op, vg_backward_fn backward, int n, vg_tensor *const *inputs) {
    if (!out) return NULL;
    vg_node *node = vg_arena_alloc(sizeof *node);
    memset(node, 0, sizeof *node);
    node->op = op;
    node->backward = backward;
    node->out = out;
    node->n_inputs = n;
    for (int i = 0; i < n; i++) {
        node->inputs[i] = inputs[i];
        /* its values may be read in backward (parameters are never overwritten: not counted) */
        if (inputs[i] && !inputs[i]->storage->persistent) inputs[i]->storage->consumers++;
    }
    out->node = node;
    out->requires_grad = true;
    vg_profile_recorded_(node);
    return node;
}

/* ---------------------------------------------------------------- gradient accumulation */
/* A fresh gradient buffer for t: persistent (zeroed) for a persistent leaf, an uninitialised arena
 * tensor otherwise (the caller overwrites all of it). */
static vg_tensor *new_grad_buffer(const vg_tensor *t) {
    return t->persistent ? vg_persistent_zeros(t->ndim, t->shape) : vg_empty(t->ndim, t->shape);
}

/* g may be adopted as t's gradient buffer: arena-owned, contiguous, t's shape, and t (a step tensor)
 * has no gradient yet. */
static bool can_adopt(const vg_tensor *t, const vg_tensor *g) {
    return !t->grad && !t->persistent && !g->persistent && !g->storage->persistent &&
           vg_same_shape(t, g) && vg_is_contiguous(g);
}

static void add_into_grad(vg_tensor *t, const vg_tensor *g) {
    if (!t->grad) {                                 /* first contribution: a copy */
        t->grad = new_grad_buffer(t);
        vg_copy_raw(t->grad, g);
        return;
    }
    real *dst = vg_data(t->grad);
    const real *src = vg_data(vg_is_contiguous(g) ? (vg_tensor *)g : vg_contiguous_raw(g));
    const int64_t n = vg_numel(t->grad);
    if (n <= (1 << 18)) {       /* no OpenMP region at all: even a serialised one allocates a team */
        for (int64_t i = 0; i < n; i++) dst[i] += src[i];
        return;
    }
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) dst[i] += src[i];
}

void vg_accumulate_grad(vg_tensor *t, const vg_tensor *g) {
    if (!t || !g || !t->requires_grad) return;
    if (!vg_same_shape(t, g)) {                     /* the sum is a fresh tensor: adopt it if we can */
        vg_tensor *s = vg_sum_to_shape(g, t->ndim, t->shape);
        if (s && s != g && can_adopt(t, s)) { t->grad = s; return; }
        g = s;
        if (!g) return;
    }
    add_into_grad(t, g);
}

void vg_accumulate_grad_owned(vg_tensor *t, vg_tensor *g) {
    if (!t || !g || !t->requires_grad) return;
    if (can_adopt(t, g)) { t->grad = g; return; }
    vg_accumulate_grad(t, g);
}

real *vg_grad_accumulator(vg_tensor *t) {
    if (!t || !t->requires_grad || !t->grad) return NULL;
    return vg_same_shape(t, t->grad) && vg_is_contiguous(t->grad) ? vg_data(t->grad) : NULL;
}

void vg_zero_grad(vg_tensor *t) {
    if (t && t->grad) vg_fill_raw(t->grad, 0);
}

vg_tensor *vg_detach(vg_tensor *t) {
    if (!t) return NULL;
    vg_tensor *d = vg_view_raw(t, t->ndim, t->shape, t->strides, t->offset);
    d->requires_grad = false;
    return d;
}

/* ---------------------------------------------------------------- topological order */
/* Iterative DFS (graphs of deep models would overflow a recursive one); postorder = inputs first.
 * The stack and the result live in grow-only buffers kept between calls, so a steady-state
 * training step does not malloc here; the result is valid until the next walk. */
static int epoch;
typedef struct { vg_node *node; int next_input; } walk_frame;   /* DFS stack entry */
static walk_frame *walk_stack;
static vg_node **walk_out;
static int walk_stack_cap, walk_out_cap;

/* p grown to hold at least `need` elements (contents kept); NULL and an empty buffer when out of memory */
static void *grown(void *p, int *cap, int need, size_t elem) {
    if (p && need <= *cap) return p;
    int c = *cap > 0 ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = realloc(p, elem * (size_t)c);
    if (!q) { free(p); *cap = 0; return NULL; }
    *cap = c;
    return q;
}

/* Nodes reachable from root in topological order (inputs first) into walk_out; -1 when out of memory. */
static int walk_graph(vg_tensor *root) {
    if (!root || !root->node) return 0;
    epoch++;
    int count = 0, top = 0;
    if (!(walk_stack = grown(walk_stack, &walk_stack_cap, 1, sizeof *walk_stack))) return -1;
    walk_stack[top++] = (walk_frame){root->node, 0};
    root->node->mark = epoch;
    while (top) {
        walk_frame *f = &walk_stack[top - 1];
        if (f->next_input < f->node->n_inputs) {
            vg_tensor *in = f->node->inputs[f->next_input++];
            if (in && in->node && in->node->mark != epoch) {
                in->node->mark = epoch;
                if (!(walk_stack = grown(walk_stack, &walk_stack_cap, top + 1, sizeof *walk_stack))) return -1;
                walk_stack[top++] = (walk_frame){in->node, 0};
            }
        } else {
            if (!(walk_out = grown(walk_out, &walk_out_cap, count + 1, sizeof *walk_out))) return -1;
            walk_out[count++] = f->node;
            top--;
        }
    }
    return count;
}

int vg_graph_nodes(vg_tensor *root, vg_node **out, int max) {
    int count = walk_graph(root);
    for (int i = 0; out && i < count && i < max; i++) out[i] = walk_out[i];
    return count < 0 ? 0 : count;
}

/* ---------------------------------------------------------------- gradient-ready hook */
static vg_grad_ready_fn ready_hook;
static void *ready_ctx;
void vg_set_grad_ready_hook(vg_grad_ready_fn fn, void *ctx) { ready_hook = fn; ready_ctx = ctx; }

static bool hooked_leaf(const vg_tensor *t) { return t && !t->node && t->requires_grad && t->persistent; }

/* each hooked leaf's grad_pending := the number of times it is an input of a node in order[] */
static void count_consumers(vg_node **order, int n) {
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++)
            for (int k = 0; k < order[i]->n_inputs; k++) {
                vg_tensor *in = order[i]->inputs[k];
                if (hooked_leaf(in)) in->grad_pending = pass ? in->grad_pending + 1 : 0;
            }
}

/* node's rule has run (or had nothing to do): its leaf inputs have one consumer fewer */
static void consumed(const vg_node *node) {
    for (int k = 0; k < node->n_inputs; k++) {
        vg_tensor *in = node->inputs[k];
        if (hooked_leaf(in) && --in->grad_pending == 0) ready_hook(in, ready_ctx);
    }
}

bool vg_backward(vg_tensor *root, const vg_tensor *grad_root) {
    if (!root) { vg_set_error("backward: root is NULL (an earlier op failed: %s)", vg_error()); return false; }
    if (!root->requires_grad) { vg_set_error("backward: the tensor does not require grad (no graph was recorded)"); return false; }
    if (!grad_root && vg_numel(root) != 1) {
        vg_set_error("backward: root has %lld elements; pass grad_root for a non-scalar root", (long long)vg_numel(root));
        return false;
    }
    if (grad_root && !vg_same_shape(root, grad_root)) { vg_set_error("backward: grad_root shape differs from root"); return false; }
    if (!root->node) {   /* a leaf: its gradient is grad_root itself */
        vg_tensor *g = grad_root ? (vg_tensor *)grad_root : vg_ones(root->ndim, root->shape);
        vg_accumulate_grad(root, g);
        return true;
    }
    const int n = walk_graph(root);
    if (n < 0) { vg_set_error("backward: out of memory walking the graph"); return false; }
    vg_node **order = walk_out;                     /* no rule walks the graph: stays valid */
    /* non-leaf gradients belong to this call only: reset them (idempotent backward) */
    for (int i = 0; i < n; i++) order[i]->out->grad = NULL;
    if (ready_hook) count_consumers(order, n);
    vg_no_grad_begin();
    /* the seed is always a fresh contiguous buffer: rules may adopt or add into it */
    if (grad_root) { root->grad = vg_empty_like(grad_root); vg_copy_raw(root->grad, grad_root); }
    else root->grad = vg_ones(root->ndim, root->shape);
    for (int i = n - 1; i >= 0; i--) {
        vg_node *node = order[i];
        if (node->out->grad) {
            vg_profile_rule_begin_();
            node->backward(node, node->out->grad);
            vg_profile_rule_end_(node);
        }
        if (ready_hook) consumed(node);
    }
    vg_no_grad_end();
    return true;
}
