"""safetensors_io.py — a tiny pure-numpy safetensors reader/writer for the reference scripts.

No dependency on the `safetensors` package: only numpy (Debian's python3-numpy).

    save(path, {"name": np.ndarray, ...}, metadata={"key": "value"})
    tensors, metadata = load(path)

save() is deterministic: header keys sorted by name, data laid out by element size (largest
first) then name, so every tensor is aligned to its element size and the same inputs always give
the same bytes. The file loads with vitgrad's C reader (tensor/safetensors.c) and with the
official library.

Run as a script to regenerate tests/reference/st_python_sample.safetensors (read by
tests/test_safetensors.c):
    /usr/bin/python3 tests/reference/safetensors_io.py
"""
import json
import os
import struct

import numpy as np

# safetensors dtype string <-> little-endian numpy dtype (those vitgrad's C reader knows)
_TO_NP = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "U8": "u1"}
_FROM_NP = {np.dtype(v): k for k, v in _TO_NP.items()}
_MAX_HEADER = 100 * 1024 * 1024


def save(path, tensors, metadata=None):
    """Write a dict of numpy arrays (F64 F32 F16 I64 I32 U8) and optional str->str metadata."""
    entries = []
    for name, arr in tensors.items():
        if not isinstance(name, str) or not name or name == "__metadata__":
            raise ValueError(f"invalid tensor name {name!r}")
        arr = np.asarray(arr)
        dt = _FROM_NP.get(arr.dtype.newbyteorder("<") if arr.dtype.byteorder == ">" else arr.dtype)
        if dt is None:
            raise ValueError(f"{name}: dtype {arr.dtype} not supported (use float64/32/16, int64/32, uint8)")
        data = np.ascontiguousarray(arr, dtype=_TO_NP[dt]).tobytes()
        entries.append((name, dt, list(arr.shape), data))

    # data order: element size descending, then name (the official library's order)
    offsets, pos = {}, 0
    for name, dt, _, data in sorted(entries, key=lambda e: (-np.dtype(_TO_NP[e[1]]).itemsize, e[0])):
        offsets[name] = (pos, pos + len(data))
        pos += len(data)

    header = {}
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ValueError("metadata keys and values must be strings")
        header["__metadata__"] = dict(sorted(metadata.items()))
    for name, dt, shape, _ in sorted(entries, key=lambda e: e[0]):
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": list(offsets[name])}
    hbytes = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    hbytes += b" " * (-len(hbytes) % 8)          # data section starts at a multiple of 8

    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hbytes)))
        f.write(hbytes)
        for name, _, _, data in sorted(entries, key=lambda e: offsets[e[0]][0]):
            f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def collector():
    """(tensors, put): put(name, t) stores a torch tensor or array under a new name, C-ordered
    (0-d arrays stay 0-d); tensors is the dict to save()."""
    tensors = {}

    def put(name, t):
        a = t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)
        assert name not in tensors, name
        tensors[name] = np.array(a, order="C", copy=True)
    return tensors, put


def load(path):
    """Return ({name: np.ndarray}, {metadata}). BF16 is widened to float32 (numpy has no bfloat16)."""
    with open(path, "rb") as f:
        buf = f.read()
    if len(buf) < 8:
        raise ValueError(f"{path}: file is {len(buf)} bytes, too small")
    (n,) = struct.unpack("<Q", buf[:8])
    if n > len(buf) - 8 or n > _MAX_HEADER:
        raise ValueError(f"{path}: header length {n} exceeds the file")
    header = json.loads(buf[8:8 + n].decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header is not a JSON object")
    data = memoryview(buf)[8 + n:]
    metadata = header.pop("__metadata__", None) or {}
    if not all(isinstance(v, str) for v in metadata.values()):
        raise ValueError(f"{path}: metadata values must be strings")
    out, spans = {}, []
    for name, e in header.items():
        dt, shape, (b, end) = e["dtype"], [int(d) for d in e["shape"]], e["data_offsets"]
        if dt == "BF16":
            size, npdt = 2, "<u2"
        elif dt in _TO_NP:
            npdt = _TO_NP[dt]
            size = np.dtype(npdt).itemsize
        else:
            raise ValueError(f"{path}: {name}: unknown dtype {dt!r}")
        numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if any(d < 0 for d in shape) or not (0 <= b <= end <= len(data)) or end - b != numel * size:
            raise ValueError(f"{path}: {name}: shape {shape} {dt} does not match data_offsets [{b}, {end}]")
        arr = np.frombuffer(data[b:end], dtype=npdt).reshape(shape).copy()
        if dt == "BF16":
            arr = (arr.astype("<u4") << 16).view("<f4")
        out[name] = arr
        if end > b:
            spans.append((b, end, name))
    spans.sort()
    for (_, e0, n0), (b1, _, n1) in zip(spans, spans[1:]):
        if e0 > b1:
            raise ValueError(f"{path}: tensors {n0} and {n1} overlap")
    return out, metadata


def _write_sample(path):
    """The fixed file tests/test_safetensors.c checks value by value. Keep in sync with that test."""
    tensors = {
        "weight_f32": (np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1.0),
        "bias_f64": np.array([0.1, -0.2, 1e-300, 3.5], dtype=np.float64),
        "half": np.array([1.0, -2.5, 65504.0, 2.0 ** -24, 0.0, np.inf], dtype=np.float16),
        "labels_i64": np.array([[0, 9], [-3, 2 ** 40]], dtype=np.int64),
        "count_i32": np.array(7, dtype=np.int32),          # a scalar: shape []
        "pixels_u8": np.arange(250, 256, dtype=np.uint8).reshape(1, 2, 3),
        "empty": np.zeros((0, 4), dtype=np.float32),
    }
    metadata = {"format": "pt", "note": 'quote " backslash \\ newline \n unicode é ✓ 😀'}
    save(path, tensors, metadata)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    p = os.path.join(here, "st_python_sample.safetensors")
    _write_sample(p)
    t, m = load(p)
    print(f"wrote {p}: {len(t)} tensors, metadata {sorted(m)}")
