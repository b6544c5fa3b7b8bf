#!/usr/bin/python3
"""Write Zarr v2 fixture stores for codec/generated_test.go.

Usage: /usr/bin/python3 codec/testdata/generate.py OUTDIR

Writes, with zarr-python 2.13 and numcodecs 0.11 (Debian's python3-zarr and
python3-numcodecs):

  OUTDIR/store/<array>/...      one DirectoryStore group; every array uses a
                                different compressor / filter / dtype / order /
                                chunking combination
  OUTDIR/expected/<array>/<key> numcodecs' own decode of every chunk file:
                                compressor.decode, then the filters' decode in
                                reverse order, as flat raw bytes in memory order
  OUTDIR/manifest.json          {array: "ok" | "notraw" | "config"}: what zfuse's
                                codec.V2 must do with the array's .zarray
                                ("notraw": ErrNotRaw, "config": ErrConfig)

The data is seeded, so every run writes the same values (gzip headers carry a
time stamp, so the stored bytes may differ). Total size is about 40 MB.
"""

import json
import lzma
import os
import sys

import numpy as np
import numcodecs
import zarr
from numcodecs import (
    LZ4, LZMA, AsType, Adler32, BitRound, Blosc, BZ2, Categorize, CRC32, Delta,
    FixedScaleOffset, GZip, PackBits, Quantize, Shuffle, VLenUTF8, Zlib, Zstd,
)
from numcodecs.compat import ensure_ndarray

assert zarr.__version__.startswith("2.13"), zarr.__version__
assert numcodecs.__version__.startswith("0.11"), numcodecs.__version__

rng = np.random.default_rng(20261130)
WORDS = ["", "a", "bb", "ccc", "dddd", "zarr", "fuse", "chunk", "héllo", "日本"]


