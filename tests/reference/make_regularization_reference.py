"""make_regularization_reference.py — PyTorch values for tests/test_nn.c's regularisation cases:
timm's SoftTargetCrossEntropy on Mixup targets (timm's mixup_target written out, so timm is not
needed), timm's drop_path given the same per-sample mask, and timm's PatchDropout given the same
kept patches. Keys "<case>.<tensor>", gradients
"<case>.d<tensor>"; float32, one thread, fixed seeds: a rerun writes the same bytes.

    /usr/bin/python3 tests/reference/make_regularization_reference.py
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "regularization_reference.safetensors")
tensors, put = safetensors_io.collector()


def one_hot(x, num_classes, on_value=1.0, off_value=0.0):
    """timm.data.mixup.one_hot"""
    x = x.long().view(-1, 1)
    return torch.full((x.size()[0], num_classes), off_value).scatter_(1, x, on_value)


def mixup_target(target, num_classes, lam=1.0, smoothing=0.0):
    """timm.data.mixup.mixup_target: the batch paired with its flip"""
    off_value = smoothing / num_classes
    on_value = 1.0 - smoothing + off_value
    y1 = one_hot(target, num_classes, on_value=on_value, off_value=off_value)
    y2 = one_hot(target.flip(0), num_classes, on_value=on_value, off_value=off_value)
    return y1 * lam + y2 * (1.0 - lam)


def soft_target_cross_entropy(x, target):
    """timm.loss.SoftTargetCrossEntropy.forward"""
    loss = torch.sum(-target * F.log_softmax(x, dim=-1), dim=-1)
    return loss.mean()


def drop_path_with_mask(x, random_tensor, keep_prob):
    """timm.layers.drop_path with its Bernoulli draw given: x * (random_tensor / keep_prob)"""
    random_tensor = random_tensor / keep_prob
    return x * random_tensor


def patch_dropout_with_indices(x, keep_indices, num_prefix_tokens=1):
    """timm.layers.PatchDropout.forward with its argsort(randn) draw given as keep_indices"""
    prefix, x = x[:, :num_prefix_tokens], x[:, num_prefix_tokens:]
    x = x.gather(1, keep_indices.unsqueeze(-1).expand((-1, -1) + x.shape[2:]))
    return torch.cat((prefix, x), dim=1)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    # ---- soft-target cross-entropy on mixup targets: lambda 0.7, smoothing 0.1, 10 classes
    logits = (torch.randn(6, 10) * 2.0).requires_grad_(True)
    labels = torch.randint(0, 10, (6,), dtype=torch.int64)
    target = mixup_target(labels, 10, lam=0.7, smoothing=0.1)
    loss = soft_target_cross_entropy(logits, target)
    loss.backward()
    put("soft_ce.logits", logits)
    put("soft_ce.labels", labels.numpy().astype(np.int32))
    put("soft_ce.targets", target)
    put("soft_ce.loss", loss)
    put("soft_ce.dlogits", logits.grad)

    # ---- drop_path, p = 0.25 on (4, 5, 8) tokens, a fixed Bernoulli(keep) draw per sample
    keep = 0.75
    x = torch.randn(4, 5, 8).requires_grad_(True)
    bern = torch.tensor([1.0, 0.0, 1.0, 1.0]).view(4, 1, 1)
    y = drop_path_with_mask(x, bern, keep)
    dy = torch.randn(4, 5, 8)
    y.backward(dy)
    put("drop_path.x", x)
    put("drop_path.mask", (bern / keep).view(4))
    put("drop_path.y", y)
    put("drop_path.dy", dy)
    put("drop_path.dx", x.grad)

    # ---- patch dropout: timm's PatchDropout (1 prefix token) with its keep indices given:
    # 4 of 6 patches per sample, in increasing order (ordered=True)
    x = torch.randn(3, 7, 8).requires_grad_(True)
    keep = torch.tensor([[0, 2, 3, 5], [1, 2, 4, 5], [0, 1, 2, 3]])
    y = patch_dropout_with_indices(x, keep, num_prefix_tokens=1)
    dy = torch.randn_like(y)
    y.backward(dy)
    put("patch_drop.x", x)
    put("patch_drop.keep", keep.numpy().astype(np.int32))
    put("patch_drop.y", y)
    put("patch_drop.dy", dy)
    put("patch_drop.dx", x.grad)

    meta = {"generator": "tests/reference/make_regularization_reference.py", "torch": torch.__version__,
            "format": "<case>.<tensor>; gradients <case>.d<tensor>; upstream gradient <case>.dy"}
    safetensors_io.save(OUT, tensors, meta)
    print(f"wrote {OUT}: {len(tensors)} tensors, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
