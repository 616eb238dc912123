"""pytorch_vit_bench.py — PyTorch's training speed for vitgrad's presets, for `make bench`.

The same ViT (tests/reference/make_vit_reference.py: timm layout), batch B of random images,
forward + cross-entropy (label smoothing 0.1) + backward + clip_grad_norm_ + AdamW, as
`./train --bench` does. Prints one line per run: preset threads median_ms images_per_s
peak_rss_mib (the process's peak resident set from getrusage; it includes the ~300 MiB that
importing torch costs).

    OPENBLAS_NUM_THREADS=T /usr/bin/python3 bench/pytorch_vit_bench.py PRESET T STEPS [BATCH]

Run it with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (bench/run.sh does): they force older,
slower OpenBLAS kernels. PyTorch 1.13 from Debian uses OpenBLAS through libblas.so.3 only when
libopenblas0 is installed.
"""
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
from make_vit_reference import PRESETS, VisionTransformer  # noqa: E402


def main():
    preset, threads, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 128
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    cfg = PRESETS[preset]
    model = VisionTransformer(**cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.05)
    x = torch.randn(batch, cfg["chans"], cfg["img"], cfg["img"])
    y = torch.randint(0, cfg["classes"], (batch,))
    times = []
    for i in range(steps + 2):
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    print(f"pytorch {preset} threads {threads} median_ms {med * 1e3:.1f} images_per_s {batch / med:.1f} "
          f"peak_rss_mib {rss_mib:.0f}")


if __name__ == "__main__":
    main()
