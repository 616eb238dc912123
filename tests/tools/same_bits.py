#!/usr/bin/env python3
"""same_bits.py OLD_TRAIN NEW_TRAIN [WORKDIR] — a model refactoring must not change a bit.

Runs ./train's short recipe (30 steps, batch 8, one thread, seed 0, --stop-at so no evaluation)
for each preset and each model option with both binaries and compares, per run, the two
model.safetensors files byte for byte (metadata and tensors) and the two train_state.safetensors
files' tensors (the AdamW moments) and metadata except wall_time. Also compares `--help`.
Prints one line per run; exit status 1 if anything differs. Needs CIFAR-10 (CIFAR10_DIR or
../shared/data), Fashion-MNIST (/usr/share/datasets/fashion-mnist) and the ImageNet subset
(IMAGENET_SUBSET_DIR) for the runs that use them; a missing dataset skips its runs visibly."""
import json, os, struct, subprocess, sys

CIFAR = os.environ.get("CIFAR10_DIR", "/work/shared/data/cifar-10-batches-bin")
FMNIST = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
INET = os.environ.get("IMAGENET_SUBSET_DIR", "/work/shared/data/imagenet-subset")

C = ["--dataset", "cifar10", "--data", CIFAR]
RUNS = [
    ("vit-micro-cifar", C + ["--model", "vit-micro-cifar"]),
    ("vit-tiny-cifar", C + ["--model", "vit-tiny-cifar"]),
    ("vit-mnist", ["--dataset", "fashion-mnist", "--data", FMNIST, "--model", "vit-mnist"]),
    ("vit-tiny-in64", ["--dataset", "imagefolder", "--data", INET, "--model", "vit-tiny-in64", "--batch", "4"]),
]
M = C + ["--model", "vit-micro-cifar"]
OPTIONS = [
    ["--pool", "mean"], ["--pool", "cls"], ["--pos", "sincos2d"], ["--pos", "learned"],
    ["--conv-stem", "32,64"], ["--conv-stem", "32,64", "--stem-pool", "1"], ["--conv-stem", "16", "--patch-overlap", "1"], ["--patch-overlap", "2"],
    ["--patch-drop", "0.5"], ["--layer-scale", "1e-5"], ["--reg-tokens", "4"],
    ["--reg-tokens", "2", "--pool", "mean"], ["--drop-path", "0.1"], ["--drop", "0.1", "--attn-drop", "0.1"],
    ["--mlp-ratio", "2", "--dim", "64", "--heads", "2", "--depth", "2"], ["--img-size", "16", "--patch", "2"],
    ["--full-last-block"], ["--pool", "mean", "--patch-drop", "0.5", "--patch-drop-until", "20s"],
]
RUNS += [(" ".join(o), M + o) for o in OPTIONS]
COMMON = ["--steps", "1000", "--stop-at", "30", "--batch", "8", "--threads", "1", "--seed", "0",
          "--eval-every", "0", "--save-every", "0", "--log-every", "100", "--overwrite"]


def read_st(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    tensors = {k: (v["dtype"], v["shape"], body[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in header.items()}
    return data, meta, tensors


def compare(a, b, ignore=()):
    da, ma, ta = read_st(a)
    db, mb, tb = read_st(b)
    diffs = []
    for k in sorted(set(ma) | set(mb)):
        if k not in ignore and ma.get(k) != mb.get(k):
            diffs.append(f"metadata {k}: {ma.get(k)!r} vs {mb.get(k)!r}")
    if list(ta) != list(tb):
        diffs.append(f"tensor names/order differ: {list(ta)[:5]}… vs {list(tb)[:5]}…")
    for k in ta:
        if k in tb and ta[k] != tb[k]:
            diffs.append(f"tensor {k} differs")
    if not ignore and da != db:
        diffs.append("files differ byte-wise")
    return len(ta), diffs


def main():
    old, new = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    work = sys.argv[3] if len(sys.argv) > 3 else "/tmp/same_bits"
    bad = 0
    ho = subprocess.run([old, "--help"], capture_output=True, text=True).stdout
    hn = subprocess.run([new, "--help"], capture_output=True, text=True).stdout
    print(f"--help: {'identical' if ho == hn else 'differs (compare by eye)'}")
    for i, (name, args) in enumerate(RUNS):
        data = args[args.index("--data") + 1]
        if not os.path.isdir(data):
            print(f"SKIP  {name}: no data at {data}")
            continue
        outs = []
        for tag, exe in (("old", old), ("new", new)):
            out = os.path.join(work, tag, f"run{i}")
            r = subprocess.run([exe] + args + COMMON + ["--out", out], capture_output=True, text=True)
            if r.returncode:
                print(f"FAIL  {name}: {tag} ./train exit {r.returncode}: {r.stderr.strip()[-300:]}")
            outs.append(out)
        try:
            n, d1 = compare(os.path.join(outs[0], "model.safetensors"), os.path.join(outs[1], "model.safetensors"))
            _, d2 = compare(os.path.join(outs[0], "train_state.safetensors"),
                            os.path.join(outs[1], "train_state.safetensors"), ignore=("wall_time",))
        except OSError as e:
            print(f"FAIL  {name}: {e}")
            bad += 1
            continue
        d = d1 + ["train_state: " + x for x in d2]
        bad += bool(d)
        print(f"{'SAME ' if not d else 'DIFF '} {name}: model.safetensors {n} tensors + metadata"
              f"{' byte-identical' if not d1 else ''}, train_state tensors + metadata {'identical' if not d2 else ''}")
        for x in d[:8]:
            print("      " + x)
    sys.exit(1 if bad else 0)


main()
