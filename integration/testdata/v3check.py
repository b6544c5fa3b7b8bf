#!/usr/bin/python3
"""Read a Zarr v3 store through a zfuse mount and compare with known values.

usage: /usr/bin/python3 v3check.py COMMAND MOUNT WANT [GROUP...]

  fromfile MOUNT WANT        the mount as v3: for every array in WANT, the
                             presented zarr.json says one bytes codec, every
                             chunk file has the decoded size, and the array
                             assembled with np.fromfile from the chunk files
                             (missing ones: fill_value) holds WANT's values
  zarr2 MOUNT WANT [GROUP...]
                             the mount under --as-v2: zarr-python 2.13 (a
                             v2-only reader) opens every array in WANT and
                             reads its values, and each GROUP through
                             zarr.open_consolidated; no zarr.json is shown

WANT is a JSON file: {"path/of/array": {"shape": [...], "data": [...]}},
data in C order (booleans as 0/1).

Prints one JSON object per check, {"name": ..., "err": ...}; err is empty
when the check passed. Exits 0 unless the script itself fails.
"""
import json
import math
import os
import sys

import numpy as np

from check import checked, report  # check.py, beside this file

DTYPES = {"bool": "?", "int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8",
          "uint8": "u1", "uint16": "u2", "uint32": "u4", "uint64": "u8",
          "float16": "f2", "float32": "f4", "float64": "f8",
          "complex64": "c8", "complex128": "c16"}


def differ(want, got):
    """Describe how two numpy arrays differ; "" when they are the same."""
    if want.shape != got.shape:
        return f"got shape {got.shape}, want {want.shape}"
    same = (want == got) | ((want != want) & (got != got))  # NaN equals NaN
    if not same.all():
        i = np.unravel_index(np.argmin(same), same.shape) if same.ndim else ()
        return f"values differ first at {i}: got {got[i]!r}, want {want[i]!r}\ngot  {got.ravel()[:12]}...\nwant {want.ravel()[:12]}..."
    return ""


def expected(w, dtype):
    return np.array(w["data"], dtype="f8").astype(dtype).reshape(w["shape"])


def fill(v, dtype):
    if isinstance(v, str) and v.startswith("0x"):
        return np.frombuffer(int(v, 16).to_bytes(dtype.itemsize, "big"), dtype.newbyteorder(">"))[0]
    if isinstance(v, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[v]
    return 0 if v is None else v


def from_files(mount, path, w):
    root = os.path.join(mount, path)
    with open(os.path.join(root, "zarr.json")) as f:
        meta = json.load(f)
    codecs = meta["codecs"]
    if len(codecs) != 1 or codecs[0]["name"] != "bytes":
        return f"presented codecs {codecs}, want one bytes codec"
    endian = codecs[0].get("configuration", {}).get("endian", "little")
    dtype = np.dtype(("<" if endian == "little" else ">") + DTYPES[meta["data_type"]])
    shape = meta["shape"]
    chunks = meta["chunk_grid"]["configuration"]["chunk_shape"]
    enc = meta["chunk_key_encoding"]
    sep = enc.get("configuration", {}).get("separator", "/" if enc["name"] == "default" else ".")
    grid = [-(-s // c) for s, c in zip(shape, chunks)]
    padded = [g * c for g, c in zip(grid, chunks)]
    out = np.full(padded, fill(meta["fill_value"], dtype), dtype=dtype)
    for idx in np.ndindex(*grid):
        parts = [str(i) for i in idx]
        if enc["name"] == "default":
            key = sep.join(["c"] + parts)
        else:
            key = sep.join(parts) or "0"
        p = os.path.join(root, *key.split("/"))
        if not os.path.exists(p):
            continue
        n = int(np.prod(chunks, dtype=np.int64))
        if os.path.getsize(p) != n * dtype.itemsize:
            return f"{key}: stat says {os.path.getsize(p)} bytes, want {n * dtype.itemsize}"
        c = np.fromfile(p, dtype=dtype)
        if c.size != n:
            return f"{key}: read {c.size} elements, want {n}"
        out[tuple(slice(i * k, (i + 1) * k) for i, k in zip(idx, chunks))] = c.reshape(chunks)
    got = out[tuple(slice(0, s) for s in shape)]
    return differ(expected(w, dtype), got)


def cmd_fromfile(mount, want):
    for path, w in sorted(want.items()):
        checked("fromfile " + path, from_files, mount, path, w)


def zarr2_array(mount, path, w):
    import zarr
    if os.path.exists(os.path.join(mount, path, "zarr.json")):
        return "zarr.json is shown under --as-v2"
    z = zarr.open_array(os.path.join(mount, path), mode="r")
    if z.compressor is not None or z.filters:
        return f"compressor {z.compressor}, filters {z.filters}"
    return differ(expected(w, z.dtype), z[...])


def zarr2_group(mount, group, want):
    import zarr
    g = zarr.open_consolidated(os.path.join(mount, group), mode="r")
    n = 0
    for path, w in sorted(want.items()):
        if not path.startswith(group + "/"):
            continue
        z = g[path[len(group) + 1:]]
        if err := differ(expected(w, z.dtype), z[...]):
            return path + ": " + err
        n += 1
    return "" if n else "no array of WANT in " + group


def cmd_zarr2(mount, want, *groups):
    if os.path.exists(os.path.join(mount, "zarr.json")):
        report("zarr2 root", "zarr.json is shown under --as-v2")
    for path, w in sorted(want.items()):
        checked("zarr2 " + path, zarr2_array, mount, path, w)
    for group in groups:
        checked("zarr2 consolidated " + group, zarr2_group, mount, group, want)


def main():
    cmd, mount, wantfile, *rest = sys.argv[1:]
    with open(wantfile) as f:
        want = json.load(f)
    {"fromfile": cmd_fromfile, "zarr2": cmd_zarr2}[cmd](mount, want, *rest)


if __name__ == "__main__":
    main()
