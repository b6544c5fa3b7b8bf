#!/usr/bin/python3
"""Write the fixture stores for zfuse's integration tests.

usage: /usr/bin/python3 generate.py OUT

Pins zarr-python 2.13 and numcodecs 0.11 (Debian 12's python3-zarr and
python3-numcodecs). Writes:

  OUT/comp.zarr   arrays with every compressor and filter zfuse decodes,
                  in groups (some nested), F and C order, both dimension
                  separators, missing chunks, NaN fill; consolidated.
  OUT/raw.zarr    the same arrays written by zarr-python uncompressed
                  (compressor=None, filters=None), holding the values that
                  zarr-python reads from comp.zarr (for lossy filters: the
                  lossy decode). Its chunk files are what zfuse must serve.
  OUT/xr_consolidated.zarr, OUT/xr_plain.zarr
                  an xarray Dataset written compressed, with and without
                  consolidated metadata.
  OUT/manifest.json
                  {"arrays": {path: {"object": bool, "lossy": bool}}}

Before it returns it checks its own work: every stored chunk of comp.zarr,
decoded by numcodecs, equals the raw.zarr chunk file of the same key, so the
raw store is exactly the expected output, edge padding included.
"""
import json
import lzma
import os
import sys

import numpy as np
import numcodecs
import zarr
from numcodecs import (BZ2, LZ4, LZMA, Adler32, AsType, Blosc, CRC32, Delta,
                       FixedScaleOffset, GZip, PackBits, Quantize, Shuffle,
                       VLenUTF8, Zlib, Zstd)

assert zarr.__version__.startswith("2.13"), zarr.__version__
assert numcodecs.__version__.startswith("0.11"), numcodecs.__version__

rng = np.random.default_rng(42)
SHAPE, CHUNKS = (23, 17), (10, 6)  # 3x3 chunks, partial edge chunks


def data(dtype, shape=SHAPE):
    """Compressible but not trivial values of dtype."""
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        v = rng.random(n) < 0.3
    elif dt.kind in "iu":
        hi = min(np.iinfo(dt).max, 1000)
        v = (np.arange(n) % (hi + 1)) // 3 + rng.integers(0, 4, n)
        v = np.minimum(v, hi)
    elif dt.kind == "f":
        v = np.linspace(-50, 50, n) + rng.normal(0, 1, n).round(1)
    elif dt.kind == "c":
        v = np.linspace(0, 1, n) + 1j * rng.normal(0, 1, n)
    elif dt.kind == "M":
        v = np.datetime64("2020-01-01T00:00:00") + rng.integers(0, 10**6, n).astype("m8[s]")
    elif dt.kind == "S":
        v = np.array([b"ab", b"cde", b"", b"fghij"] * n)[:n]
    elif dt.kind == "U":
        v = np.array(["x", "yz", "\u00e9t\u00e9"] * n)[:n]
    elif dt.kind == "V":
        v = np.zeros(n, dtype=dt)
        for name in dt.names:
            v[name] = np.arange(n) % 100
    else:
        raise ValueError(dtype)
    return np.asarray(v).astype(dt).reshape(shape)


# (path, dtype, options, lossy, region written (None: all), shape, chunks, values)
ARRAYS = []


def add(path, dtype, lossy=False, region=None, shape=SHAPE, chunks=CHUNKS, values=None, **opts):
    ARRAYS.append((path, dtype, opts, lossy, region, shape, chunks, values))


# Blosc: every internal compressor, every shuffle.
for cname in ["lz4", "lz4hc", "zstd", "zlib", "blosclz"]:
    for shuffle, sname in [(0, "noshuffle"), (1, "shuffle"), (2, "bitshuffle")]:
        add(f"blosc/{cname}.{sname}", "<i4", compressor=Blosc(cname, 5, shuffle))
add("blosc/lz4.shuffle.f8", "<f8", compressor=Blosc("lz4", 9, Blosc.SHUFFLE))
add("blosc/zstd.bitshuffle.u1", "|u1", compressor=Blosc("zstd", 3, Blosc.BITSHUFFLE))
add("blosc/lz4.clevel0", "<i2", compressor=Blosc("lz4", 0, Blosc.SHUFFLE))
add("blosc/blosclz.big", "<f4", shape=(300, 200), chunks=(128, 128), compressor=Blosc("blosclz", 5, Blosc.SHUFFLE))

