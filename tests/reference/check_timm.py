"""check_timm.py — vitgrad against the real timm (`make check-timm`; not part of `make test`).

Needs timm on top of Debian's torch:
    apt-get install -y python3-pip
    /usr/bin/python3 -m pip install --break-system-packages --no-deps timm huggingface_hub safetensors pyyaml
No network: every model is timm.create_model(name, pretrained=False, ...) with random weights (biases,
norms, tokens and LayerScale gammas perturbed so that each visibly matters), shrunk with kwargs
(depth=2, …) to keep the run short.

For each published name (and the layouts of kwargs on top of them):
  1. timm → vitgrad: the state dict saved with safetensors.torch.save_file (exactly a timm/HF
     model.safetensors: no vitgrad metadata) is read by build/vit_logits through
     vg_vit_config_from_file's shape inference; its logits (or pooled features without a head) on a
     fixed input are compared with timm's.
  2. vitgrad → timm: `vit_logits --write-from` writes a vitgrad-initialised model of the same
     configuration as ./train writes model.safetensors; it must have timm's key names in timm's
     order, load into timm.create_model(same name, same kwargs) with load_state_dict(strict=True),
     and give vitgrad's logits.
  3. the module of tests/reference/make_timm_reference.py (which writes the references `make test`
     compares with, without timm) loads the same timm weights strictly and gives timm's logits: the
     committed references stand for timm.
  4. a BF16 copy of the state dict (as some hub checkpoints are stored) is read by vitgrad and gives
     the logits of timm run on the same bf16-rounded weights.
Tolerance: max|Δ| / max|reference| ≤ 1e-4 on the logits (float32 both sides; observed ~1e-6).

    /usr/bin/python3 tests/reference/check_timm.py build/vit_logits
"""
import json
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402
import make_timm_reference  # noqa: E402

TOL = 1e-4

# (timm name, kwargs, what it stands for)
MODELS = [
    ("vit_tiny_patch16_224", dict(depth=2), "augreg ViT-Ti/16: cls token, pos row per token, qkv bias"),
    ("deit_tiny_patch16_224", dict(depth=2), "DeiT-Ti (the same layout, another training recipe)"),
    ("vit_small_patch16_224.augreg_in21k", dict(depth=2), "ViT-S/16 ImageNet-21k head: 21843 classes"),
    ("deit3_small_patch16_224", dict(depth=2), "DeiT-3: no_embed_class + LayerScale"),
    ("vit_small_patch14_reg4_dinov2", dict(depth=2), "DINOv2-S/14 reg4: 518 px, cls + 4 registers, no_embed_class, LayerScale, no head"),
    ("vit_base_patch16_reg4_gap_256", dict(depth=1), "ViT-B/16 reg4 gap: no cls token, 4 registers, global_pool avg + fc_norm"),
    ("vit_base_patch16_gap_224", dict(depth=1), "ViT-B/16 gap: no cls token, avg + fc_norm"),
    ("vit_medium_patch16_gap_256", dict(depth=2), "ViT-M/16 gap: no cls token, avg, fc_norm=False, no qkv bias, LayerScale"),
    ("vit_tiny_patch16_224", dict(depth=2, global_pool="avg"), "cls token kept, global_pool avg → fc_norm"),
    ("vit_tiny_patch16_224", dict(depth=2, class_token=False, global_pool="avg", fc_norm=False), "class_token=False, norm before pooling"),
    ("vit_tiny_patch16_224", dict(depth=2, qkv_bias=False, reg_tokens=2), "no qkv bias, 2 registers with their pos_embed rows"),
    ("vit_tiny_patch16_224", dict(img_size=32, patch_size=4, num_classes=10, depth=6), "vitgrad's vit-tiny-cifar preset's shape"),
]


def perturb(model, gen):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name or name in ("cls_token", "reg_token"):
                p.add_(0.1 * torch.randn(p.shape, generator=gen))
            if name.endswith(".gamma"):
                p.copy_(0.5 + 0.2 * torch.randn(p.shape, generator=gen))


def rel_err(ours, ref):
    return float(np.abs(ours - ref).max() / max(np.abs(ref).max(), 1e-30))


