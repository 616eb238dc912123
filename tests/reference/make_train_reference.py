"""make_train_reference.py — a 10-step AdamW trajectory in PyTorch, for tests/test_train.c.

A small ViT (timm layout, the module of make_vit_reference.py: 16x16 images, patch 4, dim 32,
depth 2, heads 2, 10 classes, CLS pooling) is trained for 10 steps on 10 fixed random batches of 8
with torch.optim.AdamW (betas 0.9/0.999, eps 1e-8, weight decay 0.05 only on >=2-D weights, not on
biases, norms, pos_embed, cls_token), lr from vitgrad's schedule (linear warmup 3 steps then cosine
to min_lr at step 10), cross-entropy with label smoothing 0.1, and clip_grad_norm_(max_norm=0.5).

Writes tests/reference/train_reference.safetensors: init.<key> (the initial weights), x.<i>, y.<i>
(the batches), losses (10,), lrs (10,), grad_norms (10,), final.<key> (the weights after 10 steps).

And tests/reference/train_muon_reference.safetensors, the same 10 steps with Muon for the blocks'
2-D weights (qkv, proj, fc1, fc2) and AdamW for the rest, as vitgrad's --muon: torch.optim.Muon's
update (PyTorch 2.9, torch/optim/_muon.py: nesterov, momentum 0.95, Newton-Schulz 5 steps with
(3.4445, -4.7750, 2.0315), eps 1e-7) written out here for Debian's torch 1.13, which has no Muon,
with its Newton-Schulz in float32 (torch runs it in bf16) and once per adjustment: "original" at
lr 0.02 (muon.original.*) and "match_rms_adamw" at AdamW's lr (muon.match.*).

    /usr/bin/python3 tests/reference/make_train_reference.py

Deterministic: a rerun on the same CPU gives a byte-identical file (seeded, one thread; torch's
kernels differ in the last bits between CPUs).
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402
from make_vit_reference import VisionTransformer, f32  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
torch.set_num_threads(1)

STEPS, BATCH, BASE_LR, MIN_LR, WARMUP, WD, CLIP, SMOOTH = 10, 8, 1e-3, 1e-5, 3, 0.05, 0.5, 0.1


def lr_at(step):
    """vitgrad's vg_lr_at: step is 0-based (the update about to be taken)."""
    if WARMUP > 0 and step < WARMUP:
        return BASE_LR * (step + 1) / WARMUP
    progress = min(1.0, (step - WARMUP) / (STEPS - WARMUP))
    return MIN_LR + 0.5 * (BASE_LR - MIN_LR) * (1.0 + math.cos(math.pi * progress))


NS_A, NS_B, NS_C, NS_EPS, MU = 3.4445, -4.7750, 2.0315, 1e-7, 0.95


def newton_schulz(u):
    x = u.T if u.size(0) > u.size(1) else u
    x = x / x.norm().clamp(min=NS_EPS)
    for _ in range(5):
        a = x @ x.T
        b = NS_B * a + NS_C * a @ a
        x = NS_A * x + b @ x
    return x.T if u.size(0) > u.size(1) else x


def muon_step(params, bufs, lr, wd, adjust):
    """torch.optim.Muon's _single_tensor_muon (nesterov), float32."""
    with torch.no_grad():
        for p, buf in zip(params, bufs):
            if p.grad is None:
                continue
            buf.lerp_(p.grad, 1 - MU)
            update = newton_schulz(p.grad.lerp(buf, MU))
            A, B = p.shape
            ratio = math.sqrt(max(1, A / B)) if adjust == "original" else 0.2 * math.sqrt(max(A, B))
            p.mul_(1 - lr * wd)
            p.add_(update, alpha=-lr * ratio)


