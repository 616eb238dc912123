"""timm_vit_bench.py — PyTorch 2.x's training speed with timm's VisionTransformer, for `make bench`
(its torch2 part). Runs in the venv bench/run.sh makes with PyPI's torch and timm (TORCH2_VENV,
default ../.venv-torch2 beside the repository), never under Debian's python3-torch 1.13.

timm's own VisionTransformer (timm.models.vision_transformer, as timm runs it: its fused attention
where torch has it), shaped as the vitgrad preset named: img, patch, channels, classes, dim, depth
and heads read from vit/presets.c's table; the rest as vitgrad's defaults (timm's): MLP ratio 4,
qkv bias, class token, CLS pooling ("token", the final norm before it, no fc_norm), learned
position embedding, LayerNorm eps 1e-6, no dropout or drop-path.
One step as `./train --bench` and bench/pytorch_vit_bench.py: a batch of random images, forward +
cross-entropy (label smoothing 0.1) + backward + clip_grad_norm_(1.0) + AdamW (lr 1e-4, weight
decay 0.05); 2 warm-up steps (they include torch.compile's compilation), then STEPS timed ones.

    OMP_NUM_THREADS=T python bench/timm_vit_bench.py PRESET T STEPS [BATCH] [--compile] [--amp]

--compile: the model through torch.compile (inductor); --amp: the forward under
torch.autocast("cpu", dtype=torch.bfloat16), loss and backward outside it (timm's --amp on CPU).
Prints one line:
    timm PRESET threads T eager|compile fp32|amp-bf16 median_ms M images_per_s X peak_rss_mib R
or, when the step raises (e.g. torch.compile cannot build its kernels here), exits 3 after
    timm PRESET threads T compile fp32 failed: <exception type>: <its first line>

Fairness as for PyTorch 1.13 (../shared/PERF_NOTES.md): glibc's malloc keeps freed memory
(mallopt before torch is imported); bench/run.sh sets OMP_NUM_THREADS = T, OMP_WAIT_POLICY=passive,
the same priority as ./train, and alternates the runs with ./train's.
"""
import ctypes
import os
import re
import resource
import statistics
import sys
import time

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3          # glibc's malloc.h
_libc = ctypes.CDLL("libc.so.6")
_libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)
_libc.mallopt(M_TRIM_THRESHOLD, 2 ** 31 - 1)

import torch  # noqa: E402  (after mallopt)
import torch.nn.functional as F  # noqa: E402
from timm.models.vision_transformer import VisionTransformer  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def vitgrad_presets():
    """{name: (img, patch, chans, classes, dim, depth, heads)} from vit/presets.c's table"""
    with open(os.path.join(ROOT, "vit", "presets.c")) as f:
        src = f.read()
    # a row is {"name", 32, 4, ...} or X("name", 32, 4, ...) (the X-macro table)
    rows = re.findall(r'(?:\{|X\()\s*"([a-z0-9-]+)",\s*' + r",\s*".join([r"(\d+)"] * 7) + r"\s*[})]", src)
    if not rows:
        sys.exit("timm_vit_bench.py: no preset rows found in vit/presets.c")
    return {r[0]: tuple(int(v) for v in r[1:]) for r in rows}


def build(preset):
    presets = vitgrad_presets()
    if preset not in presets:
        sys.exit(f"timm_vit_bench.py: unknown preset '{preset}' ({', '.join(presets)})")
    img, patch, chans, classes, dim, depth, heads = presets[preset]
    model = VisionTransformer(img_size=img, patch_size=patch, in_chans=chans, num_classes=classes,
                              embed_dim=dim, depth=depth, num_heads=heads, mlp_ratio=4.0, qkv_bias=True,
                              class_token=True, global_pool="token", fc_norm=False, drop_rate=0.0,
                              pos_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0)
    return model, img, chans, classes


def main():
    amp = "--amp" in sys.argv
    compiled = "--compile" in sys.argv
    args = [a for a in sys.argv[1:] if a not in ("--amp", "--compile")]
    if len(args) < 3:
        sys.exit(__doc__.split("\n\n")[2])
    preset, threads, steps = args[0], int(args[1]), int(args[2])
    batch = int(args[3]) if len(args) > 3 else 128
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model, img, chans, classes = build(preset)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.05)
    x = torch.randn(batch, chans, img, img)
    y = torch.randint(0, classes, (batch,))
    label = f"timm {preset} threads {threads} {'compile' if compiled else 'eager'} {'amp-bf16' if amp else 'fp32'}"
    fwd = torch.compile(model) if compiled else model
    times = []
    try:
        for i in range(steps + 2):
            t0 = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                logits = fwd(x)
            loss = F.cross_entropy(logits.float(), y, label_smoothing=0.1)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if i >= 2:
                times.append(time.perf_counter() - t0)
    except Exception as e:  # torch.compile's failures come in many types; report, do not crash
        first = (str(e).strip().splitlines() or [""])[0][:300]
        print(f"{label} failed: {type(e).__name__}: {first}", flush=True)
        sys.exit(3)
    med = statistics.median(times)
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    print(f"{label} median_ms {med * 1e3:.1f} images_per_s {batch / med:.1f} peak_rss_mib {rss_mib:.0f}")


if __name__ == "__main__":
    main()
