"""make_vit_reference.py — PyTorch reference numbers for vitgrad's Vision Transformer (vit/).

Writes two files read by tests/test_vit.c:

  tests/reference/vit_reference.safetensors
      A small ViT in timm's layout (16x16 images, patch 4, dim 32, depth 2, heads 2, 10 classes),
      seeded. Weights under timm's state-dict keys, the input batch (4, 3, 16, 16), labels, and for
      three variants — "cls" (CLS pooling, learned pos_embed), "mean" (mean of patch tokens, learned),
      "sincos" (CLS pooling, fixed MAE 2-D sin-cos pos_embed) — the logits, the loss (cross-entropy,
      label smoothing 0.1), every parameter gradient (grad.<variant>.<key>) and the L2-normalised
      pooled features (embed.<variant>). Metadata: the config, timm's key order, and the parameter
      counts of vitgrad's presets as PyTorch counts them.

  tests/reference/posembed_reference.safetensors
      MAE's 2-D sin-cos tables, and F.interpolate resizes (bilinear and bicubic, align_corners=False)
      of position tables: small ones in full, and a (1, 197, 768) table (14x14 -> 28x28, the ViT-B
      case) as a sampled subset with indices plus whole-tensor statistics, to keep the file small.
      The inputs are formulas the C test recomputes, so no input is stored.

timm itself is not needed: the module below is written in timm's layout (same parameter names,
order and forward). Run with Debian's python3-torch (1.13):

    /usr/bin/python3 tests/reference/make_vit_reference.py

Deterministic: a rerun gives byte-identical files (seeded, one thread).
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
torch.set_num_threads(1)


# ---------------------------------------------------------------- 2-D sin-cos (MAE's layout)
def sincos_1d(dim, pos):
    """[sin(pos * w_k), cos(pos * w_k)] for k < dim/2, w_k = 1 / 10000^(k / (dim/2)); float64."""
    omega = np.arange(dim // 2, dtype=np.float64) / (dim / 2.0)
    omega = 1.0 / 10000 ** omega
    out = np.outer(pos.reshape(-1), omega)
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)


def sincos_2d(dim, grid_h, grid_w, cls_token):
    """As MAE's get_2d_sincos_pos_embed: grid = meshgrid(w, h) ('xy'), so the first half of the
    dims encodes the column index, the second half the row index. CLS row zeros."""
    gh = np.arange(grid_h, dtype=np.float32)
    gw = np.arange(grid_w, dtype=np.float32)
    grid = np.stack(np.meshgrid(gw, gh), axis=0)           # (2, grid_h, grid_w); grid[0] = column
    emb = np.concatenate([sincos_1d(dim // 2, grid[0]), sincos_1d(dim // 2, grid[1])], axis=1)
    if cls_token:
        emb = np.concatenate([np.zeros([1, dim]), emb], axis=0)
    return emb


# ---------------------------------------------------------------- the model, timm's layout
class ConvAct(nn.Module):
    """one layer of vitgrad's conv stem: 3x3 conv, stride 2, padding 1, then ReLU; pool (CCT's
    tokenizer, --stem-pool 1): the conv at stride 1, then a 3x3 max pool, stride 2, padding 1"""
    def __init__(self, cin, cout, pool=False):
        super().__init__()
        self.pool = pool
        self.conv = nn.Conv2d(cin, cout, kernel_size=3, stride=1 if pool else 2, padding=1)

    def forward(self, x):
        x = F.relu(self.conv(x))
        return F.max_pool2d(x, 3, 2, 1) if self.pool else x


class PatchEmbed(nn.Module):
    """timm's PatchEmbed; overlap > 0: vitgrad's overlapping patch embedding (kernel patch + 2 overlap,
    zero padding overlap, the same stride and grid); stem: vitgrad's conv stem (channel counts) as
    patch_embed.backbone, as timm's HybridEmbed names it, the patch conv at stride patch / 2^len"""
    def __init__(self, img, patch, chans, dim, overlap=0, stem=(), stem_pool=False):
        super().__init__()
        if stem:
            self.backbone = nn.Sequential(*[ConvAct(cin, cout, stem_pool)
                                            for cin, cout in zip((chans,) + tuple(stem), stem)])
        self.stem = bool(stem)
        p = patch >> len(stem)
        self.proj = nn.Conv2d(stem[-1] if stem else chans, dim, kernel_size=p + 2 * overlap, stride=p, padding=overlap)

    def forward(self, x):
        if self.stem:
            x = self.backbone(x)
        return self.proj(x).flatten(2).transpose(1, 2)      # (B, N, D)


