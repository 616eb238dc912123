"""make_timm_reference.py — reference numbers for the timm ViT layouts vitgrad reads (vit/).

timm is NOT needed: the module below is timm 1.0's VisionTransformer (timm/models/vision_transformer.py)
reduced to what these layouts use, with timm's parameter names, order and forward:

    class_token    cls_token (1, 1, D), or none (then global_pool must be 'avg')
    reg_tokens     reg_token (1, R, D) after the class token, never pooled
    no_embed_class pos_embed (1, N, D) added to the patches before the prefix tokens are put in front
                   (timm's _pos_embed); else pos_embed (1, S + N, D) added to every row
    global_pool    'token' (row 0) or 'avg' (the mean of the N patch tokens)
    fc_norm        the final LayerNorm after pooling (fc_norm.*) instead of before (norm.*); timm's
                   default with 'avg' (fc_norm=None → True)
    init_values    LayerScale blocks.{i}.ls1.gamma / ls2.gamma
    num_classes 0  no head: the model outputs its pooled features

`make check-timm` (tests/reference/check_timm.py) proves this module equal to the real timm where timm
is installed. Run with Debian's python3-torch (1.13):

    /usr/bin/python3 tests/reference/make_timm_reference.py

Writes
  tests/reference/timm/<variant>.safetensors  one tiny model per layout, the state dict ALONE, as timm
      saves it (safetensors.torch.save_file(model.state_dict()): no vitgrad metadata), so the C test
      reads each through vg_vit_config_from_file's shape inference;
  tests/reference/timm_reference.safetensors  the input batch (3, 3, 16, 16), labels, and per variant
      the output (logits, or features without a head), the loss (cross-entropy with label smoothing
      0.1; without a head Σ features·W for a stored W), every parameter gradient (grad.<v>.<key>);
      metadata: each variant's kwargs (JSON, num_heads included) and its state-dict key order.

Deterministic: a rerun gives identical bytes (seeded, one thread).
"""
import json
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


# ---------------------------------------------------------------- timm 1.0's layout
class PatchEmbed(nn.Module):
    def __init__(self, patch, chans, dim):
        super().__init__()
        self.proj = nn.Conv2d(chans, dim, kernel_size=patch, stride=patch)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class Attention(nn.Module):
    def __init__(self, dim, heads, qkv_bias):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        attn = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))


class LayerScale(nn.Module):
    def __init__(self, dim, init_values):
        super().__init__()
        self.gamma = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x):
        return x * self.gamma


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_ratio, qkv_bias, init_values):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, heads, qkv_bias)
        self.ls1 = LayerScale(dim, init_values) if init_values else nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        self.ls2 = LayerScale(dim, init_values) if init_values else nn.Identity()

    def forward(self, x):
        x = x + self.ls1(self.attn(self.norm1(x)))
        return x + self.ls2(self.mlp(self.norm2(x)))


