"""make_nn_reference.py — PyTorch reference values for the nn layers (read by tests/test_nn.c; the
pooling layers' go to pool_reference.safetensors, read by tests/test_pool.c).

Each case builds one layer in PyTorch (float32, CPU, one thread, fixed seeds), runs it on small
random inputs, and backpropagates a fixed random upstream gradient `<case>.dy` (for the losses:
the scalar loss itself). Stored per case: inputs, parameters, outputs and every gradient, under
names "<case>.<tensor>" — gradients are "<case>.d<tensor>". Deterministic: rerunning writes the
same bytes on the same machine (check with sha256sum); on another CPU, PyTorch's matrix products
may differ in the last bits of nn_reference's values (pool_reference has none).

    /usr/bin/python3 tests/reference/make_nn_reference.py
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nn_reference.safetensors")
POOL_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pool_reference.safetensors")
tensors = {}


def put(name, t):
    a = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    if a.dtype == np.float64:
        a = a.astype(np.float32)
    assert name not in tensors, name
    tensors[name] = np.array(a, order="C", copy=True)   # keeps 0-d arrays 0-d (a scalar loss)


def leaf(shape, std=1.0):
    return (torch.randn(*shape) * std).requires_grad_(True)


def run(case, out, leaves, extra=None):
    """Backprop Σ out ⊙ dy (dy fixed random) and store leaves, out, dy and all leaf grads."""
    dy = torch.randn(*out.shape)
    out.backward(dy)
    for name, t in leaves.items():
        put(f"{case}.{name}", t)
        put(f"{case}.d{name}", t.grad)
    put(f"{case}.y", out)
    put(f"{case}.dy", dy)
    for name, t in (extra or {}).items():
        put(f"{case}.{name}", t)


def linear_case(case, shape, in_f, out_f, bias):
    m = torch.nn.Linear(in_f, out_f, bias=bias)
    x = leaf(shape)
    leaves = {"x": x, "weight": m.weight}
    if bias:
        leaves["bias"] = m.bias
    run(case, m(x), leaves)


def conv_case(case, x_shape, out_ch, k, stride, pad):
    m = torch.nn.Conv2d(x_shape[1], out_ch, k, stride=stride, padding=pad)
    x = leaf(x_shape)
    run(case, m(x), {"x": x, "weight": m.weight, "bias": m.bias})


def timm_attention_core(qkv, heads):
    """timm Attention.forward between the qkv Linear and the proj Linear."""
    B, N, three_d = qkv.shape
    D = three_d // 3
    hd = D // heads
    q, k, v = qkv.reshape(B, N, 3, heads, hd).permute(2, 0, 3, 1, 4).unbind(0)
    attn = (q * hd ** -0.5) @ k.transpose(-2, -1)
    attn = attn.softmax(dim=-1)
    out = (attn @ v).transpose(1, 2).reshape(B, N, D)
    return out, attn


def pool_cases():
    """nn/pool.c's references (tests/test_pool.c), in their own file with their own seed: max
    pooling with and without padding, and on whole numbers (ties: the first maximum in row-major
    order takes the gradient); average pooling with count_include_pad=True; global average pooling.
    No matrix products, so the bytes do not depend on the machine's BLAS kernels."""
    torch.manual_seed(0)
    for case, shape, k, s, p in (("max_pool_k2", (2, 3, 6, 6), 2, 2, 0), ("max_pool_k3s2p1", (2, 2, 7, 5), 3, 2, 1)):
        x = leaf(shape)
        run(case, F.max_pool2d(x, k, s, p), {"x": x})
    x = torch.randint(-2, 3, (2, 2, 6, 7)).float().requires_grad_(True)
    run("max_pool_ties", F.max_pool2d(x, 3, 1, 1), {"x": x})
    for case, shape, k, s, p in (("avg_pool_k2", (2, 3, 6, 6), 2, 2, 0), ("avg_pool_k3s2p1", (2, 2, 7, 5), 3, 2, 1),
                                 ("avg_pool_k3s1", (2, 2, 5, 6), 3, 1, 0)):
        x = leaf(shape)
        run(case, F.avg_pool2d(x, k, s, p), {"x": x})
    x = leaf((2, 3, 4, 5))
    run("global_avg_pool", x.mean((2, 3)), {"x": x})


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    # ---- linear: 3-d input with bias, 4-d input without
    linear_case("linear", (2, 5, 8), 8, 12, True)
    linear_case("linear_nobias", (2, 3, 2, 8), 8, 6, False)

    # ---- conv2d: 3x3 stride 1 padding 1, and the ViT patch embedding (kernel = stride = 4)
    conv_case("conv3x3", (2, 3, 8, 8), 4, 3, 1, 1)
    conv_case("patch", (2, 3, 8, 8), 6, 4, 4, 0)

    # ---- layernorm, timm eps, random affine parameters
    ln = torch.nn.LayerNorm(8, eps=1e-6)
    with torch.no_grad():
        ln.weight.copy_(1 + 0.5 * torch.randn(8))
        ln.bias.copy_(0.5 * torch.randn(8))
    x = leaf((2, 5, 8), std=2.0)
    x.data += 3.0                       # a non-zero mean, as activations have
    run("layernorm", ln(x), {"x": x, "weight": ln.weight, "bias": ln.bias})

    # ---- bias + gelu (exact erf)
    x, b = leaf((2, 5, 8), std=1.5), leaf((8,))
    run("bias_gelu", F.gelu(x + b), {"x": x, "bias": b})

    # ---- attention core, 2 heads (B=2, N=5, D=8); the weights are stored as attn.weights
    qkv = leaf((2, 5, 24))
    out, attn = timm_attention_core(qkv, 2)
    run("attention", out, {"qkv": qkv}, {"weights": attn})

    # ---- mhsa = timm Attention(dim 8, heads 2, qkv_bias=True)
    qkv_lin, proj = torch.nn.Linear(8, 24, bias=True), torch.nn.Linear(8, 8)
    x = leaf((2, 5, 8))
    out, _ = timm_attention_core(qkv_lin(x), 2)
    run("mhsa", proj(out), {"x": x, "qkv.weight": qkv_lin.weight, "qkv.bias": qkv_lin.bias,
                            "proj.weight": proj.weight, "proj.bias": proj.bias})

    # ---- cross-entropy (mean), without and with label smoothing; backprop of the loss itself
    for case, eps in (("cross_entropy", 0.0), ("cross_entropy_ls", 0.1)):
        logits = leaf((6, 10), std=2.0)
        labels = torch.randint(0, 10, (6,), dtype=torch.int64)
        loss = F.cross_entropy(logits, labels, label_smoothing=eps)
        loss.backward()
        put(f"{case}.logits", logits)
        put(f"{case}.labels", labels.numpy().astype(np.int32))
        put(f"{case}.loss", loss)
        put(f"{case}.dlogits", logits.grad)

    meta = {"generator": "tests/reference/make_nn_reference.py", "torch": torch.__version__,
            "format": "<case>.<tensor>; gradients <case>.d<tensor>; upstream gradient <case>.dy"}
    for path, cases in ((OUT, None), (POOL_OUT, pool_cases)):
        if cases:
            tensors.clear()
            cases()
        safetensors_io.save(path, tensors, meta)
        size = os.path.getsize(path)
        print(f"wrote {path}: {len(tensors)} tensors, {size} bytes")
        assert size < 1 << 20


if __name__ == "__main__":
    main()
