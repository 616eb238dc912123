"""pytorch_vit_bench.py — PyTorch's training speed for vitgrad's presets, for `make bench`.

The same ViT (tests/reference/make_vit_reference.py: timm layout), batch B of random images,
forward + cross-entropy (label smoothing 0.1) + backward + clip_grad_norm_ + AdamW, as
`./train --bench` does. Prints one line per run: preset threads median_ms images_per_s
peak_rss_mib (the process's peak resident set from getrusage; it includes the ~300 MiB that
importing torch costs).

    OPENBLAS_NUM_THREADS=T /usr/bin/python3 bench/pytorch_vit_bench.py PRESET T STEPS [BATCH] [--amp]

--amp: the forward under torch.autocast("cpu", dtype=torch.bfloat16), loss and backward outside it
(timm's --amp on CPU); the line then says "amp-bf16".

PyTorch at its best, as measured (../shared/PERF_NOTES.md): before torch is imported, glibc's malloc
is told to keep freed memory (mallopt M_MMAP_THRESHOLD 32 MiB, M_TRIM_THRESHOLD 2^31 - 1, through
ctypes), so a step reuses its activation pages instead of first-touching fresh ones each time (1.1
to 2.8x slower steps otherwise); bench/run.sh also sets OMP_WAIT_POLICY=passive and
OPENBLAS_THREAD_TIMEOUT=4 (two spinning thread pools fight over the cores otherwise) and unsets
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (they force older, slower OpenBLAS kernels). PyTorch 1.13
from Debian uses OpenBLAS through libblas.so.3 only when libopenblas0 is installed.
"""
import ctypes
import os
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
from make_vit_reference import PRESETS, VisionTransformer  # noqa: E402


def main():
    amp = "--amp" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--amp"]
    preset, threads, steps = args[0], int(args[1]), int(args[2])
    batch = int(args[3]) if len(args) > 3 else 128
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
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            logits = model(x)
        loss = F.cross_entropy(logits.float(), y, label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    print(f"pytorch {preset} threads {threads} median_ms {med * 1e3:.1f} images_per_s {batch / med:.1f} "
          f"peak_rss_mib {rss_mib:.0f}{' amp-bf16' if amp else ''}")


if __name__ == "__main__":
    main()