def values(dtype, shape):
    """Seeded values that compress like real data, for any dtype."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    k = dt.kind
    if k == "b":
        a = rng.random(n) < 0.3
    elif k in "iu":
        a = np.cumsum(rng.integers(-3, 4, n)).astype(dt)  # wraps for narrow types
    elif k == "f":
        a = (np.cumsum(rng.normal(size=n)) * 10).astype(dt)
        a[rng.integers(0, n, max(1, n // 500))] = np.nan
    elif k == "c":
        a = (np.cumsum(rng.normal(size=n)) + 1j * np.cumsum(rng.normal(size=n))).astype(dt)
    elif k in "Mm":
        unit = np.datetime_data(dt)[0]
        base = np.int64(1_600_000_000) * (10**9 if unit == "ns" else 1)
        a = (base + np.cumsum(rng.integers(0, 1000, n))).view("M8[%s]" % unit if k == "M" else "m8[%s]" % unit)
        a = a.astype(dt)
        a[rng.integers(0, n, max(1, n // 100))] = np.datetime64("NaT") if k == "M" else np.timedelta64("NaT")
    elif k in "SU":
        words = [w for w in WORDS if k == "U" or w.isascii()]
        a = np.array(words, dtype=dt)[rng.integers(0, len(words), n)]
    else:
        raise ValueError(dtype)
    return a.reshape(shape)


ARRAYS = []


def dtname(dt):
    """A typestr as a file name: "<M8[ns]" -> "le-M8-ns"."""
    return dt.replace("|", "").replace("<", "le-").replace(">", "be-").replace("[", "-").strip("]")


def add(name, dtype, shape, chunks, compressor=None, filters=None, order="C", expect="ok",
        data=None, fill_value=0, **kw):
    ARRAYS.append(dict(name=name, dtype=dtype, shape=shape, chunks=chunks, compressor=compressor,
                       filters=filters, order=order, expect=expect, data=data,
                       fill_value=fill_value, kw=kw))


def plan():
    # Blosc: every internal codec x every shuffle, on dtypes of several sizes.
    cnames = numcodecs.blosc.list_compressors()  # Debian's c-blosc has snappy
    dtypes = ["<i2", "<f4", "<f8", "|u1", "<i8", "<c16", ">i4", "|S7"]
    for ci, cname in enumerate(cnames):
        for si, shuffle in enumerate((-1, 0, 1, 2)):
            dt = dtypes[(ci + si) % len(dtypes)]
            add("blosc-%s-shuffle%d-%s" % (cname, shuffle, dtname(dt)), dt, (30011,), (7000,),
                Blosc(cname=cname, clevel=5, shuffle=shuffle), order="CF"[(ci + si) % 2])
    add("blosc-lz4-blocksize256", "<f8", (5000,), (1200,), Blosc("lz4", 5, 1, blocksize=256))
    add("blosc-zstd-blocksize4096-u4", "<u4", (9000,), (4096,), Blosc("zstd", 3, 2, blocksize=4096))
    add("blosc-clevel0", "<i4", (1000,), (300,), Blosc("lz4", 0, 1))
    add("blosc-typesize32-U8", "<U8", (3000,), (1000,), Blosc("zstd", 5, 1))
    add("blosc-typesize20-S20", "|S20", (3000,), (1000,), Blosc("blosclz", 5, 2))
    add("blosc-2d-F", "<f4", (300, 211), (128, 64), Blosc("lz4", 5, 1), order="F")
    add("blosc-3d-edges", "<i2", (33, 17, 9), (10, 8, 4), Blosc("zstd", 1, 2))
    add("blosc-1MiB-chunks", "<f8", (300000,), (131072,), Blosc("lz4", 5, 1))
    add("blosc-zstd-1MiB-chunks-F", "<f4", (700, 800), (512, 512), Blosc("zstd", 3, 2), order="F")

    # The other compressors.
    add("lz4", "<f8", (20000,), (6000,), LZ4())
    add("lz4-accel10-i1", "|i1", (20000,), (6000,), LZ4(acceleration=10))
    add("zstd", "<i4", (20000,), (6000,), Zstd(level=1))
    add("zstd-22-F", "<f8", (90, 70), (40, 30), Zstd(level=22), order="F")
    add("zstd-1MiB-chunks", "<i4", (700000,), (262144,), Zstd(level=3))
    add("gzip", "<f4", (20000,), (6000,), GZip(level=1))
    add("gzip-0", "<u2", (20000,), (6000,), GZip(level=0))
    add("gzip-9-1MiB-chunks", "<f8", (200000,), (131072,), GZip(level=9))
    add("zlib", "<u8", (20000,), (6000,), Zlib(level=1))
    add("zlib-9", "<c8", (20000,), (6000,), Zlib(level=9))
    add("bz2-1", "<f8", (8000,), (3000,), BZ2(level=1))
    add("bz2-9", "|S5", (8000,), (3000,), BZ2(level=9))
    add("lzma-xz", "<f4", (8000,), (3000,), LZMA())
    add("lzma-xz-preset9e-sha256", "<i8", (8000,), (3000,),
        LZMA(preset=9 | lzma.PRESET_EXTREME, check=lzma.CHECK_SHA256))
    add("lzma-xz-crc32", "<u2", (8000,), (3000,), LZMA(check=lzma.CHECK_CRC32))
    add("lzma-xz-nocheck", "<u2", (8000,), (3000,), LZMA(check=lzma.CHECK_NONE))
    add("lzma-alone", "<f8", (8000,), (3000,), LZMA(format=lzma.FORMAT_ALONE, preset=1))
    add("lzma-raw-lzma2", "<i4", (8000,), (3000,),
        LZMA(format=lzma.FORMAT_RAW, filters=[dict(id=lzma.FILTER_LZMA2, preset=1)]))
    add("lzma-raw-lzma2-dict", "<i4", (8000,), (3000,),
        LZMA(format=lzma.FORMAT_RAW, filters=[dict(id=lzma.FILTER_LZMA2, dict_size=1 << 16)]))
    add("lzma-raw-lzma1", "<f8", (8000,), (3000,),
        LZMA(format=lzma.FORMAT_RAW, filters=[dict(id=lzma.FILTER_LZMA1, preset=6)]))
    add("lzma-raw-delta", "<i4", (2000,), (1000,),
        LZMA(format=lzma.FORMAT_RAW, filters=[dict(id=lzma.FILTER_DELTA, dist=4), dict(id=lzma.FILTER_LZMA2)]),
        expect="config")
    add("lzma-xz-x86", "<i4", (2000,), (1000,),
        LZMA(filters=[dict(id=lzma.FILTER_X86), dict(id=lzma.FILTER_LZMA2)]), expect="config")
    add("crc32-compressor", "<i4", (5000,), (1500,), CRC32())
    add("adler32-compressor", "<f8", (5000,), (1500,), Adler32())
    add("none", "<f8", (5000,), (1500,), None)
    add("zero-d", "<i4", (), (), Zlib(1), data=np.array(42, dtype="<i4"))

    # Filters (with and without a compressor).
    add("delta-i4-i2", "<i4", (20000,), (6000,), Zstd(1), [Delta(dtype="<i4", astype="<i2")])
    add("delta-u1", "|u1", (20000,), (6000,), None, [Delta(dtype="|u1")])
    add("delta-f8", "<f8", (20000,), (6000,), Zlib(1), [Delta(dtype="<f8")])
    add("delta-be-u2", ">u2", (20000,), (6000,), None, [Delta(dtype=">u2")])
    add("delta-bool", "|b1", (2000,), (700,), None, [Delta(dtype="|b1")])
    add("shuffle-8", "<f8", (20000,), (6000,), Zlib(1), [Shuffle(elementsize=8)])
    add("shuffle-2-F", "<i2", (120, 90), (50, 40), None, [Shuffle(elementsize=2)], order="F")
    add("fixedscaleoffset-u1", "<f8", (20000,), (6000,), Zlib(1),
        [FixedScaleOffset(offset=1000, scale=10, dtype="<f8", astype="|u1")],
        data=1000 + rng.random(20000) * 25)
    add("fixedscaleoffset-f4-i2", "<f4", (20000,), (6000,), None,
        [FixedScaleOffset(offset=-3, scale=100, dtype="<f4", astype="<i2")],
        data=(rng.random(20000) * 300 - 150).astype("<f4"))
    add("fixedscaleoffset-i8", "<f8", (20000,), (6000,), BZ2(1),
        [FixedScaleOffset(offset=0, scale=1e9, dtype="<f8", astype="<i8")],
        data=rng.normal(size=20000))
    add("quantize-f4", "<f8", (20000,), (6000,), Zstd(1), [Quantize(digits=3, dtype="<f8", astype="<f4")])
    add("quantize-f2", "<f4", (20000,), (6000,), None, [Quantize(digits=1, dtype="<f4", astype="<f2")],
        data=rng.normal(size=20000).astype("<f4"))
    add("bitround-f4", "<f4", (20000,), (6000,), Blosc("zstd", 5, 1), [BitRound(keepbits=7)])
    add("bitround-f8", "<f8", (20000,), (6000,), None, [BitRound(keepbits=20)])
    add("astype-f8-f4", "<f8", (20000,), (6000,), Zlib(1), [AsType(encode_dtype="<f4", decode_dtype="<f8")])
    add("astype-i8-i2", "<i8", (20000,), (6000,), None, [AsType(encode_dtype="<i2", decode_dtype="<i8")])
    add("packbits", "|b1", (20003,), (6001,), Zlib(1), [PackBits()])
    add("packbits-F", "|b1", (77, 55), (30, 20), None, [PackBits()], order="F")
    add("filter-chain", "<i4", (20000,), (6000,), Blosc("lz4", 5, 0),
        [Delta(dtype="<i4"), Shuffle(elementsize=4), CRC32()])
    add("adler32-filter", "<u4", (20000,), (6000,), Zstd(1), [Adler32()])
    add("crc32-filter-F", "<f8", (60, 70), (25, 30), GZip(1), [CRC32()], order="F")
    add("categorize-U", "<U4", (2000,), (700,), Zlib(1),
        [Categorize(labels=["a", "bb", "ccc"], dtype="<U4", astype="|u1")], expect="notraw",
        data=np.array(["a", "bb", "ccc", ""], dtype="<U4")[rng.integers(0, 4, 2000)], fill_value="")

    # Every plain dtype (compressed), including big-endian and times.
    for dt in ["|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8", "|b1",
               "<c8", "<c16", ">i2", ">i8", ">f4", ">c16", "<M8[ns]", "<M8[s]", "<m8[ms]", ">M8[D]",
               "|S1", "|S11", "<U1", "<U6", ">U3"]:
        name = "dtype-" + dtname(dt)
        fill = None if dt[1] in "MmSU" else 0
        add(name, dt, (5003,), (1000,), Zstd(1), fill_value=fill)
        add(name + "-F", dt, (41, 37), (16, 16), Blosc("lz4", 5, -1), order="F", fill_value=fill)

    add("nested-keys", "<i4", (50, 60), (20, 25), Zlib(1), dimension_separator="/")
    add("object-vlen-utf8", object, (100,), (40,), Zlib(1), expect="notraw",
        data=np.array(WORDS * 10, dtype=object), fill_value="", object_codec=VLenUTF8())


def write(root):
    store = zarr.DirectoryStore(os.path.join(root, "store"))
    group = zarr.group(store=store, overwrite=True)
    manifest = {}
    for a in ARRAYS:
        z = group.create_dataset(
            a["name"], shape=a["shape"], chunks=a["chunks"], dtype=a["dtype"],
            compressor=a["compressor"], filters=a["filters"], order=a["order"],
            fill_value=a["fill_value"], **a["kw"])
        data = a["data"]
        if data is None:
            data = values(a["dtype"], a["shape"])
        z[...] = data
        manifest[a["name"]] = a["expect"]
        if a["expect"] == "ok":
            expect(os.path.join(root, "store", a["name"]), os.path.join(root, "expected", a["name"]))
    with open(os.path.join(root, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)


def expect(src, dst):
    """numcodecs' decode of every chunk under src, written to the same key under dst."""
    with open(os.path.join(src, ".zarray")) as f:
        meta = json.load(f)
    comp = numcodecs.get_codec(meta["compressor"]) if meta["compressor"] else None
    filters = [numcodecs.get_codec(c) for c in meta["filters"] or []]
    for dirpath, _, files in os.walk(src):
        for fn in files:
            if fn.startswith("."):
                continue
            path = os.path.join(dirpath, fn)
            with open(path, "rb") as f:
                buf = f.read()
            if comp is not None:
                buf = comp.decode(buf)
            for c in reversed(filters):
                buf = c.decode(buf)
            out = os.path.join(dst, os.path.relpath(path, src))
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "wb") as f:
                f.write(ensure_ndarray(buf).tobytes(order="A"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    plan()
    write(sys.argv[1])