class VisionTransformer(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, num_classes=5, embed_dim=16, depth=2, num_heads=2,
                 mlp_ratio=4.0, qkv_bias=True, init_values=None, class_token=True, reg_tokens=0,
                 no_embed_class=False, global_pool="token", fc_norm=None):
        super().__init__()
        assert class_token or global_pool != "token"
        use_fc_norm = global_pool == "avg" if fc_norm is None else fc_norm
        self.global_pool = global_pool
        self.num_prefix_tokens = (1 if class_token else 0) + reg_tokens
        self.no_embed_class = no_embed_class
        self.patch_embed = PatchEmbed(patch_size, in_chans, embed_dim)
        n = (img_size // patch_size) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim)) if class_token else None
        self.reg_token = nn.Parameter(torch.zeros(1, reg_tokens, embed_dim)) if reg_tokens else None
        self.pos_embed = nn.Parameter(torch.zeros(1, n if no_embed_class else n + self.num_prefix_tokens, embed_dim))
        self.blocks = nn.Sequential(*[Block(embed_dim, num_heads, mlp_ratio, qkv_bias, init_values)
                                      for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6) if not use_fc_norm else nn.Identity()
        self.fc_norm = nn.LayerNorm(embed_dim, eps=1e-6) if use_fc_norm else nn.Identity()
        self.head = nn.Linear(embed_dim, num_classes) if num_classes > 0 else nn.Identity()
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        for t in (self.cls_token, self.reg_token):
            if t is not None:
                nn.init.normal_(t, std=1e-6)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def _pos_embed(self, x):
        to_cat = []
        if self.cls_token is not None:
            to_cat.append(self.cls_token.expand(x.shape[0], -1, -1))
        if self.reg_token is not None:
            to_cat.append(self.reg_token.expand(x.shape[0], -1, -1))
        if self.no_embed_class:
            x = x + self.pos_embed
            if to_cat:
                x = torch.cat(to_cat + [x], dim=1)
        else:
            if to_cat:
                x = torch.cat(to_cat + [x], dim=1)
            x = x + self.pos_embed
        return x

    def forward_features(self, x):
        return self.norm(self.blocks(self._pos_embed(self.patch_embed(x))))

    def forward_head(self, x):
        x = x[:, 0] if self.global_pool == "token" else x[:, self.num_prefix_tokens:].mean(dim=1)
        return self.head(self.fc_norm(x))

    def forward(self, x):
        return self.forward_head(self.forward_features(x))


BASE = dict(img_size=16, patch_size=4, in_chans=3, num_classes=5, embed_dim=16, depth=2, num_heads=2)
# each published layout, shrunk (the timm model it stands for in the comment)
VARIANTS = {
    "augreg_nobias": dict(qkv_bias=False),                                       # vit_*_patch16_224.augreg, qkv_bias off
    "deit3": dict(no_embed_class=True, init_values=1e-6),                        # deit3_*: no_embed_class + LayerScale
    "dinov2_reg": dict(reg_tokens=4, no_embed_class=True, init_values=1e-5, num_classes=0),  # vit_*_reg4_dinov2 (no head)
    "reg_embed": dict(reg_tokens=2),                                             # registers with a pos_embed row each
    "reg4_gap": dict(class_token=False, reg_tokens=4, no_embed_class=True, global_pool="avg"),  # vit_*_reg4_gap_256
    "avg_fcnorm": dict(global_pool="avg"),                                       # global_pool='avg' → fc_norm
    "no_cls_avg": dict(class_token=False, global_pool="avg", fc_norm=False),     # no class token, norm before pooling
}


def f32(t):
    return t.detach().cpu().numpy().astype(np.float32)


def perturb(model):
    """timm's init leaves biases 0, norms 1/0, tokens ~1e-6 and gammas tiny: perturb them so every
    parameter visibly affects the output"""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name or name in ("cls_token", "reg_token"):
                p.add_(0.1 * torch.randn_like(p))
            if name.endswith(".gamma"):
                p.copy_(0.5 + 0.2 * torch.randn_like(p))


def main():
    os.makedirs(os.path.join(HERE, "timm"), exist_ok=True)
    torch.manual_seed(0)
    x = torch.randn(3, 3, 16, 16)
    labels = torch.randint(0, BASE["num_classes"], (3,))
    out = {"input": f32(x), "labels": labels.numpy().astype(np.int64)}
    meta = {"torch": torch.__version__, "variants": ",".join(VARIANTS), "label_smoothing": "0.1"}
    for v, kw in VARIANTS.items():
        torch.manual_seed(1)
        args = dict(BASE, **kw)
        m = VisionTransformer(**args)
        perturb(m)
        sd = m.state_dict()
        safetensors_io.save(os.path.join(HERE, "timm", f"{v}.safetensors"), {k: f32(t) for k, t in sd.items()},
                            {"format": "pt"})
        y = m(x)
        if args["num_classes"] > 0:
            loss = F.cross_entropy(y, labels, label_smoothing=0.1)
        else:
            w = torch.randn(y.shape)
            out[f"lossw.{v}"] = f32(w)
            loss = (y * w).sum()
        loss.backward()
        out[f"out.{v}"] = f32(y)
        out[f"loss.{v}"] = np.array([loss.item()], dtype=np.float64)
        for name, p in m.named_parameters():
            out[f"grad.{v}.{name}"] = f32(p.grad)
        meta[f"kwargs.{v}"] = json.dumps(args, sort_keys=True)
        meta[f"keys.{v}"] = json.dumps(list(sd.keys()))
    path = os.path.join(HERE, "timm_reference.safetensors")
    safetensors_io.save(path, out, meta)
    total = os.path.getsize(path)
    for v in VARIANTS:
        total += os.path.getsize(os.path.join(HERE, "timm", f"{v}.safetensors"))
    print(f"wrote tests/reference/timm_reference.safetensors and tests/reference/timm/*.safetensors "
          f"({len(VARIANTS)} models, {total:,} bytes in all)")


if __name__ == "__main__":
    main()