def vitgrad_logits(vit_logits, model_path, x, tmp, heads=None):
    inp, out = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
    safetensors_io.save(inp, {"x": x})
    cmd = [vit_logits, model_path, inp, out] + ([str(heads)] if heads else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return safetensors_io.load(out)[0]["logits"]


def reference_module(m):
    """make_timm_reference's VisionTransformer with the configuration of timm model m"""
    blk = m.blocks[0]
    ls = getattr(blk.ls1, "gamma", None)
    return make_timm_reference.VisionTransformer(
        img_size=m.patch_embed.img_size[0], patch_size=m.patch_embed.patch_size[0],
        in_chans=m.patch_embed.proj.in_channels, num_classes=m.num_classes, embed_dim=m.embed_dim,
        depth=len(m.blocks), num_heads=blk.attn.num_heads, mlp_ratio=blk.mlp.fc1.out_features / m.embed_dim,
        qkv_bias=blk.attn.qkv.bias is not None, init_values=1e-5 if ls is not None else None,
        class_token=m.cls_token is not None, reg_tokens=m.num_reg_tokens, no_embed_class=m.no_embed_class,
        global_pool=m.global_pool, fc_norm=isinstance(m.fc_norm, torch.nn.LayerNorm))


def check(name, kw, vit_logits, tmp, gen, results):
    import timm
    from safetensors.torch import load_file, save_file
    m = timm.create_model(name, pretrained=False, **kw).eval()
    perturb(m, gen)
    C, H = m.patch_embed.proj.in_channels, m.patch_embed.img_size[0]
    D, heads = m.embed_dim, m.blocks[0].attn.num_heads
    give_heads = heads if D % 64 or D // 64 != heads else None      # else vitgrad's default embed_dim/64
    x = torch.randn(2, C, H, H, generator=gen)
    with torch.no_grad():
        ref = m(x).numpy()
    row = {"name": name, "kwargs": kw, "embed_dim": D, "depth": len(m.blocks), "img": H, "out": list(ref.shape)}
    path = os.path.join(tmp, "timm.safetensors")
    sd = {k: v.contiguous() for k, v in m.state_dict().items()}
    save_file(sd, path, metadata={"format": "pt"})
    # 1. timm -> vitgrad
    row["timm_to_vitgrad"] = rel_err(vitgrad_logits(vit_logits, path, x.numpy(), tmp, give_heads), ref)
    # 2. vitgrad -> timm (strict), same keys in the same order
    ours = os.path.join(tmp, "vitgrad.safetensors")
    r = subprocess.run([vit_logits, "--write-from", path, ours] + ([str(give_heads)] if give_heads else []),
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr.strip())
    with open(ours, "rb") as fh:
        n = int.from_bytes(fh.read(8), "little")
        header = json.loads(fh.read(n))
    keys = [k for k in header if k != "__metadata__"]
    row["key_order_as_timm"] = keys == list(m.state_dict().keys())
    m2 = timm.create_model(name, pretrained=False, **kw).eval()
    m2.load_state_dict(load_file(ours), strict=True)
    with torch.no_grad():
        ref2 = m2(x).numpy()
    row["vitgrad_to_timm"] = rel_err(vitgrad_logits(vit_logits, ours, x.numpy(), tmp), ref2)
    # 3. the reference module of make_timm_reference.py equals timm
    rm = reference_module(m).eval()
    rm.load_state_dict(m.state_dict(), strict=True)
    with torch.no_grad():
        row["reference_module"] = rel_err(rm(x).numpy(), ref)
    # 4. a bf16 checkpoint
    bf = {k: v.to(torch.bfloat16) for k, v in sd.items()}
    save_file(bf, path, metadata={"format": "pt"})
    m.load_state_dict({k: v.float() for k, v in bf.items()}, strict=True)
    with torch.no_grad():
        ref_bf = m(x).numpy()
    row["bf16_file"] = rel_err(vitgrad_logits(vit_logits, path, x.numpy(), tmp, give_heads), ref_bf)
    ok = (row["key_order_as_timm"] and max(row["timm_to_vitgrad"], row["vitgrad_to_timm"], row["reference_module"],
                                           row["bf16_file"]) <= TOL)
    row["pass"] = bool(ok)
    results.append(row)
    print(f"{'PASS' if ok else 'FAIL'} {name} {kw or ''}: D {D}, depth {len(m.blocks)}, {H} px -> {tuple(ref.shape)}; "
          f"timm->vitgrad {row['timm_to_vitgrad']:.2e}, vitgrad->timm (strict, key order "
          f"{'same' if row['key_order_as_timm'] else 'DIFFERS'}) {row['vitgrad_to_timm']:.2e}, "
          f"reference module {row['reference_module']:.2e}, bf16 file {row['bf16_file']:.2e}", flush=True)
    return ok


def main():
    vit_logits = sys.argv[1] if len(sys.argv) > 1 else "build/vit_logits"
    try:
        import timm
    except ImportError:
        print("check-timm: timm is not installed (see the top of tests/reference/check_timm.py); nothing checked")
        sys.exit(1)
    torch.set_num_threads(2)
    print(f"timm {timm.__version__}, torch {torch.__version__}, {platform.machine()} {platform.processor() or ''}")
    gen = torch.Generator().manual_seed(0)
    results, ok = [], True
    with tempfile.TemporaryDirectory() as tmp:
        for name, kw, _what in MODELS:
            try:
                ok &= check(name, kw, vit_logits, tmp, gen, results)
            except Exception as e:  # noqa: BLE001 — report and go on with the next model
                print(f"FAIL {name} {kw}: {e}", flush=True)
                ok = False
    print(f"{sum(r['pass'] for r in results)} of {len(MODELS)} timm models: "
          f"worst relative logit error {max((max(r['timm_to_vitgrad'], r['vitgrad_to_timm'], r['bf16_file']) for r in results), default=float('nan')):.2e} "
          f"(tolerance {TOL:g})")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
