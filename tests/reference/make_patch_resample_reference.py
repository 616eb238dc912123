"""make_patch_resample_reference.py — PyTorch reference for vit/patch_resample.c (FlexiViT's resize
of a patch-embedding kernel, as timm's resample_patch_embed computes it).

For a kernel of p x p and a new size P x P: resize each basis patch with
F.interpolate(mode, antialias=True, align_corners=False) into the columns of R (P*P, p*p), then
the new kernel is pinv(R^T) @ w (numpy's pinv). Written from the FlexiViT paper's definition, the
same computation timm performs; timm itself is not needed.

Writes tests/reference/patch_resample_reference.safetensors: for each case "<mode>_<p>_<P>" the
input kernels in.<case> (n, p, p) and the resampled ones out.<case> (n, P, P), float64, and the
1-D resize matrices r1.<case> (P, p). Run with Debian's python3-torch (1.13):

    /usr/bin/python3 tests/reference/make_patch_resample_reference.py
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

CASES = [("bicubic", 16, 4), ("bicubic", 4, 8), ("bicubic", 8, 2), ("bilinear", 16, 4),
         ("bilinear", 3, 5), ("bicubic", 5, 3)]


def resize(x, size, mode):
    t = torch.tensor(x, dtype=torch.float64)[None, None]
    return F.interpolate(t, size=(size, size), mode=mode, antialias=True, align_corners=False)[0, 0].numpy()


def main():
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    out = {}
    for mode, p, P in CASES:
        case = f"{mode}_{p}_{P}"
        cols = []
        for i in range(p * p):
            e = np.zeros(p * p)
            e[i] = 1.0
            cols.append(resize(e.reshape(p, p), P, mode).reshape(-1))
        R = np.stack(cols).T                       # (P*P, p*p)
        A = np.linalg.pinv(R.T)                    # (P*P, p*p)
        w = rng.standard_normal((3, p, p))
        out["in." + case] = w
        out["out." + case] = (A @ w.reshape(3, -1).T).T.reshape(3, P, P)
        # the 1-D matrix: resize of 1-D basis vectors through a (1, p) image's columns
        r1 = np.stack([resize(np.eye(p)[i][None, :].repeat(p, 0), P, mode)[0] for i in range(p)]).T
        out["r1." + case] = r1
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "patch_resample_reference.safetensors")
    safetensors_io.save(path, out, metadata={"cases": ",".join(f"{m}_{p}_{P}" for m, p, P in CASES),
                                             "torch": torch.__version__})
    print("wrote", path)


if __name__ == "__main__":
    main()
