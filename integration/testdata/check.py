#!/usr/bin/python3
"""Read Zarr stores through a zfuse mount and compare with known values.

usage: /usr/bin/python3 check.py COMMAND ARGS...

  read ORIG MOUNT MANIFEST         every array of the manifest: zarr-python
                                   through the mount (plain and consolidated)
                                   equals zarr-python on ORIG; the mount's
                                   .zarray says no compression
  xarray ORIG MOUNT consolidated|plain
                                   xarray.open_zarr through the mount is
                                   identical to xarray.open_zarr on ORIG
  zp218 MOUNT FIXTURE              zarr-python 2.18.7's fixture/ through the
                                   mount: every <i>/<j> equals <i>/0 read
                                   from FIXTURE, and the 2x2 layout stores
  zarrita MOUNT                    zarrita.js v2 data.zarr through the mount
                                   holds the values its MANIFEST lists
  readers ORIG MOUNT MANIFEST THREADS PROCS
                                   read every array from many threads and
                                   processes at once

Prints one JSON object per check, {"name": ..., "err": ...}; err is empty
when the check passed. Exits 0 unless the script itself fails.
"""
import json
import multiprocessing
import os
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import zarr


def report(name, err=""):
    print(json.dumps({"name": name, "err": err}), flush=True)


def checked(name, fn, *args):
    try:
        err = fn(*args) or ""
    except Exception as e:  # a failed read is a failed check, not a crash
        err = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
    report(name, err)


def differ(want, got):
    """Describe how two numpy arrays differ; "" when they are the same."""
    want, got = np.asarray(want), np.asarray(got)
    if want.dtype != got.dtype or want.shape != got.shape:
        return f"got {got.dtype}{got.shape}, want {want.dtype}{want.shape}"
    if want.dtype.kind in "fc":
        same = np.array_equal(want, got, equal_nan=True)
    elif want.dtype.kind == "V":
        same = want.tobytes() == got.tobytes()
    else:
        same = np.array_equal(want, got)
    if not same:
        return f"values differ:\ngot  {got.ravel()[:8]}...\nwant {want.ravel()[:8]}..."
    return ""


def zarray(store, path):
    with open(os.path.join(store, path, ".zarray"), "rb") as f:
        return json.load(f)


def read_one(orig, mount, path, obj):
    want = zarr.open_group(orig, mode="r")[path]
    for how, g in [("plain", zarr.open_group(mount, mode="r")), ("consolidated", zarr.open_consolidated(mount, mode="r"))]:
        got = g[path]
        if err := differ(want[...], got[...]):
            return f"{how}: {err}"
        if dict(got.attrs) != dict(want.attrs):
            return f"{how}: attrs {dict(got.attrs)}, want {dict(want.attrs)}"
        if obj:
            continue  # passed through: stored metadata and chunks
        if got.compressor is not None or got.filters:
            return f"{how}: zarr-python sees compressor {got.compressor}, filters {got.filters} through the mount"
    m, o = zarray(mount, path), zarray(orig, path)
    if obj:
        return "" if m == o else f".zarray of a passed-through array changed: {m}"
    if m["compressor"] is not None or m["filters"] is not None:
        return f"mount .zarray says compressor {m['compressor']}, filters {m['filters']}"
    for k in o:
        if k not in ("compressor", "filters") and m.get(k) != o[k] and not (k == "fill_value" and o[k] != o[k]):
            return f"mount .zarray {k} = {m.get(k)!r}, want {o[k]!r}"
    return ""


def cmd_read(orig, mount, manifest):
    arrays = json.load(open(manifest))["arrays"]
    for path, m in sorted(arrays.items()):
        checked(path, read_one, orig, mount, path, m["object"])


def cmd_xarray(orig, mount, how):
    import xarray as xr

    def one():
        consolidated = how == "consolidated"
        want = xr.open_zarr(orig, consolidated=consolidated).load()
        got = xr.open_zarr(mount, consolidated=consolidated)
        for name, v in got.variables.items():
            if v.encoding.get("compressor") is not None or v.encoding.get("filters"):
                return f"{name}: xarray sees compressor {v.encoding.get('compressor')} through the mount"
        xr.testing.assert_identical(want, got.load())
        return ""
    checked("xarray/" + how, one)


def cmd_zp218(mount, fixture):
    for i in range(24):
        want = zarr.open_array(os.path.join(fixture, str(i), "0"), mode="r")
        for j in range(7):
            def one(i=i, j=j):
                got = zarr.open_array(os.path.join(mount, str(i), str(j)), mode="r")
                if got.compressor is not None:
                    return f"compressor {got.compressor} through the mount"
                return differ(want[...], got[...])
            checked(f"{i}/{j}", one)
    for name in ["flat", "flat_legacy", "nested", "meta", "nested_legacy"]:
        # nested_legacy has "0/0" keys and no dimension_separator: plain
        # zarr.open_array finds its chunks only if zfuse names the separator.
        checked(name, lambda name=name: differ(np.array([[1, 2], [3, 4]], dtype="<i8"),
                                               zarr.open_array(os.path.join(mount, name), mode="r")[...]))

    def attrs():
        # zarr 2.13 reads attributes as ASCII and fails on these, with or
        # without zfuse: compare the UTF-8 JSON zfuse passes through.
        def load(d):
            with open(os.path.join(d, "utf8attrs", ".zattrs"), encoding="utf-8") as f:
                return json.load(f)
        got, want = load(mount), load(fixture)
        return "" if got == want else f"attrs {got}, want {want}"
    checked("utf8attrs", attrs)


