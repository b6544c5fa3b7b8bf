#!/usr/bin/python3
"""Read the .npy files of a zfuse --as-npy mount with numpy and compare.

usage: /usr/bin/python3 npycheck.py COMMAND ARGS...

  zarr ORIG MOUNT ROOTNAME    every array of the v2 store ORIG, read by
                              zarr-python 2.13: its file MOUNT/PATH.npy
                              (ROOTNAME.npy for an array at the root) is
                              byte for byte what np.save writes for it (in
                              its order), and reads back equal through
                              np.load(mmap_mode='r') (a column too, a
                              strided walk over the map), np.memmap,
                              np.fromfile and os.pread at odd offsets;
                              PATH.json holds its .zattrs. Object arrays
                              have no file. Arrays zarr-python 2.13 cannot
                              read (a codec option numcodecs 0.11 lacks) are
                              only logged.
  known MOUNT                 zarrita.js v2 data.zarr: every array holds the
                              values its MANIFEST lists (check.py's table),
                              dtype and byte order included, through
                              np.load(mmap_mode='r'); object arrays have no
                              file
  values MOUNT WANT           every array of WANT (a JSON file:
                              {"path": {"shape": [...], "data": [...]}},
                              data in C order, booleans as 0/1) read through
                              np.load(mmap_mode='r') of MOUNT/PATH.npy holds
                              those values, and np.fromfile agrees

Prints one JSON object per check, {"name": ..., "err": ...}; err is empty
when the check passed. Exits 0 unless the script itself fails.
"""
import io
import json
import os
import random
import sys

import numpy as np
import zarr

from check import checked, report  # check.py, beside this file


def log(name, msg):
    print(json.dumps({"name": name, "log": msg}), flush=True)


def differ(want, got):
    """Describe how two numpy arrays differ; "" when they are the same."""
    want, got = np.asarray(want), np.asarray(got)
    if want.dtype != got.dtype:
        return f"got dtype {got.dtype}, want {want.dtype}"
    if want.shape != got.shape:
        return f"got shape {got.shape}, want {want.shape}"
    if want.tobytes() != np.ascontiguousarray(got).tobytes():
        a, b = want.ravel(), np.ascontiguousarray(got).ravel()
        i = next((k for k in range(a.size) if a[k:k + 1].tobytes() != b[k:k + 1].tobytes()), 0)
        return f"values differ first at flat index {i}: got {b[i]!r}, want {a[i]!r}"
    return ""


def arrays(orig):
    """Every array directory under orig (a .zarray), relative, sorted."""
    out = []
    for d, dirs, files in os.walk(orig):
        dirs.sort()
        if ".zarray" in files:
            out.append(os.path.relpath(d, orig))
            dirs[:] = []  # arrays are leaves
    return out


def open_array(orig, rel):
    with open(os.path.join(orig, rel, ".zarray")) as f:
        meta = json.load(f)
    store = zarr.DirectoryStore(orig)
    nested = "dimension_separator" not in meta and any(
        os.path.isdir(os.path.join(orig, rel, e)) for e in os.listdir(os.path.join(orig, rel)))
    if nested:  # a legacy nested store, which zarr-python reads only this way
        store = zarr.NestedDirectoryStore(orig)
    return zarr.open_array(store=store, path="" if rel == "." else rel, mode="r")


def check_npy(p, z):
    x = z[...]
    if z.order == "F":
        x = np.asfortranarray(x)
    b = io.BytesIO()
    np.save(b, x)
    want = b.getvalue()
    with open(p, "rb") as f:
        got = f.read()
    if got != want:
        i = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]), min(len(got), len(want)))
        return f"{len(got)} bytes, np.save writes {len(want)}; they differ from byte {i} on: {got[max(i - 8, 0):i + 8]!r} vs {want[max(i - 8, 0):i + 8]!r}"
    start = len(want) - x.nbytes
    if start % 64:
        return f"data starts at {start}, not 64-byte aligned"
    m = np.load(p, mmap_mode="r")
    if not isinstance(m, np.memmap) and m.size:
        return f"np.load(mmap_mode='r') gave {type(m)}, not a memory map"
    if e := differ(x, m):
        return "np.load(mmap_mode='r'): " + e
    if x.ndim == 2 and x.shape[1] > 0:
        col = x.shape[1] // 2
        if e := differ(np.ascontiguousarray(x[:, col]), m[:, col]):
            return f"column {col} through the map: " + e
    mm = np.memmap(p, dtype=x.dtype, mode="r", offset=start, shape=x.shape, order="F" if z.order == "F" else "C")
    if e := differ(x, mm):
        return "np.memmap: " + e
    flat = np.fromfile(p, dtype=x.dtype, offset=start)
    if e := differ(x.ravel(order="K"), flat):
        return "np.fromfile: " + e
    rng = random.Random(len(want))
    fd = os.open(p, os.O_RDONLY)
    try:
        for _ in range(20):
            off = rng.randrange(len(want))
            n = rng.randrange(1, 100)
            if os.pread(fd, n, off) != want[off:off + n]:
                return f"pread [{off}, +{n}) differs"
    finally:
        os.close(fd)
    return ""


def check_json(p, z):
    with open(p) as f:
        got = json.load(f)
    if got != z.attrs.asdict():
        return f"{got}, want the .zattrs {z.attrs.asdict()}"
    return ""


def cmd_zarr(orig, mount, rootname):
    for rel in arrays(orig):
        base = os.path.join(mount, rootname if rel == "." else rel)
        try:
            z = open_array(orig, rel)
        except Exception as e:
            log(rel, f"zarr-python {zarr.__version__} cannot read the original: {type(e).__name__}: {e}")
            continue
        if z.dtype.hasobject:
            checked(f"{rel}: object array not shown", lambda: "" if not os.path.exists(base + ".npy") else "it has a .npy file")
            continue
        checked(f"{rel}.npy", check_npy, base + ".npy", z)
        checked(f"{rel}.json", check_json, base + ".json", z)
        checked(f"{rel}: no directory", lambda: "" if not os.path.isdir(base) else "its directory is shown")


def check_values(p, w):
    m = np.load(p, mmap_mode="r")
    want = np.array(w["data"], dtype="f8").reshape(w["shape"])
    got = np.asarray(m).astype("f8")
    if got.shape != want.shape:
        return f"shape {got.shape}, want {want.shape}"
    same = (got == want) | ((got != got) & (want != want))
    if not same.all():
        return f"values {got.ravel()[:12]}..., want {want.ravel()[:12]}..."
    with open(p, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
    flat = np.fromfile(p, dtype=m.dtype, offset=size - m.nbytes)
    if flat.tobytes() != np.asarray(m).tobytes(order="A"):
        return "np.fromfile after the header differs from np.load"
    return ""


def cmd_values(mount, wantfile):
    with open(wantfile) as f:
        want = json.load(f)
    for path in sorted(want):
        checked(f"{path}.npy", check_values, os.path.join(mount, path + ".npy"), want[path])


def cmd_known(mount):
    from check import ZARRITA  # testdata/check.py, beside this script
    for path, want in sorted(ZARRITA.items()):
        p = os.path.join(mount, path + ".npy")
        if want.dtype.hasobject:
            checked(f"{path}: object array not shown", lambda p=p: "" if not os.path.exists(p) else "it has a .npy file")
            continue
        checked(f"{path}.npy", lambda p=p, want=want: differ(want, np.load(p, mmap_mode="r")))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"zarr": cmd_zarr, "values": cmd_values, "known": cmd_known}[cmd](*args)


if __name__ == "__main__":
    main()