# numcodecs compressors.
add("compressors/lz4", "<f8", compressor=LZ4(1))
add("compressors/zstd", "<u2", compressor=Zstd(3))
add("compressors/gzip", "<i8", compressor=GZip(5))
add("compressors/zlib", ">i4", compressor=Zlib(1))
add("compressors/bz2", "<f4", compressor=BZ2(1))
add("compressors/lzma", "<i2", compressor=LZMA())
add("compressors/lzma.raw", "<i2", compressor=LZMA(format=lzma.FORMAT_RAW, filters=[dict(id=lzma.FILTER_LZMA2, preset=1)]))

# Filters and checksums (decoded in reverse list order after the compressor).
add("filters/delta", "<i4", filters=[Delta("<i4")], compressor=Zlib(1),
    values=np.cumsum(data("<i4")).astype("<i4").reshape(SHAPE))
add("filters/delta.astype", "<i8", filters=[Delta("<i8", astype="<i2")], compressor=Zstd(1))
add("filters/fixedscaleoffset", "<f8", lossy=True, fill_value=1000.0,
    filters=[FixedScaleOffset(offset=1000, scale=10, dtype="<f8", astype="<i2")], compressor=Zlib(1),
    values=1000 + rng.normal(0, 50, SHAPE))
add("filters/quantize", "<f8", lossy=True, filters=[Quantize(digits=2, dtype="<f8")], compressor=Zlib(1),
    values=rng.normal(0, 10, SHAPE))
add("filters/astype", "<f8", lossy=True, fill_value=0.5,
    filters=[AsType(encode_dtype="<f4", decode_dtype="<f8")], compressor=Zstd(1),
    values=rng.normal(0, 10, SHAPE))
add("filters/packbits", "|b1", fill_value=False, filters=[PackBits()], compressor=Zlib(1))
add("filters/shuffle", "<f8", filters=[Shuffle(elementsize=8)], compressor=Zlib(1))
add("filters/chain", "<i4", filters=[Delta("<i4"), Shuffle(elementsize=4)], compressor=Blosc("zstd", 3, Blosc.BITSHUFFLE))
add("checksums/crc32", "<i4", compressor=CRC32())
add("checksums/crc32.zlib", "<u2", filters=[CRC32()], compressor=Zlib(1))
add("checksums/adler32", "<i4", filters=[Adler32()], compressor=LZ4())

# Layouts: orders, separators, missing chunks, fill values, ranks.
add("layout/f_order", "<f8", order="F", compressor=Zlib(1))
add("layout/f_order.3d", "<i4", shape=(9, 8, 7), chunks=(4, 3, 5), order="F", compressor=Blosc("lz4", 5, 1))
add("layout/slash", "<i4", dimension_separator="/", compressor=Blosc("zstd", 3, 1))
add("layout/slash.3d.F", "<u2", shape=(9, 8, 7), chunks=(4, 3, 5), order="F", dimension_separator="/", compressor=LZ4())
add("layout/missing", "<i4", fill_value=7, region=(slice(0, 10), slice(0, 12)), compressor=Zlib(1))
add("layout/nan_fill", "<f4", fill_value=np.nan, region=(slice(10, 23), slice(None)), compressor=Blosc("lz4", 5, 1),
    values=np.where(rng.random(SHAPE) < 0.2, np.nan, data("<f4")).astype("<f4"))
add("layout/1d", "<i8", shape=(1000,), chunks=(64,), compressor=Blosc("lz4", 5, 1))
add("layout/scalar", "<f8", shape=(), chunks=(), compressor=Zlib(1))
add("deep/a/b/c/nested", "<i4", compressor=Zstd(1))

# Other dtypes.
add("dtypes/u1", "|u1", compressor=Blosc("lz4", 5, 1))
add("dtypes/f2", "<f2", compressor=LZ4())
add("dtypes/c8", "<c8", compressor=Zstd(1))
add("dtypes/M8", "<M8[s]", compressor=Zlib(1))
add("dtypes/S5", "|S5", compressor=Zlib(1))
add("dtypes/U3", "<U3", compressor=Blosc("zstd", 3, 1))
add("dtypes/structured", [("x", "<f4"), ("y", "<i2")], shape=(20, 12), chunks=(10, 6), compressor=Zlib(1))

