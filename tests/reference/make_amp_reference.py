"""make_amp_reference.py — PyTorch's bf16 autocast on a ViT, the reference for vitgrad's --amp.

Writes tests/reference/amp_reference.safetensors, read by tests/test_amp.c: the vit-mnist preset
(28x28x1 images, patch 7, dim 64, depth 4, heads 4, 10 classes; timm's layout, the module of
make_vit_reference.py), seeded, with biases, norms and cls_token perturbed so that each visibly
matters; a batch of 8 inputs and labels; then

  - under torch.autocast("cpu", dtype=torch.bfloat16) for the forward (loss and backward outside,
    as in a training loop): the logits, the loss (cross-entropy, label smoothing 0.1, on the FP32
    logits) and every parameter gradient (logits.amp, loss.amp, grad.amp.<key>);
  - the same in FP32 (logits.fp32, loss.fp32): how far bf16 moves the numbers;
  - vitgrad's --amp semantics written in PyTorch (logits.rounded, loss.rounded, grad.rounded.<key>):
    every matrix product — forward, and its two backward products — takes its two inputs rounded to
    bf16 (round to nearest even) and sums in FP32; outputs and everything else stay FP32. vitgrad
    must match this to FP32 rounding (plus the odd input that rounds the other way), far closer than
    to torch.autocast — the discriminating comparison; torch.autocast's, a looser one.

PyTorch's CPU autocast runs conv2d, linear and matmul (Q·Kᵀ, A·V) in bf16 and rounds their outputs
to bf16; the ops that follow (GELU, softmax, the residual adds promote to FP32) take those bf16
values. vitgrad keeps every output FP32 and rounds only the products' inputs, so the two agree to
bf16 precision, not bit for bit. Run with Debian's python3-torch (1.13):

    /usr/bin/python3 tests/reference/make_amp_reference.py

Deterministic: a rerun gives byte-identical files (seeded, one thread).
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402
from make_vit_reference import PRESETS, VisionTransformer, f32, perturb  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
torch.set_num_threads(1)
PRESET, BATCH = "vit-mnist", 8


def r(t):
    """t rounded to bf16 (nearest even) and back to FP32"""
    return t.bfloat16().float()


class RoundedMatmul(torch.autograd.Function):
    """a @ b with both inputs rounded to bf16, FP32 sums; backward likewise: da = r(g) @ r(b)^T,
    db = r(a)^T @ r(g), each summed back over broadcast batch axes."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return r(a) @ r(b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = r(g) @ r(b).transpose(-2, -1)
        gb = r(a).transpose(-2, -1) @ r(g)
        return ga.sum_to_size(a.shape), gb.sum_to_size(b.shape)


def rounded_linear(self, x):
    y = RoundedMatmul.apply(x, self.weight.t())
    return y + self.bias if self.bias is not None else y


def rounded_patch_embed(self, x):
    w = self.proj.weight
    cols = F.unfold(x, w.shape[2], stride=self.proj.stride[0])           # (B, K, P)
    y = RoundedMatmul.apply(w.reshape(w.shape[0], -1), cols) + self.proj.bias[:, None]
    return y.transpose(1, 2)                                             # (B, N, D)


def rounded_attention(self, x):
    B, N, C = x.shape
    qkv = self.qkv(x).reshape(B, N, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
    q, k, v = qkv.unbind(0)
    attn = (RoundedMatmul.apply(q, k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
    x = RoundedMatmul.apply(attn, v).transpose(1, 2).reshape(B, N, C)
    return self.proj(x)


def run_rounded(model, x, labels):
    """vitgrad's --amp semantics: the three layer kinds' forward swapped for the rounded ones"""
    import make_vit_reference as mvr
    saved = (torch.nn.Linear.forward, mvr.PatchEmbed.forward, mvr.Attention.forward)
    torch.nn.Linear.forward, mvr.PatchEmbed.forward, mvr.Attention.forward = \
        rounded_linear, rounded_patch_embed, rounded_attention
    try:
        return run(model, x, labels, amp=False)
    finally:
        torch.nn.Linear.forward, mvr.PatchEmbed.forward, mvr.Attention.forward = saved


def run(model, x, labels, amp):
    model.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
        logits = model(x)
    loss = F.cross_entropy(logits.float(), labels, label_smoothing=0.1)
    loss.backward()
    return logits.float(), loss


def main(path):
    cfg = PRESETS[PRESET]
    torch.manual_seed(0)
    m = VisionTransformer(**cfg)
    perturb(m)
    x = torch.randn(BATCH, cfg["chans"], cfg["img"], cfg["img"])
    labels = torch.randint(0, cfg["classes"], (BATCH,))
    out = {k: f32(v) for k, v in m.state_dict().items()}
    out["input"] = f32(x)
    out["labels"] = labels.numpy().astype(np.int64)
    logits, loss = run(m, x, labels, amp=False)
    out["logits.fp32"] = f32(logits)
    out["loss.fp32"] = np.array([loss.item()], dtype=np.float64)
    logits, loss = run(m, x, labels, amp=True)
    out["logits.amp"] = f32(logits)
    out["loss.amp"] = np.array([loss.item()], dtype=np.float64)
    for name, p in m.named_parameters():
        out[f"grad.amp.{name}"] = f32(p.grad)
    logits, loss = run_rounded(m, x, labels)
    out["logits.rounded"] = f32(logits)
    out["loss.rounded"] = np.array([loss.item()], dtype=np.float64)
    for name, p in m.named_parameters():
        out[f"grad.rounded.{name}"] = f32(p.grad)
    meta = {"preset": PRESET, "config": json.dumps(cfg, sort_keys=True), "batch": str(BATCH),
            "label_smoothing": "0.1", "autocast": "cpu, torch.bfloat16, forward only",
            "torch": torch.__version__}
    safetensors_io.save(path, out, meta)
    print(f"wrote tests/reference/amp_reference.safetensors ({os.path.getsize(path):,} bytes)")


if __name__ == "__main__":
    main(os.path.join(HERE, "amp_reference.safetensors"))
