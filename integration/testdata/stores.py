"""Write the stores of the reliability tests (faults, load, crash, soak).

usage: stores.py OUT SIZE     (SIZE: small, load or crash)

OUT/src holds the compressed stores a mount serves:
  v2.zarr  zarr-python 2.13, consolidated: zstd (float32, 256 KiB chunks,
           two chunks never written), blosc (int16, lz4 + shuffle, 128 KiB),
           raw (uint8, stored uncompressed, 64 KiB), small (float64 zlib,
           4 KiB chunks: the small-chunk mix)
  v3.zarr  Zarr v3, written here by the spec (zarr-formats.md): sharded
           arrays with the index at the end ([bytes, crc32c]), inner chunks
           raw (sraw) or zstd (szstd), one inner chunk all fill (absent)
OUT/want holds what the mount must serve for them, written uncompressed by
zarr-python 2.13 (so each chunk file is the decoded chunk): want/v2.zarr as
is, want/v3.zarr as --as-v2 presents v3.zarr (chunks = inner chunks,
dimension_separator "/"). Readers compare the mount with want/.

It prints a JSON line: the arrays, the chunk files and the decoded bytes.
"""
import json
import os
import struct
import sys

import numcodecs
import numpy as np
import zarr

out, size = sys.argv[1], sys.argv[2]
n = {"small": 2, "load": 24, "crash": 48}[size]  # the first dimension
rng = np.random.default_rng(15)


def field(shape, dtype):
    """A smooth field plus noise: compressible, not trivially."""
    idx = np.indices(shape).sum(axis=0).astype("f8")
    v = np.sin(idx * 0.05) * 1000 + rng.standard_normal(shape) * 10
    return v.astype(dtype)


def v2(name, data, chunks, compressor, skip=()):
    """An array in src/v2.zarr and its uncompressed twin in want/v2.zarr;
    the chunks at the indices in skip (along axis 0) are never written."""
    for root, comp in (("src", compressor), ("want", None)):
        z = zarr.open(os.path.join(out, root, "v2.zarr", name), mode="w", shape=data.shape, chunks=chunks,
                      dtype=data.dtype, compressor=comp, fill_value=0, write_empty_chunks=False)
        for i in range(0, data.shape[0], chunks[0]):
            if i // chunks[0] not in skip:
                z[i:i + chunks[0]] = data[i:i + chunks[0]]


v2("zstd", field((n * 2, 256, 256), "f4"), (1, 256, 256), numcodecs.Zstd(level=1), skip=(1, 2))
v2("blosc", field((n * 2, 256, 256), "i2"), (1, 256, 256), numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE))
v2("raw", field((n * 4, 256, 256), "u1"), (1, 256, 256), None)
v2("small", field((n * 4, 64, 16), "f8"), (8, 8, 8), numcodecs.Zlib(level=1))
for root in ("src", "want"):
    zarr.open_group(os.path.join(out, root, "v2.zarr"), mode="a")
    zarr.consolidate_metadata(os.path.join(out, root, "v2.zarr"))

# crc32c (Castagnoli, reflected), for the shard index; numcodecs 0.11 has none.
CRC = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    CRC.append(c)


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = CRC[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def write_json(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)


def v3_sharded(name, data, shard, inner, zstd):
    """A sharded v3 array in src/v3.zarr and its --as-v2 twin in want/v3.zarr.
    Inner chunk (0, 0, ...) of shard 0 is all fill: its index entry is empty."""
    data = data.copy()
    data[tuple(slice(0, s) for s in inner)] = 0
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if zstd:
        codecs.append({"name": "zstd", "configuration": {"level": 1, "checksum": False}})
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": list(data.shape), "data_type": str(data.dtype),
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shard)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "attributes": {"written_by": "stores.py"},
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(inner), "codecs": codecs,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end"}}],
    }
    root = os.path.join(out, "src", "v3.zarr", name)
    write_json(os.path.join(root, "zarr.json"), meta)
    per = [s // i for s, i in zip(shard, inner)]
    enc = numcodecs.Zstd(level=1)
    for sc in np.ndindex(*[-(-d // s) for d, s in zip(data.shape, shard)]):
        body, index = b"", []
        for ic in np.ndindex(*per):
            lo = [s * a + i * b for s, a, i, b in zip(sc, shard, ic, inner)]
            block = np.zeros(inner, data.dtype)
            part = data[tuple(slice(l, l + i) for l, i in zip(lo, inner))]
            block[tuple(slice(0, p) for p in part.shape)] = part
            if not block.any():
                index.append((2**64 - 1, 2**64 - 1))  # empty: the fill value
                continue
            b = block.astype("<" + block.dtype.str[1:]).tobytes()
            if zstd:
                b = enc.encode(b)
            index.append((len(body), len(b)))
            body += b
        ix = b"".join(struct.pack("<QQ", o, l) for o, l in index)
        p = os.path.join(root, "c", *map(str, sc))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(body + ix + struct.pack("<I", crc32c(ix)))
    z = zarr.open(os.path.join(out, "want", "v3.zarr", name), mode="w", shape=data.shape, chunks=inner,
                  dtype=data.dtype, compressor=None, fill_value=0, write_empty_chunks=False,
                  dimension_separator="/")
    z[...] = data


write_json(os.path.join(out, "src", "v3.zarr", "zarr.json"),
           {"zarr_format": 3, "node_type": "group", "attributes": {}})
v3_sharded("sraw", field((n * 4, 128, 128), "u2"), (4, 128, 128), (1, 64, 64), False)
v3_sharded("szstd", field((n * 4, 128, 128), "f4"), (4, 128, 128), (1, 64, 128), True)

files, total = 0, 0
for dirpath, _, names in os.walk(os.path.join(out, "want")):
    for nm in names:
        if not nm.startswith("."):
            files += 1
            total += os.path.getsize(os.path.join(dirpath, nm))
print(json.dumps({"arrays": ["v2.zarr/zstd", "v2.zarr/blosc", "v2.zarr/raw", "v2.zarr/small", "v3.zarr/sraw", "v3.zarr/szstd"],
                  "files": files, "bytes": total}))