# zarrita.js fixtures/v2/data.zarr, as its MANIFEST lists them.
I2 = np.array([1, 2, 3, 4], dtype="<i2")
CUBE = np.arange(27, dtype="<i2").reshape(3, 3, 3)
ZARRITA = {
    "1d.contiguous.zlib.i2": I2, "1d.contiguous.blosc.i2": I2, "1d.contiguous.lz4.i2": I2,
    "1d.contiguous.zstd.i2": I2, "1d.contiguous.raw.i2": I2,
    "1d.contiguous.i4": I2.astype("<i4"),
    "1d.contiguous.u1": np.array([255, 0, 255, 0], dtype="u1"),
    "1d.contiguous.f4.le": np.array([-1000.5, 0, 1000.5, 0], dtype="<f4"),
    "1d.contiguous.f4.be": np.array([-1000.5, 0, 1000.5, 0], dtype=">f4"),
    "1d.contiguous.f8": np.array([1.5, 2.5, 3.5, 4.5], dtype="<f8"),
    "1d.contiguous.U13.le": np.array(["a", "b", "cc", "d"], dtype="<U13"),
    "1d.contiguous.U13.be": np.array(["a", "b", "cc", "d"], dtype=">U13"),
    "1d.contiguous.U7": np.array(["a", "b", "cc", "d"], dtype="<U7"),
    "1d.contiguous.S7": np.array([b"a", b"b", b"cc", b"d"], dtype="S7"),
    "1d.contiguous.b1": np.array([True, False, True, False]),
    "1d.chunked.i2": I2,
    "1d.chunked.ragged.i2": np.arange(1, 6, dtype="<i2"),
    "2d.contiguous.i2": I2.reshape(2, 2), "2d.chunked.i2": I2.reshape(2, 2),
    "2d.chunked.U7": np.array([["a", "b"], ["cc", "d"]], dtype="<U7"),
    "2d.chunked.ragged.i2": np.arange(1, 10, dtype="<i2").reshape(3, 3),
    "3d.contiguous.i2": CUBE, "3d.chunked.i2": CUBE,
    "3d.chunked.mixed.i2.C": CUBE, "3d.chunked.mixed.i2.F": CUBE,
    "3d.chunked.O": np.array([[["a", "aa"], ["aaa", "aaaa"]], [["b", "bb"], ["bbb", "bbbb"]]], dtype=object),
    "1d.contiguous.shuffle.i2": I2,
    "1d.contiguous.delta.i2": I2,
    "1d.contiguous.delta.shuffle.i2": np.array([10, 20, 30, 40], dtype="<i2"),
    "1d.contiguous.bitround.f4": np.array([1.125, 2.25, 3.25, 4.5], dtype="<f4"),
    "1d.contiguous.json2.O": np.array(["foo", "bar", "baz", "qux"], dtype=object),
}


def cmd_zarrita(mount):
    g = zarr.open_consolidated(mount, mode="r")
    checked("attrs", lambda: "" if dict(g.attrs) == {"answer": 42} else f"root attrs {dict(g.attrs)}")
    for name, want in ZARRITA.items():
        checked(name, lambda name=name, want=want: differ(want, g[name][...]))

    def fso():
        got = g["1d.contiguous.fixedscaleoffset.f4"][...]
        if got.dtype != np.dtype("<f4"):
            return f"dtype {got.dtype}"
        # stored as i2 with scale 10: the decode is within float32 rounding
        np.testing.assert_allclose(got, [1000.0, 1000.1, 1000.2, 1000.3], rtol=1e-6)
        return ""
    checked("1d.contiguous.fixedscaleoffset.f4", fso)
    checked("my group with spaces", lambda: "" if "my group with spaces" in g.group_keys() else "group missing")


def read_all(args):
    orig, mount, paths = args
    bad = []
    for path in paths:
        want = zarr.open_group(orig, mode="r")[path][...]
        got = zarr.open_group(mount, mode="r")[path][...]
        if err := differ(want, got):
            bad.append(f"{path}: {err}")
    return bad


def cmd_readers(orig, mount, manifest, threads, procs):
    paths = sorted(json.load(open(manifest))["arrays"])
    jobs = [(orig, mount, paths[k:] + paths[:k]) for k in range(max(int(threads), int(procs)))]

    def threaded():
        with ThreadPoolExecutor(int(threads)) as ex:
            bad = [b for r in ex.map(read_all, jobs[: int(threads)]) for b in r]
        return "\n".join(bad)

    def processes():
        with multiprocessing.get_context("spawn").Pool(int(procs)) as pool:
            bad = [b for r in pool.map(read_all, jobs[: int(procs)]) for b in r]
        return "\n".join(bad)
    checked(f"threads/{threads}", threaded)
    checked(f"processes/{procs}", processes)


def main():
    cmds = {"read": cmd_read, "xarray": cmd_xarray, "zp218": cmd_zp218, "zarrita": cmd_zarrita, "readers": cmd_readers}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        raise SystemExit(__doc__)
    cmds[sys.argv[1]](*sys.argv[2:])


if __name__ == "__main__":
    main()
