#!/usr/bin/python3
"""Stores and checks for readers_test.go: readers that cannot decode
compressed Zarr themselves (netCDF-C, GDAL for some codecs and for Zarr v3)
and a PyTorch DataLoader read through a zfuse mount what zarr-python reads
from the original.

usage: /usr/bin/python3 readers.py COMMAND ARGS...

  write OUT               write the stores:
    OUT/nc.zarr           v2, consolidated, what netCDF-C 4.9.0 can read
                          uncompressed: every compressor and filter zfuse
                          decodes that numcodecs 0.11 writes, the netCDF-4
                          numeric types (little-endian, C order),
                          _ARRAY_DIMENSIONS, partial edge chunks, missing
                          chunks read as a fill value (7, NaN), nested groups
    OUT/nc_raw.zarr       the same values written uncompressed
    OUT/more.zarr         v2 arrays netCDF-C misreads or crashes on even
                          uncompressed (F order, big-endian, bool): for
                          GDAL and PyTorch
    OUT/sharded.zarr      Zarr v3 with sharded arrays, written here (zarrita
                          cannot write shards): inner chunks zstd, blosc,
                          gzip; index at the end or the start, with and
                          without crc32c; a missing shard, an empty inner
                          chunk, partial edge shards; and an unsharded array
    OUT/sharded.json      its values, {path: {"shape", "data"}} (C order)
  ncdump ORIG RAW MOUNT   netCDF-C's ncdump: through the mount it prints
                          what it prints for RAW; on ORIG, each compressed
                          variable exits 0 with other values
  netcdf4 ORIG MOUNT      netCDF4-python through the mount: every variable
                          equals zarr-python on ORIG, with its dimensions
                          named by _ARRAY_DIMENSIONS
  gdal ORIG MOUNT         GDAL's multidimensional API through the mount
                          equals zarr-python on ORIG for every array, and
                          gdal_translate reads ZARR:"MOUNT":/array:index
  gdal-v3 ORIG WANT MOUNT GDAL through an --as-v2 mount of sharded.zarr
                          (ORIG) reads the values WANT lists
  torch ORIG MOUNT        a shuffled torch DataLoader with worker processes,
                          each opening the arrays with zarr-python through
                          the mount, yields every row of every array (in
                          blocks of 5) as zarr-python reads it from ORIG

Prints one JSON object per check, {"name": ..., "err": ...} (err empty when
it passed), and {"name": ..., "log": ...} for what is only worth knowing
(what the readers make of the compressed originals themselves).
"""
import json
import lzma
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import numcodecs
import zarr
from numcodecs import (BZ2, LZ4, LZMA, Adler32, AsType, BitRound, Blosc, CRC32, Delta,
                       FixedScaleOffset, GZip, PackBits, Quantize, Shuffle, Zlib, Zstd)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check import checked  # noqa: E402

assert zarr.__version__.startswith("2.13"), zarr.__version__
assert numcodecs.__version__.startswith("0.11"), numcodecs.__version__

rng = np.random.default_rng(11)
SHAPE, CHUNKS, DIMS = (23, 17), (10, 6), ["y", "x"]  # 3x3 chunks, partial edge chunks
NC_TYPES = ["<i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f4", "<f8"]


def note(name, msg):
    """Print what is worth knowing but checks nothing."""
    print(json.dumps({"name": name, "log": msg}), flush=True)


