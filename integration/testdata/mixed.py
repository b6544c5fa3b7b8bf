#!/usr/bin/python3
"""Write a store whose array directories hold both .zarray and zarr.json,
as an array converted from v2 to v3 in place is left (zarr-python 3's
"zarr migrate v3", zarrs' to_v3; zarrs' test data holds such directories).

usage: /usr/bin/python3 mixed.py OUT

zarr-python 2.13 writes OUT/mixed.zarr (v2, consolidated); then every array
directory gets a zarr.json describing the same chunks the way those
converters write it: the v2 chunk key encoding with the array's separator,
a transpose first for order F, the filters as numcodecs.* codecs, the bytes
codec in the dtype's byte order, the compressor as its v3 codec,
dimension_names from _ARRAY_DIMENSIONS. The root gets a v3 group zarr.json
beside its .zgroup. The arrays under disagree/ get a zarr.json that does not
describe their chunks (another fill value, shape or chunk key encoding).

Writes OUT/mixed.json, {"arrays": {path: {"object": false, "lossy": false}}}
for check.py, and prints {"agree": [paths], "disagree": [paths]}.
"""
import json
import os
import sys

import numpy as np
import numcodecs
import zarr
from numcodecs import LZ4, Blosc, Delta, GZip, Zlib, Zstd

assert zarr.__version__.startswith("2.13"), zarr.__version__
assert numcodecs.__version__.startswith("0.11"), numcodecs.__version__

rng = np.random.default_rng(7)
SHAPE, CHUNKS = (23, 17), (10, 6)  # partial edge chunks

# (path, dtype, options, region written: None for all)
ARRAYS = [
    ("blosc_lz4", "<f4", dict(compressor=Blosc("lz4", 5, Blosc.SHUFFLE)), None),
    ("blosc_zstd_bitshuffle", "<i8", dict(compressor=Blosc("zstd", 3, Blosc.BITSHUFFLE)), None),
    ("zstd_missing", "<i2", dict(compressor=Zstd(3), fill_value=7), (slice(0, 10), slice(0, 12))),
    ("zlib_f_order", "<f8", dict(compressor=Zlib(1), order="F"), None),
    ("gzip_slash", "<u2", dict(compressor=GZip(5), dimension_separator="/"), None),
    ("lz4_delta", "<i4", dict(compressor=LZ4(), filters=[Delta("<i4")]), None),
    ("zstd_big_endian", ">i4", dict(compressor=Zstd(1)), None),
    ("nan_fill", "<f4", dict(compressor=Blosc("zstd", 5, Blosc.SHUFFLE), fill_value=np.nan), (slice(10, 23), slice(None))),
    ("group/nested_u1", "|u1", dict(compressor=Zstd(1)), None),
    ("disagree/fill", "<i4", dict(compressor=Zlib(1)), None),
    ("disagree/shape", "<i4", dict(compressor=Zlib(1)), None),
    ("disagree/default_keys", "<i4", dict(compressor=Zlib(1)), None),
]

V3_TYPES = {"b1": "bool", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64", "u1": "uint8",
            "u2": "uint16", "u4": "uint32", "u8": "uint64", "f4": "float32", "f8": "float64"}


def values(dtype):
    dt = np.dtype(dtype)
    n = int(np.prod(SHAPE))
    if dt.kind == "f":
        v = np.linspace(-50, 50, n) + rng.normal(0, 1, n).round(2)
    else:
        v = (np.arange(n) * 7919 % 251) + rng.integers(0, 4, n)
    return v.astype(dt).reshape(SHAPE)


