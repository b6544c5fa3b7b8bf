#!/usr/bin/python3
"""Check stores that zfuse compress wrote, with zarr-python 2.13 and xarray.

usage: /usr/bin/python3 compress_check.py COMMAND ARGS...

  same ORIG DEST [CODEC [nullfill]]
                             every array under ORIG (zarr-python; a group, or a
                             directory of arrays) reads from DEST with the same
                             values, dtype, shape, fill value and attributes;
                             groups keep their attributes; with CODEC (a
                             numcodecs id), every array DEST holds that is not
                             an object array uses it; with nullfill, a fill
                             value of None may read as zero (DEST went through
                             Zarr v3, which has no "no fill value")
  xarray ORIG DEST           xarray.open_zarr of DEST (consolidated when DEST
                             has .zmetadata) is identical to that of ORIG
  values ORIG OUT PATH...     write the values of the arrays PATH of ORIG as JSON
                             to OUT: {path: {"shape": [...], "data": [C order]}}
                             (bools as 0/1), for comparing with zarrita
  digest ORIG OUT PATH...    write the shape and the SHA-256 of the values (C
                             order, little-endian float64) of the arrays PATH of
                             ORIG as JSON to OUT, for comparing with zarrita's
                             digest.mjs on arrays too large to print
  whole DEST                 every chunk file under DEST decodes (numcodecs,
                             with the .zarray that DEST's .zfuse-compress.json
                             plans for its array) to a whole chunk: an
                             interrupted run left no truncated file

Prints one JSON object per check, {"name": ..., "err": ...}.
"""
import json
import math
import os
import sys

import numcodecs
import numpy as np
import zarr

from check import checked, differ, report  # check.py, beside this file


def same_fill(a, b, nullfill=False):
    if a is None and nullfill:
        return b is not None and not np.any(np.array(b))
    if a is None or b is None:
        return a is None and b is None
    try:
        if isinstance(a, float) and math.isnan(a):
            return isinstance(b, float) and math.isnan(b)
    except TypeError:
        pass
    return np.array(a).tobytes() == np.array(b).tobytes() or a == b


# The legacy nested layout (0/0 keys, no dimension_separator) reads as
# missing chunks in zarr-python; zfuse presents it as "nested", which holds
# the same values.
LEGACY = {"nested_legacy": "nested"}


def one_array(orig, dest, path, codec, nullfill):
    want, got = orig[LEGACY.get(path, path)], dest[path]
    if err := differ(want[...], got[...]):
        return err
    if dict(got.attrs) != dict(want.attrs):
        return f"attrs {dict(got.attrs)}, want {dict(want.attrs)}"
    if want.dtype != object and not same_fill(want.fill_value, got.fill_value, nullfill):
        return f"fill_value {got.fill_value!r}, want {want.fill_value!r}"
    if codec and want.dtype != object and (got.compressor is None or got.compressor.codec_id != codec):
        return f"compressor {got.compressor}, want {codec}"
    return ""


class Dir:
    """A directory of arrays and groups without a root group."""

    def __init__(self, root):
        self.root = root

    def __getitem__(self, p):
        return zarr.open(os.path.join(self.root, p), mode="r")


def cmd_same(orig, dest, codec="", nullfill=""):
    arrays, groups = [], []
    if os.path.exists(os.path.join(orig, ".zgroup")):
        o, d = zarr.open_group(orig, mode="r"), zarr.open_group(dest, mode="r")
        groups.append("")
        o.visititems(lambda p, v: (arrays if isinstance(v, zarr.Array) else groups).append(p))
    else:
        o, d = Dir(orig), Dir(dest)
        for root, _, names in os.walk(orig):
            rel = os.path.relpath(root, orig)
            if ".zarray" in names:
                arrays.append(rel)
            elif ".zgroup" in names:
                groups.append(rel)
    def attrs(root, p):
        f = os.path.join(root, p, ".zattrs")
        if not os.path.exists(f):
            return {}
        with open(f, encoding="utf-8") as fh:
            return json.load(fh)
    for p in sorted(groups):
        checked("group:" + (p or "/"), lambda p=p: "" if attrs(dest, p) == attrs(orig, p) else f"attrs {attrs(dest, p)}, want {attrs(orig, p)}")
    for p in sorted(arrays):
        checked(p, one_array, o, d, p, codec, bool(nullfill))


def cmd_xarray(orig, dest):
    import xarray as xr

    def one():
        cons = os.path.exists(os.path.join(dest, ".zmetadata"))
        want = xr.open_zarr(orig).load()
        got = xr.open_zarr(dest, consolidated=cons).load()
        xr.testing.assert_identical(want, got)
        return ""
    checked("xarray", one)


def cmd_values(orig, out, *paths):
    g = zarr.open_group(orig, mode="r")
    res = {}
    for p in paths:
        a = g[p][...]
        # NaN as null, as zarrita's JSON.stringify writes it.
        res[p] = {"shape": list(a.shape), "data": [None if x != x else float(x) for x in np.asarray(a, dtype=float).ravel(order="C")]}
    with open(out, "w") as f:
        json.dump(res, f)
    report("values written", "" if res else "no array")


def cmd_digest(orig, out, *paths):
    import hashlib
    g = zarr.open_group(orig, mode="r")
    res = {}
    for p in paths:
        a = g[p][...]
        b = np.ascontiguousarray(a, dtype="<f8").tobytes()
        res[p] = {"shape": list(a.shape), "sha256": hashlib.sha256(b).hexdigest()}
    with open(out, "w") as f:
        json.dump(res, f)
    report("digests written", "" if res else "no array")


def cmd_whole(dest):
    with open(os.path.join(dest, ".zfuse-compress.json")) as f:
        run = json.load(f)["arrays"]
    n = 0
    for path, files in sorted(run.items()):
        if ".zarray" not in files:
            continue
        meta = json.loads(files[".zarray"])
        codec = numcodecs.get_codec(meta["compressor"]) if meta["compressor"] else None
        size = int(np.prod(meta["chunks"])) * np.dtype(meta["dtype"]).itemsize
        adir = os.path.join(dest, path)
        if not os.path.isdir(adir):
            continue
        for root, _, names in os.walk(adir):
            for name in names:
                if name.startswith("."):
                    continue
                key = os.path.relpath(os.path.join(root, name), dest)

                def one(p=os.path.join(root, name)):
                    with open(p, "rb") as f:
                        b = f.read()
                    out = codec.decode(b) if codec else b
                    got = len(numcodecs.compat.ensure_bytes(out))
                    return "" if got == size else f"decodes to {got} bytes, want {size}"
                checked(key, one)
                n += 1
    report("chunk files checked", "" if n else "no chunk file")


def main():
    cmds = {"same": cmd_same, "xarray": cmd_xarray, "values": cmd_values, "digest": cmd_digest, "whole": cmd_whole}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    cmds[sys.argv[1]](*sys.argv[2:])


if __name__ == "__main__":
    main()