def muon_trajectory(out, adjust, muon_lr):
    """the same 10 steps: Muon for blocks.*'s 2-D weights at muon_lr on the schedule, AdamW for the rest"""
    torch.manual_seed(0)
    model = VisionTransformer(img=16, patch=4, chans=3, classes=10, dim=32, depth=2, heads=2)
    key = "muon." + adjust.split("_")[0]
    muon = [p for n, p in model.named_parameters() if n.startswith("blocks.") and p.ndim == 2]
    ids = {id(p) for p in muon}
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if id(p) in ids:
            continue
        (no_decay if p.ndim <= 1 or name in ("pos_embed", "cls_token") else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WD}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=BASE_LR, betas=(0.9, 0.999), eps=1e-8)
    bufs = [torch.zeros_like(p) for p in muon]
    g = torch.Generator().manual_seed(1)
    losses = []
    for step in range(STEPS):
        x = torch.randn(BATCH, 3, 16, 16, generator=g)
        y = torch.randint(0, 10, (BATCH,), generator=g)
        lr = lr_at(step)
        for group in opt.param_groups:
            group["lr"] = lr
        loss = F.cross_entropy(model(x), y, label_smoothing=SMOOTH)
        opt.zero_grad()
        for p in muon:
            p.grad = None
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=CLIP)
        opt.step()
        muon_step(muon, bufs, lr * muon_lr / BASE_LR, WD, adjust)
        losses.append(loss.item())
    out[f"{key}.losses"] = np.array(losses, dtype=np.float64)
    out.update({f"{key}.final.{k}": f32(v) for k, v in model.state_dict().items()})
    return losses


def main():
    torch.manual_seed(0)
    model = VisionTransformer(img=16, patch=4, chans=3, classes=10, dim=32, depth=2, heads=2)
    out = {f"init.{k}": f32(v) for k, v in model.state_dict().items()}
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim <= 1 or name in ("pos_embed", "cls_token") else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WD}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=BASE_LR, betas=(0.9, 0.999), eps=1e-8)
    g = torch.Generator().manual_seed(1)
    losses, lrs, norms = [], [], []
    for step in range(STEPS):
        x = torch.randn(BATCH, 3, 16, 16, generator=g)
        y = torch.randint(0, 10, (BATCH,), generator=g)
        out[f"x.{step}"] = f32(x)
        out[f"y.{step}"] = y.numpy().astype(np.int64)
        lr = lr_at(step)
        for group in opt.param_groups:
            group["lr"] = lr
        loss = F.cross_entropy(model(x), y, label_smoothing=SMOOTH)
        opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=CLIP)
        opt.step()
        losses.append(loss.item()); lrs.append(lr); norms.append(norm.item())
    out["losses"] = np.array(losses, dtype=np.float64)
    out["lrs"] = np.array(lrs, dtype=np.float64)
    out["grad_norms"] = np.array(norms, dtype=np.float64)
    out.update({f"final.{k}": f32(v) for k, v in model.state_dict().items()})
    meta = {"steps": str(STEPS), "batch": str(BATCH), "base_lr": repr(BASE_LR), "min_lr": repr(MIN_LR),
            "warmup": str(WARMUP), "weight_decay": repr(WD), "clip": repr(CLIP), "label_smoothing": repr(SMOOTH),
            "torch": torch.__version__}
    safetensors_io.save(os.path.join(HERE, "train_reference.safetensors"), out, metadata=meta)
    print("losses", " ".join(f"{v:.6f}" for v in losses))
    mu = {}
    for adjust, muon_lr in (("original", 0.02), ("match_rms_adamw", BASE_LR)):
        mu[f"muon.{adjust.split('_')[0]}.lr"] = np.array([muon_lr], dtype=np.float64)
        ls = muon_trajectory(mu, adjust, muon_lr)
        print(f"muon {adjust} losses", " ".join(f"{v:.6f}" for v in ls))
    safetensors_io.save(os.path.join(HERE, "train_muon_reference.safetensors"), mu,
                        metadata={**meta, "muon_momentum": repr(MU), "ns": "5 steps (3.4445, -4.7750, 2.0315), float32"})


if __name__ == "__main__":
    main()