def v3_codecs(z):
    """The v3 codec list that stores chunks as the .zarray z does."""
    dt = np.dtype(z["dtype"])
    codecs = []
    if z["order"] == "F" and len(z["shape"]) > 1:
        codecs.append({"name": "transpose", "configuration": {"order": list(range(len(z["shape"])))[::-1]}})
    for f in z["filters"] or []:
        codecs.append({"name": "numcodecs." + f["id"], "configuration": {k: v for k, v in f.items() if k != "id"}})
    if dt.itemsize > 1:
        codecs.append({"name": "bytes", "configuration": {"endian": "big" if dt.byteorder == ">" else "little"}})
    else:
        codecs.append({"name": "bytes"})
    c = z["compressor"]
    if c is None:
        return codecs
    conf = {k: v for k, v in c.items() if k != "id"}
    if c["id"] == "blosc":
        codecs.append({"name": "blosc", "configuration": {
            "cname": c["cname"], "clevel": c["clevel"], "shuffle": ["noshuffle", "shuffle", "bitshuffle"][c["shuffle"]],
            "typesize": dt.itemsize, "blocksize": c["blocksize"]}})
    elif c["id"] == "zstd":
        codecs.append({"name": "zstd", "configuration": {"level": c["level"], "checksum": False}})
    elif c["id"] == "gzip":
        codecs.append({"name": "gzip", "configuration": {"level": c["level"]}})
    else:
        codecs.append({"name": "numcodecs." + c["id"], "configuration": conf})
    return codecs


def zarr_json(z, attrs):
    """The zarr.json a v2-to-v3 converter writes beside the .zarray z."""
    attrs = dict(attrs)
    doc = {
        "zarr_format": 3, "node_type": "array", "shape": z["shape"],
        "data_type": V3_TYPES[np.dtype(z["dtype"]).str[1:]],
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": z["chunks"]}},
        "chunk_key_encoding": {"name": "v2", "configuration": {"separator": z.get("dimension_separator", ".")}},
        "fill_value": z["fill_value"], "codecs": v3_codecs(z), "attributes": attrs,
    }
    if "_ARRAY_DIMENSIONS" in attrs:
        doc["dimension_names"] = attrs.pop("_ARRAY_DIMENSIONS")
    return doc


def main(out):
    root = os.path.join(out, "mixed.zarr")
    g = zarr.open_group(root, mode="w")
    g.attrs["converted"] = "in place"
    for path, dtype, opts, region in ARRAYS:
        a = g.create_dataset(path, shape=SHAPE, chunks=CHUNKS, dtype=dtype, **{"fill_value": 0, **opts})
        v = values(dtype)
        sel = region if region is not None else Ellipsis
        a[sel] = v[sel]
        a.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    zarr.consolidate_metadata(root)
    agree, disagree = [], []
    for path, *_ in ARRAYS:
        d = os.path.join(root, path)
        z = json.load(open(os.path.join(d, ".zarray")))
        doc = zarr_json(z, json.load(open(os.path.join(d, ".zattrs"))))
        if path == "disagree/fill":
            doc["fill_value"] = 5
        elif path == "disagree/shape":
            doc["shape"] = [SHAPE[0] + 1, SHAPE[1]]
        elif path == "disagree/default_keys":
            doc["chunk_key_encoding"] = {"name": "default", "configuration": {"separator": "/"}}
        (disagree if path.startswith("disagree/") else agree).append(path)
        with open(os.path.join(d, "zarr.json"), "w") as f:
            json.dump(doc, f, indent=2)
    for d in ["", "group", "disagree"]:
        attrs = os.path.join(root, d, ".zattrs")
        attrs = json.load(open(attrs)) if os.path.exists(attrs) else {}
        with open(os.path.join(root, d, "zarr.json"), "w") as f:
            json.dump({"zarr_format": 3, "node_type": "group", "attributes": attrs}, f)
    with open(os.path.join(out, "mixed.json"), "w") as f:
        json.dump({"arrays": {p: {"object": False, "lossy": False} for p, *_ in ARRAYS}}, f)
    print(json.dumps({"agree": agree, "disagree": disagree}))


if __name__ == "__main__":
    main(sys.argv[1])