class Attention(nn.Module):
    def __init__(self, dim, heads, qkv_bias, lsa=False):
        super().__init__()
        self.heads, self.head_dim, self.lsa = heads, dim // heads, lsa
        if lsa:  # locality self-attention (Lee et al. 2021): a learned log-temperature, diagonal masked
            self.scale = nn.Parameter(torch.log(torch.tensor(self.head_dim ** -0.5)))
        else:
            self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if self.lsa:
            dots = (q @ k.transpose(-2, -1)) * self.scale.exp()
            dots = dots.masked_fill(torch.eye(N, dtype=torch.bool), float("-inf"))
            attn = dots.softmax(dim=-1)
        else:
            attn = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_ratio, qkv_bias, lsa=False):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, heads, qkv_bias, lsa)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    """timm's VisionTransformer without dropout; pool 'cls' or 'mean' (= timm global_pool='avg',
    fc_norm=False: the final norm before pooling)."""

    def __init__(self, img=16, patch=4, chans=3, classes=10, dim=32, depth=2, heads=2, mlp_ratio=4.0,
                 qkv_bias=True, pool="cls", pos="learned", overlap=0, stem=(), lsa=False, stem_pool=False):
        super().__init__()
        self.pool = pool
        self.patch_embed = PatchEmbed(img, patch, chans, dim, overlap, stem, stem_pool)
        n = (img // patch) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, n + 1, dim), requires_grad=(pos == "learned"))
        self.blocks = nn.Sequential(*[Block(dim, heads, mlp_ratio, qkv_bias, lsa) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        if pool == "seq":  # CCT's SeqPool without its bias (a constant shift of every score)
            self.seq_pool = nn.Linear(dim, 1, bias=False)
        self.head = nn.Linear(dim, classes)
        # timm's default init
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.normal_(self.cls_token, std=1e-6)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
        if pos == "sincos2d":
            g = img // patch
            self.pos_embed.data.copy_(torch.from_numpy(sincos_2d(dim, g, g, True)).float().unsqueeze(0))

    def forward_features(self, x):
        x = self.patch_embed(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        return self.norm(self.blocks(x))

    def pooled(self, x):
        x = self.forward_features(x)
        if self.pool == "seq":
            t = x[:, 1:]
            a = F.softmax(self.seq_pool(t), dim=1)  # (B, N, 1): a weight per patch token
            return (a.transpose(1, 2) @ t).squeeze(1)
        return x[:, 0] if self.pool == "cls" else x[:, 1:].mean(dim=1)

    def forward(self, x):
        return self.head(self.pooled(x))


PRESETS = {  # vit/presets.c
    "vit-tiny-cifar": dict(img=32, patch=4, chans=3, classes=10, dim=192, depth=6, heads=3),
    "vit-micro-cifar": dict(img=32, patch=4, chans=3, classes=10, dim=128, depth=4, heads=4),
    "vit-mnist": dict(img=28, patch=7, chans=1, classes=10, dim=64, depth=4, heads=4),
    "vit-tiny-in64": dict(img=64, patch=8, chans=3, classes=10, dim=192, depth=6, heads=3),
}


def f32(t):
    return t.detach().cpu().numpy().astype(np.float32)


def perturb(model):
    """timm's init leaves biases 0, norms 1/0 and cls_token ~1e-6: perturb them so that every
    parameter visibly affects the logits (a wrong bias or norm path would otherwise pass)"""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name or name == "cls_token":
                p.add_(0.1 * torch.randn_like(p))


def make_vit_reference(path):
    cfg = dict(img=16, patch=4, chans=3, classes=10, dim=32, depth=2, heads=2)
    torch.manual_seed(0)
    base = VisionTransformer(**cfg)
    perturb(base)
    x = torch.randn(4, cfg["chans"], cfg["img"], cfg["img"])
    labels = torch.randint(0, cfg["classes"], (4,))
    state = base.state_dict()

    out = {k: f32(v) for k, v in state.items()}
    out["input"] = f32(x)
    out["labels"] = labels.numpy().astype(np.int64)
    variants = {"cls": dict(pool="cls", pos="learned"), "mean": dict(pool="mean", pos="learned"),
                "sincos": dict(pool="cls", pos="sincos2d"),
                "overlap": dict(pool="mean", pos="sincos2d", overlap=1),
                "stem": dict(pool="mean", pos="sincos2d", stem=(8, 16)),
                "seq": dict(pool="seq", pos="learned"),
                "lsa": dict(pool="cls", pos="learned", lsa=True),
                "stempool": dict(pool="mean", pos="sincos2d", stem=(8, 16), stem_pool=True)}
    for vname, v in variants.items():
        torch.manual_seed(0)
        m = VisionTransformer(**cfg, **v)
        sd = dict(state)
        if v["pos"] == "sincos2d":
            sd["pos_embed"] = m.pos_embed.detach().clone()
        if v.get("overlap"):                        # its own 6x6 kernel (PyTorch's default init)
            sd["patch_embed.proj.weight"] = m.patch_embed.proj.weight.detach().clone()
            out[f"patch_embed.proj.weight.{vname}"] = f32(sd["patch_embed.proj.weight"])
        if v.get("stem"):                           # the stem's own weights, a 1x1 patch conv from 16 channels
            for k, t in m.state_dict().items():     # (stem_pool: the backbone's keys of its own)
                if "backbone" in k or k == "patch_embed.proj.weight":
                    sd[k] = t.detach().clone()
                    own = k == "patch_embed.proj.weight" or v.get("stem_pool")
                    out[f"{k}.{vname}" if own else k] = f32(sd[k])
        if v["pool"] == "seq":                      # its scoring vector, scaled so the weights are far from uniform
            sd["seq_pool.weight"] = 20 * m.seq_pool.weight.detach().clone()
            out[f"seq_pool.weight.{vname}"] = f32(sd["seq_pool.weight"])
        if v.get("lsa"):                            # each block's log-scale, moved off its start
            for k, t in m.state_dict().items():
                if k.endswith("attn.scale"):
                    sd[k] = t.detach().clone() + 0.3 * torch.randn(())
                    out[f"{k}.{vname}"] = f32(sd[k].reshape(1))
        m.load_state_dict(sd)
        m.zero_grad()
        logits = m(x)
        loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
        loss.backward()
        out[f"logits.{vname}"] = f32(logits)
        out[f"loss.{vname}"] = np.array([loss.item()], dtype=np.float64)
        for name, p in m.named_parameters():
            if p.requires_grad:
                out[f"grad.{vname}.{name}"] = f32(p.grad)
        with torch.no_grad():
            out[f"embed.{vname}"] = f32(F.normalize(m.pooled(x), dim=-1))
        if v["pos"] == "sincos2d" and vname == "sincos":
            out["pos_embed.sincos"] = f32(m.pos_embed)

    meta = {"config": json.dumps(cfg, sort_keys=True), "batch": "4", "label_smoothing": "0.1",
            "variants": ",".join(variants), "keys": json.dumps(list(state.keys())),
            "torch": torch.__version__}
    for name, pc in PRESETS.items():
        meta[f"params.{name}"] = str(sum(p.numel() for p in VisionTransformer(**pc).parameters()))
    safetensors_io.save(path, out, meta)
    return meta


def interp_input(tokens, dim, a, b, c):
    """(1, tokens, dim) float32 table t[0, i, j] = sin(a*i + b*j) + c*j (float64 math, as in C)."""
    i = np.arange(tokens, dtype=np.float64)[:, None]
    j = np.arange(dim, dtype=np.float64)[None, :]
    return (np.sin(a * i + b * j) + c * j).astype(np.float32)[None]


def resize(pos, h, w, H, W, mode):
    """timm's resample_abs_pos_embed: CLS row aside, grid (1, D, h, w), F.interpolate, back."""
    t = torch.from_numpy(pos)
    cls, grid = t[:, :1], t[:, 1:]
    D = t.shape[-1]
    grid = grid.reshape(1, h, w, D).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=(H, W), mode=mode, align_corners=False)
    grid = grid.permute(0, 2, 3, 1).reshape(1, H * W, D)
    return torch.cat([cls, grid], dim=1).numpy()


def make_posembed_reference(path):
    out, meta = {}, {}
    for dim, g in [(32, 4), (64, 8), (16, 3)]:
        out[f"sincos.d{dim}.g{g}"] = sincos_2d(dim, g, g, True).astype(np.float32)
    # small tables in full: input sin(0.3 i + 0.7 j) + 0.01 j, (1, 1 + 4*4, 8)
    small = interp_input(17, 8, 0.3, 0.7, 0.01)
    for mode in ("bilinear", "bicubic"):
        for H, W in [(6, 6), (3, 3), (7, 5), (4, 4)]:
            out[f"small.{mode}.{H}x{W}"] = resize(small, 4, 4, H, W, mode)
    # the ViT-B case: input sin(0.01 i + 0.1 j), (1, 197, 768), 14x14 -> 28x28
    big = interp_input(197, 768, 0.01, 0.1, 0.0)
    rng = np.random.RandomState(0)
    n_out = 785 * 768
    idx = np.concatenate([np.arange(768),                     # the CLS row
                          768 + np.arange(768),                # patch (0, 0): a corner
                          (785 - 1) * 768 + np.arange(64),     # last patch: the other corner
                          28 * 768 + np.arange(64),            # patch (0, 27)
                          rng.randint(0, n_out, size=512)]).astype(np.int64)
    out["big.index"] = idx
    for mode in ("bilinear", "bicubic"):
        r = resize(big, 14, 14, 28, 28, mode)
        flat = r.reshape(-1)
        out[f"big.{mode}.values"] = flat[idx].astype(np.float32)
        out[f"big.{mode}.stats"] = np.array([np.abs(flat.astype(np.float64)).max(),
                                            np.abs(flat.astype(np.float64)).sum(),
                                            flat.astype(np.float64).sum()], dtype=np.float64)
    meta["big"] = "input (1,197,768) t[0,i,j]=sin(0.01*i+0.1*j); output (1,785,768); stats = [max|y|, sum|y|, sum y]"
    meta["small"] = "input (1,17,8) t[0,i,j]=sin(0.3*i+0.7*j)+0.01*j, grid 4x4 -> HxW"
    meta["torch"] = torch.__version__
    safetensors_io.save(path, out, meta)


if __name__ == "__main__":
    meta = make_vit_reference(os.path.join(HERE, "vit_reference.safetensors"))
    make_posembed_reference(os.path.join(HERE, "posembed_reference.safetensors"))
    for k, v in meta.items():
        if k.startswith("params."):
            print(f"{k[7:]:18s} {int(v):>10,d} parameters")
    for f in ("vit_reference.safetensors", "posembed_reference.safetensors"):
        print(f"wrote tests/reference/{f} ({os.path.getsize(os.path.join(HERE, f)):,} bytes)")
