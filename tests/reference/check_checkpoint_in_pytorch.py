"""check_checkpoint_in_pytorch.py — a model.safetensors written by ./train loads into the PyTorch
ViT (timm layout, timm's variants too: the module of make_timm_reference.py) with load_state_dict(strict=True) and gives
the same logits as vitgrad. Not part of `make test` (it needs python3-torch): `make check-pytorch`.

    /usr/bin/python3 tests/reference/check_checkpoint_in_pytorch.py OUT/model.safetensors build/vit_logits
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402
from make_timm_reference import VisionTransformer  # noqa: E402  (timm's layouts too)


def main():
    ckpt, vit_logits = sys.argv[1], sys.argv[2]
    tensors, meta = safetensors_io.load(ckpt)
    g = lambda k: meta["model." + k]  # noqa: E731
    opt = lambda k, d: meta.get("model." + k, d)  # noqa: E731 — fields newer than the file
    model = VisionTransformer(img_size=int(g("img_size")), patch_size=int(g("patch_size")), in_chans=int(g("in_chans")),
                              num_classes=int(g("num_classes")), embed_dim=int(g("embed_dim")), depth=int(g("depth")),
                              num_heads=int(g("num_heads")), mlp_ratio=float(g("mlp_ratio")), qkv_bias=g("qkv_bias") == "1",
                              global_pool="avg" if g("pool") == "mean" else "token",
                              class_token=opt("class_token", "1") == "1", reg_tokens=int(opt("reg_tokens", "0")),
                              no_embed_class=opt("no_embed_class", "0") == "1", fc_norm=opt("fc_norm", "0") == "1",
                              init_values=float(opt("init_values", "0")) or None)
    # a sin-cos pos_embed is loaded from the file like a learned one (same values, same forward)
    for m in model.modules():
        if isinstance(m, torch.nn.LayerNorm):
            m.eps = float(g("norm_eps"))
    missing = model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in tensors.items()}, strict=True)
    print(f"loaded {len(tensors)} tensors with strict=True: {missing}")
    model.eval()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, int(g("in_chans")), int(g("img_size")), int(g("img_size")))).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        safetensors_io.save(os.path.join(tmp, "in.safetensors"), {"x": x})
        subprocess.run([vit_logits, ckpt, os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")], check=True)
        ours = safetensors_io.load(os.path.join(tmp, "out.safetensors"))[0]["logits"]
    with torch.no_grad():
        ref = model(torch.from_numpy(x)).numpy()
    rel = np.abs(ours - ref).max() / np.abs(ref).max()
    print(f"logits: max abs diff {np.abs(ours - ref).max():.3g}, relative {rel:.3g}")
    if rel > 1e-4:
        sys.exit("FAIL: logits differ")
    print("PASS")


if __name__ == "__main__":
    main()
