"""make_train_reference.py — a 10-step AdamW trajectory in PyTorch, for tests/test_train.c.

A small ViT (timm layout, the module of make_vit_reference.py: 16x16 images, patch 4, dim 32,
depth 2, heads 2, 10 classes, CLS pooling) is trained for 10 steps on 10 fixed random batches of 8
with torch.optim.AdamW (betas 0.9/0.999, eps 1e-8, weight decay 0.05 only on >=2-D weights, not on
biases, norms, pos_embed, cls_token), lr from vitgrad's schedule (linear warmup 3 steps then cosine
to min_lr at step 10), cross-entropy with label smoothing 0.1, and clip_grad_norm_(max_norm=0.5).

Writes tests/reference/train_reference.safetensors: init.<key> (the initial weights), x.<i>, y.<i>
(the batches), losses (10,), lrs (10,), grad_norms (10,), final.<key> (the weights after 10 steps).

    /usr/bin/python3 tests/reference/make_train_reference.py

Deterministic: a rerun gives a byte-identical file (seeded, one thread).
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


if __name__ == "__main__":
    main()