# Object arrays cannot be presented raw: zfuse passes them through.
add("objects/vlen", object, object_codec=VLenUTF8(), compressor=Zlib(1),
    values=np.array(["a", "bb", "", "dddd"] * 100, dtype=object)[: SHAPE[0] * SHAPE[1]].reshape(SHAPE))


def write(out):
    comp = zarr.open_group(os.path.join(out, "comp.zarr"), mode="w")
    raw = zarr.open_group(os.path.join(out, "raw.zarr"), mode="w")
    comp.attrs["title"] = "zfuse fixtures"
    manifest = {}
    for path, dtype, opts, lossy, region, shape, chunks, values in ARRAYS:
        v = values if values is not None else data(dtype, shape)
        kw = dict(shape=shape, chunks=chunks, dtype=dtype)
        kw.setdefault("fill_value", 0)
        kw.update({k: opts[k] for k in opts if k in ("fill_value", "order", "dimension_separator")})
        c = comp.create_dataset(path, compressor=opts.get("compressor"), filters=opts.get("filters"),
                                object_codec=opts.get("object_codec"), **kw)
        sel = region if region is not None else Ellipsis
        c[sel] = v[sel] if shape else v
        c.attrs["description"] = f"{path} as written by zarr {zarr.__version__}"
        is_object = np.dtype(dtype) == object
        manifest[path] = {"object": is_object, "lossy": lossy}
        if is_object:
            continue
        r = raw.create_dataset(path, compressor=None, filters=None, **kw)
        r[sel] = c[sel]  # the values zarr-python reads: lossy decodes included
        r.attrs.update(c.attrs)
    zarr.consolidate_metadata(comp.store)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"arrays": manifest}, f, indent=1, sort_keys=True)
    return comp, raw, manifest


def check(comp, raw, manifest):
    """Every stored chunk, decoded by numcodecs, equals the raw chunk file."""
    n = 0
    for path, m in manifest.items():
        if m["object"]:
            continue
        c, r = comp[path], raw[path]
        keys = [k for k in c.store.keys() if k.startswith(path + "/") and "/." not in k[len(path):]]
        if len(keys) != len([k for k in r.store.keys() if k.startswith(path + "/") and "/." not in k[len(path):]]):
            raise SystemExit(f"generate.py: {path}: the stores hold different chunk keys")
        for k in keys:
            buf = c.store[k]
            if c.compressor is not None:
                buf = c.compressor.decode(buf)
            for f in reversed(c.filters or []):
                buf = f.decode(buf)
            if numcodecs.compat.ensure_ndarray(buf).tobytes() != bytes(r.store[k]):
                raise SystemExit(f"generate.py: {k}: numcodecs decode differs from the raw store")
            n += 1
    return n


def xarray_stores(out):
    import xarray as xr
    t = np.arange(10)
    ds = xr.Dataset(
        {
            "temp": (("time", "lat", "lon"), (20 + rng.normal(0, 5, (10, 11, 13))).astype("<f4")),
            "count": (("time",), np.arange(10, dtype="<i4")),
        },
        coords={"time": t, "lat": np.linspace(-60, 60, 11), "lon": np.linspace(0, 360, 13, endpoint=False)},
        attrs={"title": "zfuse xarray fixture"},
    )
    enc = {"temp": {"compressor": Blosc("zstd", 3, Blosc.SHUFFLE), "chunks": (3, 5, 7)},
           "count": {"compressor": Zlib(1), "chunks": (4,)}}
    ds.to_zarr(os.path.join(out, "xr_consolidated.zarr"), mode="w", consolidated=True, encoding=enc)
    ds.to_zarr(os.path.join(out, "xr_plain.zarr"), mode="w", consolidated=False, encoding=enc)


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    comp, raw, manifest = write(out)
    n = check(comp, raw, manifest)
    xarray_stores(out)
    print(f"generate.py: {len(manifest)} arrays, {n} chunks checked against numcodecs")


if __name__ == "__main__":
    main()