def values(dtype, shape=SHAPE):
    """Varied values of dtype, compressible but not trivially."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        v = rng.random(n) < 0.3
    elif dt.kind in "iu":
        hi = min(np.iinfo(dt).max, 1000)
        lo = max(np.iinfo(dt).min, -1000)
        v = np.clip((np.arange(n) * 37) % (hi - lo + 1) + lo + rng.integers(0, 3, n), lo, hi)
    else:
        v = np.linspace(-50, 50, n) + rng.normal(0, 1, n).round(2)
    return np.asarray(v).astype(dt).reshape(shape)


# (path, dtype, options, region written (None: all), shape, chunks, dims, values (None: values(dtype)))
NC, MORE = [], []


def add(arrays, path, dtype, region=None, shape=SHAPE, chunks=CHUNKS, dims=DIMS, v=None, **opts):
    arrays.append((path, dtype, opts, region, shape, chunks, dims, v))


# Blosc: every internal compressor with every shuffle, over the netCDF types.
i = 0
for cname in ["lz4", "lz4hc", "zstd", "zlib", "blosclz"]:
    for shuffle, sname in [(0, "noshuffle"), (1, "shuffle"), (2, "bitshuffle")]:
        add(NC, f"blosc/{cname}_{sname}", NC_TYPES[i % len(NC_TYPES)], compressor=Blosc(cname, 5, shuffle))
        i += 1
# numcodecs compressors.
add(NC, "compressors/lz4", "<f8", compressor=LZ4(1))
add(NC, "compressors/zstd", "<u2", compressor=Zstd(3))
add(NC, "compressors/gzip", "<i8", compressor=GZip(5))
add(NC, "compressors/zlib", "<i4", compressor=Zlib(1))
add(NC, "compressors/bz2", "<f4", compressor=BZ2(1))
add(NC, "compressors/lzma", "<i2", compressor=LZMA())
add(NC, "compressors/lzma_raw", "<u4", compressor=LZMA(format=lzma.FORMAT_RAW, filters=[dict(id=lzma.FILTER_LZMA2, preset=1)]))
# Filters and checksums.
add(NC, "filters/delta", "<i4", filters=[Delta("<i4")], compressor=Zlib(1))
add(NC, "filters/delta_astype", "<i8", filters=[Delta("<i8", astype="<i2")], compressor=Zstd(1))
add(NC, "filters/fixedscaleoffset", "<f8", fill_value=1000.0, compressor=Zlib(1),
    filters=[FixedScaleOffset(offset=1000, scale=10, dtype="<f8", astype="<i2")], v=1000 + rng.normal(0, 50, SHAPE))
add(NC, "filters/quantize", "<f8", filters=[Quantize(digits=2, dtype="<f8")], compressor=Zlib(1), v=rng.normal(0, 10, SHAPE))
add(NC, "filters/bitround", "<f4", filters=[BitRound(keepbits=7)], compressor=Zstd(3))
add(NC, "filters/astype", "<f8", filters=[AsType(encode_dtype="<f4", decode_dtype="<f8")], compressor=Zstd(1))
add(NC, "filters/shuffle", "<f8", filters=[Shuffle(elementsize=8)], compressor=Zlib(1))
add(NC, "filters/chain", "<i4", filters=[Delta("<i4"), Shuffle(elementsize=4)], compressor=Blosc("zstd", 3, Blosc.BITSHUFFLE))
add(NC, "filters/crc32", "<i4", compressor=CRC32())
add(NC, "filters/crc32_zlib", "<u2", filters=[CRC32()], compressor=Zlib(1))
add(NC, "filters/adler32", "<i4", filters=[Adler32()], compressor=LZ4())
# Layouts: missing chunks and fill values, ranks, the other separator, depth.
add(NC, "layout/missing", "<i4", fill_value=7, region=(slice(0, 10), slice(0, 12)), compressor=Zlib(1))
add(NC, "layout/nan_fill", "<f4", fill_value=np.nan, region=(slice(10, 23), slice(None)), compressor=Blosc("lz4", 5, 1))
add(NC, "layout/series", "<i8", shape=(1000,), chunks=(64,), dims=["t"], compressor=Blosc("lz4", 5, 1))
add(NC, "layout/cube", "<f4", shape=(9, 8, 7), chunks=(4, 3, 5), dims=["z", "lat", "lon"], compressor=Zstd(3))
add(NC, "layout/slash", "<i2", dimension_separator="/", compressor=Blosc("zstd", 3, 1))
add(NC, "layout/deep/er/nested", "<u1", compressor=GZip(1))

# What netCDF-C 4.9.0 cannot read even uncompressed: F order (it ignores
# "order"), big-endian (it does not swap), bool (ncdump crashes).
add(MORE, "f_order", "<f8", order="F", compressor=Zlib(1))
add(MORE, "f_order_cube", "<i4", shape=(9, 8, 7), chunks=(4, 3, 5), dims=["z", "lat", "lon"], order="F", compressor=Blosc("lz4", 5, 1))
add(MORE, "big_endian_f8", ">f8", compressor=Zstd(3))
add(MORE, "big_endian_i4", ">i4", compressor=Blosc("lz4", 5, 2))
add(MORE, "bool_packbits", "|b1", fill_value=False, filters=[PackBits()], compressor=Zlib(1))
add(MORE, "bool_blosc", "|b1", fill_value=False, compressor=Blosc("zstd", 5, 1))


def write_v2(root, arrays, raw_root=None):
    comp = zarr.open_group(root, mode="w")
    raw = zarr.open_group(raw_root, mode="w") if raw_root else None
    for path, dtype, opts, region, shape, chunks, dims, v in arrays:
        v = values(dtype, shape) if v is None else np.asarray(v).astype(dtype)
        kw = dict(shape=shape, chunks=chunks, dtype=dtype, fill_value=opts.pop("fill_value", 0))
        kw.update({k: opts.pop(k) for k in ("order", "dimension_separator") if k in opts})
        a = comp.create_dataset(path, **kw, **opts)
        sel = region if region is not None else Ellipsis
        a[sel] = v[sel]
        a.attrs["_ARRAY_DIMENSIONS"] = dims
        a.attrs["long_name"] = path
        if raw is not None:
            r = raw.create_dataset(path, compressor=None, filters=None, **kw)
            r[sel] = a[sel]  # what zarr-python reads: lossy filters' decode included
            r.attrs.update(a.attrs)
    zarr.consolidate_metadata(root)
    if raw_root:
        zarr.consolidate_metadata(raw_root)


# Zarr v3, sharded, written by hand: the v3 spec's sharding_indexed codec.

def _crc32c_table():
    t = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


CRC32C = _crc32c_table()


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = CRC32C[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


V3_TYPES = {"i1": "int8", "u1": "uint8", "i2": "int16", "u2": "uint16", "i4": "int32", "u4": "uint32",
            "i8": "int64", "u8": "uint64", "f4": "float32", "f8": "float64"}
V3_NUMPY = {v: k for k, v in V3_TYPES.items()}

# (path, dtype, shape, shard shape, inner chunk shape, inner codec, index at, crc32c in index, fill, dims, shards left out)
SHARDED = [
    ("sharded_zstd_f4", "<f4", (23, 17), (10, 8), (5, 4), "zstd", "end", True, -1.5, ["y", "x"], [(2, 1)]),
    ("sharded_blosc_i2", "<i2", (12, 12), (6, 6), (3, 3), "blosc", "end", True, 0, ["y", "x"], []),
    # zarrita 0.7.5 reads the index from the end only: not checked with it
    ("sharded_zstd_i4_index_start", "<i4", (12, 10), (6, 10), (3, 5), "zstd", "start", True, 0, ["y", "x"], [(1, 0)]),
    ("group/sharded_gzip_u1", "|u1", (9, 8, 7), (4, 4, 7), (2, 2, 7), "gzip", "end", False, 3, ["z", "lat", "lon"], []),
    ("sharded_big_f8", ">f8", (10,), (8,), (4,), "zstd", "end", True, 0, ["t"], []),
    ("plain_zstd_i4", "<i4", (7, 5), (3, 2), None, "zstd", None, False, 9, ["y", "x"], []),
]


def v3_inner(kind, dt):
    endian = {"name": "bytes"} if dt.itemsize == 1 else \
        {"name": "bytes", "configuration": {"endian": "big" if dt.byteorder == ">" else "little"}}
    if kind == "zstd":
        return [endian, {"name": "zstd", "configuration": {"level": 3, "checksum": False}}], Zstd(3)
    if kind == "blosc":
        return [endian, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle",
                                                             "typesize": dt.itemsize, "blocksize": 0}}], Blosc("lz4", 5, 1)
    return [endian, {"name": "gzip", "configuration": {"level": 5}}], GZip(5)


def write_sharded(root):
    os.makedirs(root)
    with open(os.path.join(root, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {"written_by": "readers.py"}}, f)
    want = {}
    for path, dtype, shape, outer, inner, kind, at, crc, fill, dims, absent in SHARDED:
        dt = np.dtype(dtype)
        v = values(dtype, shape)
        d = os.path.join(root, path)
        os.makedirs(d, exist_ok=True)
        if os.path.dirname(path):
            with open(os.path.join(root, os.path.dirname(path), "zarr.json"), "w") as f:
                json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
        codecs, enc = v3_inner(kind, dt)
        if inner is not None:
            index = [{"name": "bytes", "configuration": {"endian": "little"}}] + ([{"name": "crc32c"}] if crc else [])
            codecs = [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": list(inner), "codecs": codecs, "index_codecs": index, "index_location": at}}]
        meta = {"zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": V3_TYPES[dt.str[1:]],
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(outer)}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": fill, "codecs": codecs, "dimension_names": dims, "attributes": {"long_name": path}}
        with open(os.path.join(d, "zarr.json"), "w") as f:
            json.dump(meta, f, indent=2)
        held = np.full(shape, fill, dtype=dt)  # what a reader must get
        grid = [-(-s // c) for s, c in zip(shape, outer)]
        empty_done = False
        for sc in np.ndindex(*grid):
            if sc in absent:
                continue
            lo = [c * o for c, o in zip(sc, outer)]
            block = np.full(outer, fill, dtype=dt)
            region = tuple(slice(l, min(l + o, s)) for l, o, s in zip(lo, outer, shape))
            block[tuple(slice(0, r.stop - r.start) for r in region)] = v[region]
            if inner is None:
                held[region] = v[region]
                data = enc.encode(np.ascontiguousarray(block))
            else:
                per = [o // c for o, c in zip(outer, inner)]
                chunks, entries = [], []
                off = 0
                for ic in np.ndindex(*per):
                    isel = tuple(slice(i * c, (i + 1) * c) for i, c in zip(ic, inner))
                    piece = np.ascontiguousarray(block[isel])
                    # the inner chunk at (0, 1) of the first shard is left
                    # empty (all fill), as writers skip empty chunks
                    if not empty_done and sum(sc) == 0 and ic == tuple([0] * (len(ic) - 1) + [1]):
                        empty_done = True
                        entries.append((2**64 - 1, 2**64 - 1))
                        continue
                    b = bytes(enc.encode(piece))
                    chunks.append(b)
                    entries.append((off, len(b)))
                    off += len(b)
                    # inside the array: these values are read
                    gsel = tuple(slice(l + s.start, min(l + s.stop, n)) for l, s, n in zip(lo, isel, shape))
                    held[gsel] = v[gsel]
                idx = np.array(entries, dtype="<u8").tobytes()
                if crc:
                    idx += crc32c(idx).to_bytes(4, "little")
                body = b"".join(chunks)
                if at == "start":
                    shift = len(idx)
                    e = np.array([(o + shift, n) if o != 2**64 - 1 else (o, n) for o, n in entries], dtype="<u8").tobytes()
                    idx = e + (crc32c(e).to_bytes(4, "little") if crc else b"")
                    data = idx + body
                else:
                    data = body + idx
            key = os.path.join(d, "c", *map(str, sc))
            os.makedirs(os.path.dirname(key), exist_ok=True)
            with open(key, "wb") as f:
                f.write(bytes(data))
        want[path] = {"shape": list(shape), "data": held.astype("f8").ravel().tolist()}
    with open(os.path.join(os.path.dirname(root), "sharded.json"), "w") as f:
        json.dump(want, f)


def cmd_write(out):
    write_v2(os.path.join(out, "nc.zarr"), NC, os.path.join(out, "nc_raw.zarr"))
    write_v2(os.path.join(out, "more.zarr"), MORE)
    write_sharded(os.path.join(out, "sharded.zarr"))


def arrays(root):
    """The array paths of a v2 store, sorted."""
    out = []
    zarr.open_group(root, mode="r").visititems(lambda p, o: out.append(p) if isinstance(o, zarr.Array) else None)
    return sorted(out)


def same(want, got):
    """Describe how got differs from want in values; "" when equal (NaN equals NaN)."""
    want, got = np.asarray(want), np.asarray(got)
    if want.shape != got.shape:
        return f"shape {got.shape}, want {want.shape}"
    eq = (want == got) | ((want != want) & (got != got)) if want.dtype.kind in "fc" else want == got
    if not np.all(eq):
        i = np.unravel_index(np.argmin(eq), eq.shape) if eq.ndim else ()
        return f"values differ first at {i}: got {got[i]!r}, want {want[i]!r}"
    return ""


# netCDF-C

def nc_url(root):
    return "file://" + os.path.abspath(root) + "#mode=zarr,file"


def ncdump(root, *args):
    p = subprocess.run(["ncdump", "-p", "9,17", *args, nc_url(root)], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def cdl_data(text):
    """The data section of ncdump output: {variable path: values as text}."""
    out, groups, data, name, buf = {}, [], False, None, []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("group: ") and s.endswith("{"):
            groups.append(s[len("group: "):-1].strip())
            data = False
        elif s.startswith("} // group"):
            groups.pop()
            data = False
        elif s == "data:":
            data = True
        elif data and name is None and (m := re.match(r"^(\S+) =(?: (.*))?$", s)):
            name, buf = m.group(1), [m.group(2) or ""]
        elif name is not None:
            buf.append(s)
        if name is not None and s.endswith(";"):
            vals = " ".join(buf).rstrip(";").replace(",", " ").split()
            out["/".join(groups + [name])] = vals
            name = None
    return out


def cmd_ncdump(orig, raw, mount):
    rc, want, err = ncdump(raw)
    if rc != 0:
        raise SystemExit(f"ncdump on the uncompressed copy: exit {rc}: {err}")
    want_vars = cdl_data(want)
    if sorted(want_vars) != arrays(raw):
        raise SystemExit(f"ncdump on the uncompressed copy shows {sorted(want_vars)}, want {arrays(raw)}")

    def through_mount():
        rc, got, err = ncdump(mount)
        if rc != 0:
            return f"exit {rc}: {err}"
        g = cdl_data(got)
        for v in want_vars:
            if g.get(v) != want_vars[v]:
                return f"{v}: {(g.get(v) or [])[:8]}..., want {want_vars[v][:8]}..."
        # everything else too: dimensions, types, attributes (not the name line)
        if got.split("\n", 1)[1] != want.split("\n", 1)[1]:
            return "ncdump's output differs from the uncompressed copy's outside the data"
        return ""
    checked("ncdump/mount", through_mount)

    # The compressed original: netCDF-C has no Zarr codecs (Debian ships no
    # NCZarr filter plugins). Each variable on its own, so a crash is one
    # variable's.
    wrong, crashed = [], []
    for v in want_vars:
        rc, got, err = ncdump(orig, "-v", v)
        if rc != 0:
            crashed.append(f"{v} (exit {rc})")
        elif cdl_data(got).get(v) != want_vars[v]:
            wrong.append(v)

    def original():
        if crashed:
            return f"ncdump failed instead of reading wrong values: {crashed}"
        if len(wrong) != len(want_vars):
            return f"ncdump read {sorted(set(want_vars) - set(wrong))} right from the compressed store"
        return ""
    checked("ncdump/original-wrong-without-error", original)
    note("ncdump/original", f"{len(wrong)} of {len(want_vars)} variables read wrong with exit 0 from the compressed original")


def cmd_netcdf4(orig, mount):
    import netCDF4
    z = zarr.open_group(orig, mode="r")
    ds = netCDF4.Dataset(nc_url(mount))
    ds.set_auto_mask(False)
    for path in arrays(orig):
        def one(path=path):
            want = z[path]
            *gs, name = path.split("/")
            g = ds
            for n in gs:
                g = g.groups[n]
            var = g.variables[name]
            if list(var.dimensions) != want.attrs["_ARRAY_DIMENSIONS"]:
                return f"dimensions {var.dimensions}, want {want.attrs['_ARRAY_DIMENSIONS']}"
            got = var[...]
            if got.dtype != want.dtype:
                return f"dtype {got.dtype}, want {want.dtype}"
            return same(want[...], got)
        checked("netcdf4/" + path, one)
    ds.close()


# GDAL

def gdal_array(ds, path):
    *gs, name = path.split("/")
    g = ds.GetRootGroup()
    for n in gs:
        g = g.OpenGroup(n)
    return g.OpenMDArray(name)


def gdal_read(root, path):
    from osgeo import gdal
    gdal.UseExceptions()
    ds = gdal.OpenEx(root, gdal.OF_MULTIDIM_RASTER)
    md = gdal_array(ds, path)
    return md.ReadAsArray(), [d.GetName() for d in md.GetDimensions()]


# GDAL 3.6 has no bool or int8 data type: it reads bool as Byte and int8
# as Int16, with the same values.
GDAL_TYPES = {np.dtype("bool"): np.dtype("uint8"), np.dtype("int8"): np.dtype("int16")}


def gdal_same(want, got):
    want = np.asarray(want)
    dt = want.dtype.newbyteorder("=")
    if got.dtype != GDAL_TYPES.get(dt, dt):
        return f"dtype {got.dtype}, want {GDAL_TYPES.get(dt, dt)}"
    return same(want, got)


def cmd_gdal(orig, mount):
    for root in orig.split(","):
        name = os.path.basename(root)
        mnt = os.path.join(mount, name)
        z = zarr.open_group(root, mode="r")
        failed = []
        for path in arrays(root):
            def one(path=path):
                got, dims = gdal_read(mnt, path)
                if dims != z[path].attrs["_ARRAY_DIMENSIONS"]:
                    return f"dimensions {dims}, want {z[path].attrs['_ARRAY_DIMENSIONS']}"
                return gdal_same(z[path][...], got)
            checked(f"gdal/{name}/{path}", one)
            try:
                got, _ = gdal_read(root, path)
                if gdal_same(z[path][...], got):
                    failed.append(path + " (wrong values)")
            except Exception as e:
                failed.append(f"{path} ({e})")
        note(f"gdal/{name}/original", f"GDAL cannot read {len(failed)} of {len(arrays(root))} arrays of the compressed original itself: {failed}")

    # The classic raster API on a 3-D array: ZARR:"path":/array:index is
    # the 2-D slice at index along the first axis.
    def translate():
        path, i = "layout/cube", 2
        want = zarr.open_group(orig.split(",")[0], mode="r")[path][i]
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "slice.bin")
            src = f'ZARR:"{os.path.join(mount, "nc.zarr")}":/{path}:{i}'
            p = subprocess.run(["gdal_translate", "-q", "-of", "ENVI", src, out], capture_output=True, text=True)
            if p.returncode != 0:
                return f"gdal_translate {src}: exit {p.returncode}: {p.stderr}"
            got = np.fromfile(out, dtype=want.dtype.newbyteorder("=")).reshape(want.shape)
        return same(want, got)
    checked("gdal_translate/cube:2", translate)


def cmd_gdal_v3(orig, wantfile, mount):
    from osgeo import gdal
    gdal.UseExceptions()
    want = json.load(open(wantfile))
    for path, w in sorted(want.items()):
        def one(path=path, w=w):
            meta = json.load(open(os.path.join(orig, path, "zarr.json")))
            got, dims = gdal_read(mount, path)
            if dims != meta["dimension_names"]:
                return f"dimensions {dims}, want dimension_names {meta['dimension_names']}"
            dt = np.dtype(V3_NUMPY[meta["data_type"]])
            if got.dtype != GDAL_TYPES.get(dt, dt):
                return f"dtype {got.dtype}, want {GDAL_TYPES.get(dt, dt)}"
            return same(np.array(w["data"], dtype="f8").reshape(w["shape"]), got.astype("f8"))
        checked("gdal-v3/" + path, one)
    g = gdal.OpenEx(orig, gdal.OF_MULTIDIM_RASTER).GetRootGroup()
    note("gdal-v3/original", f"GDAL opens the v3 original with arrays {g.GetMDArrayNames()} and groups {g.GetGroupNames()}")


# PyTorch

def cmd_torch(orig, mount):
    import torch
    from torch.utils.data import DataLoader, Dataset, get_worker_info

    class Rows(Dataset):
        """Rows [lo, lo+ROWS) along the first axis of an array (not aligned
        with its chunks); each worker process opens the stores itself,
        with zarr-python, on its first item."""
        ROWS = 5

        def __init__(self, mount, items):
            self.mount, self.items, self.stores = mount, items, {}

        def __len__(self):
            return len(self.items)

        def __getitem__(self, k):
            store, path, lo = self.items[k]
            if store not in self.stores:
                self.stores[store] = zarr.open_consolidated(os.path.join(self.mount, store), mode="r")
            rows = self.stores[store][path][lo:lo + self.ROWS]
            rows = np.array(rows, dtype=rows.dtype.newbyteorder("="), order="C")  # torch wants native order
            try:
                rows = torch.from_numpy(rows)
            except TypeError:
                pass  # torch 1.13 has no uint16, uint32, uint64: those rows stay numpy
            return store + "/" + path, lo, rows, os.getpid(), get_worker_info().id

    items, want = [], {}
    for root in orig.split(","):
        name = os.path.basename(root)
        z = zarr.open_group(root, mode="r")
        for path in arrays(root):
            a = z[path]
            for lo in range(0, a.shape[0], Rows.ROWS):
                items.append((name, path, lo))
            want[name + "/" + path] = a[...]
    loader = DataLoader(Rows(mount, items), batch_size=4, shuffle=True, num_workers=2, collate_fn=list,
                        generator=torch.Generator().manual_seed(1))
    seen, pids, workers, order = {}, set(), set(), []
    for batch in loader:
        for path, lo, rows, pid, worker in batch:
            seen[(path, lo)] = rows.numpy() if isinstance(rows, torch.Tensor) else rows
            pids.add(pid)
            workers.add(worker)
            order.append((path, lo))

    def processes():
        if os.getpid() in pids or len(pids) < 2 or len(workers) < 2:
            return f"rows read by processes {pids} (workers {workers}), this one {os.getpid()}: want 2 or more workers"
        if order == [(s + "/" + p, lo) for s, p, lo in items]:
            return "the items came in dataset order: not shuffled"
        return ""
    checked("torch/workers", processes)
    for path, w in sorted(want.items()):
        def one(path=path, w=w):
            los = sorted(lo for (p, lo) in seen if p == path)
            if los != list(range(0, w.shape[0], Rows.ROWS)):
                return f"row blocks at {los[:10]}..., want every {Rows.ROWS} rows of {w.shape[0]}"
            got = np.concatenate([seen[(path, lo)] for lo in los])
            if got.dtype != w.dtype.newbyteorder("="):
                return f"dtype {got.dtype}, want {w.dtype}"
            return same(w, got)
        checked("torch/" + path, one)


def main():
    cmds = {"write": cmd_write, "ncdump": cmd_ncdump, "netcdf4": cmd_netcdf4, "gdal": cmd_gdal,
            "gdal-v3": cmd_gdal_v3, "torch": cmd_torch}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        raise SystemExit(__doc__)
    cmds[sys.argv[1]](*sys.argv[2:])


if __name__ == "__main__":
    main()
