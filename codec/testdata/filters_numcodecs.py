"""Cross-check cases for zfuse's numcodecs filters (codec/filters_test.go).

Usage: /usr/bin/python3 filters_numcodecs.py OUTDIR [SEED]

Writes OUTDIR/cases.json and one .enc/.dec file pair per case. Each case is
a numcodecs filter config, stored bytes (either numcodecs' own encoding of a
random array, or random stored elements full of edge values), and the bytes
numcodecs 0.11 decodes them to (or the error it raised). The Go test decodes
every .enc with codec.New(config) and wants the .dec bytes exactly.
Also writes np.result_type for every pair of the dtypes below.
"""
import json
import os
import random
import sys
import warnings

import numpy as np
import numcodecs

warnings.simplefilter("ignore")

out = sys.argv[1]
rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
nrng = np.random.default_rng(rng.randrange(2**32))

INTS = ["|i1", "|u1", "<i2", ">i2", "<u2", ">u2", "<i4", ">i4", "<u4", ">u4", "<i8", ">i8", "<u8", ">u8"]
FLOATS = ["<f2", ">f2", "<f4", ">f4", "<f8", ">f8"]
COMPLEX = ["<c8", ">c16"]
TIMES = ["<m8[s]", ">m8[s]", "<M8[ns]", "<m8[ms]"]
ALL = ["|b1"] + INTS + FLOATS + COMPLEX + TIMES

SPECIAL = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 0.7, 1.5, 2.5, -2.5, 255.5, 256.0,
           -129.5, 32767.5, 65504.0, 65519.0, 65520.0, 1e10, -1e10, 3e9, -3e9, 2.0**31 + 0.5,
           -2.0**31 - 1, 2.0**32 + 5, 2.0**63, -2.0**63, 2.0**64, 1e20, -1e20, 5e-8, 2.0**-25,
           1 + 2.0**-11 + 2.0**-40, 1 + 2.0**-11, 2.0**24 + 1, 2.0**53 + 1, 1e300]

cases = []


def sizes():
    return rng.choice([0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 100, 1000, 4099, 8195, 20001])


def stored(dt, n):
    """n elements of dtype dt, mixing raw bits, edge values and moderate values."""
    dt = np.dtype(dt)
    raw = nrng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).tobytes()
    a = np.frombuffer(raw, dt).copy()
    native = a.astype(dt.newbyteorder("="))
    if dt.kind == "b":
        pick = nrng.random(n)
        vals = nrng.integers(0, 2, n).astype(bool)
        native[pick < 0.8] = vals[pick < 0.8]  # the rest keep raw bytes (2, 255, ...)
        if n:
            raw_bytes = np.frombuffer(raw, np.uint8).copy()
            keep = pick >= 0.8
            nb = native.view(np.uint8)
            nb[keep] = raw_bytes[keep]
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        pick = nrng.random(n)
        small = nrng.integers(-50 if dt.kind == "i" else 0, 100, n)
        native[pick < 0.4] = small[pick < 0.4].astype(native.dtype)
        ext = np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1], dtype=native.dtype)
        m = (pick >= 0.4) & (pick < 0.6)
        native[m] = nrng.choice(ext, m.sum())
    elif dt.kind in "fc":
        comp = np.dtype("f%d" % (dt.itemsize // 2)) if dt.kind == "c" else dt.newbyteorder("=")
        part = native.view(comp.newbyteorder("=")) if dt.kind == "c" else native
        k = part.size
        pick = nrng.random(k)
        mod = (nrng.standard_normal(k) * nrng.choice([1, 100, 1e4, 1e6], k)).astype(part.dtype)
        part[pick < 0.55] = mod[pick < 0.55]
        m = (pick >= 0.55) & (pick < 0.8)
        sp = np.array(SPECIAL, dtype=np.float64)[nrng.integers(0, len(SPECIAL), m.sum())]
        sp *= nrng.choice([1, -1], m.sum())
        part[m] = sp.astype(part.dtype)
        m2 = (pick >= 0.8) & (pick < 0.9)
        part[m2] = nrng.integers(-3000, 3000, m2.sum()).astype(part.dtype)
    elif dt.kind in "mM":
        pick = nrng.random(n)
        iv = native.view(np.int64)
        iv[pick < 0.6] = nrng.integers(-10**6, 10**6, (pick < 0.6).sum())
        iv[(pick >= 0.6) & (pick < 0.7)] = np.iinfo(np.int64).min  # NaT
    return native.astype(dt).tobytes()


def add(config, enc, note):
    config = json.loads(json.dumps(config))  # what a .zarray holds
    i = len(cases)
    case = {"config": config, "note": note, "enc": "%04d.enc" % i}
    with open(os.path.join(out, case["enc"]), "wb") as f:
        f.write(enc)
    try:
        codec = numcodecs.get_codec(dict(config))
        dec = codec.decode(enc)
        dec = np.ascontiguousarray(dec).tobytes()
        case["dec"] = "%04d.dec" % i
        with open(os.path.join(out, case["dec"]), "wb") as f:
            f.write(dec)
    except Exception as e:  # numcodecs refused: the Go decoder must refuse too
        case["error"] = "%s: %s" % (type(e).__name__, e)
    cases.append(case)


def encode(config, arr):
    try:
        return numcodecs.get_codec(json.loads(json.dumps(config))).encode(arr).tobytes()
    except Exception:
        return None


# delta: every identity pair, plus random (dtype, astype) pairs
pairs = [(d, d) for d in ALL] + [(rng.choice(ALL), rng.choice(ALL)) for _ in range(160)]
pairs += [("<f8", "<u4"), ("<u4", "<f8"), ("<u4", "<f4"), ("<u4", ">f8"), (">u4", "<f8"),
          ("<f4", "<f8"), ("<f2", "<f8"), ("<f8", "<f2"), ("<i4", "<i2"), ("<f4", "<f4")]
for dt, at in pairs:
    cfg = {"id": "delta", "dtype": dt, "astype": at}
    add(cfg, stored(at, sizes()), "stored")
    if dt == at or rng.random() < 0.3:
        arr = np.frombuffer(stored(dt, sizes() or 1), dt)
        enc = encode(cfg, arr)
        if enc is not None:
            add(cfg, enc, "numcodecs-encoded")
add({"id": "delta", "dtype": "int32"}, stored("<i4", 100), "v3 name, no astype")

# astype and quantize: random pairs
for _ in range(220):
    et, dt = rng.choice(ALL), rng.choice(ALL)
    add({"id": "astype", "encode_dtype": et, "decode_dtype": dt}, stored(et, sizes()), "stored")
for et in ["<f4", "<f8", ">f8", "<f2"]:
    for dt in ["<u4", ">u4", "<i4", "<u8", "<i2", "<u1"]:
        add({"id": "astype", "encode_dtype": et, "decode_dtype": dt}, stored(et, 8195), "float to int edges")
for _ in range(40):
    at, dt = rng.choice(FLOATS), rng.choice(FLOATS)
    add({"id": "quantize", "digits": rng.randrange(-2, 12), "dtype": dt, "astype": at}, stored(at, sizes()), "stored")
    arr = np.frombuffer(stored(dt, sizes() or 1), dt)
    cfg = {"id": "quantize", "digits": rng.randrange(0, 6), "dtype": dt, "astype": at}
    enc = encode(cfg, arr)
    if enc is not None:
        add(cfg, enc, "numcodecs-encoded")

# fixedscaleoffset: scale and offset spelled as Python ints and floats
NUMS = [0, 1, 10, 100, 255, 256, 1000, 65535, 65536, 100000, 10**12, -3, -129, 0.1, 10.0, 1000.0,
        1e5, 65504.0, 64999.0, 65000.0, 1e12, 3.5e38, 1e50, -2.5, 1 / 3]
FSO_AT = ["|i1", "|u1", "<i2", ">i2", "<u2", "<i4", "<u4", ">i8", "<u8", "<f2", "<f4", ">f4", "<f8", "|b1"]
FSO_DT = ["<f8", ">f8", "<f4", "<f2", "<i4", "<u4", "<u8", "|u1", "<i2", "|b1", "<i8"]
for _ in range(180):
    at, dt = rng.choice(FSO_AT), rng.choice(FSO_DT)
    cfg = {"id": "fixedscaleoffset", "scale": rng.choice(NUMS), "offset": rng.choice(NUMS), "dtype": dt, "astype": at}
    add(cfg, stored(at, sizes()), "stored")
for at in ["|i1", "<i2", "<i4", "<i8", "<u2"]:
    cfg = {"id": "fixedscaleoffset", "scale": 10, "offset": 1000, "dtype": "<f8", "astype": at}
    arr = 1000 + np.round(nrng.standard_normal(1000) * 5, 1)
    enc = encode(cfg, arr)
    if enc is not None:
        add(cfg, enc, "numcodecs-encoded")

# packbits
for n in [0, 1, 7, 8, 9, 15, 16, 17, 100, 1001]:
    arr = nrng.integers(0, 2, n).astype(bool)
    add({"id": "packbits"}, encode({"id": "packbits"}, arr), "numcodecs-encoded")
for pad in range(8):
    add({"id": "packbits"}, bytes([pad]) + nrng.integers(0, 256, 1 + pad * 3, dtype=np.uint8).tobytes(), "stored")

# shuffle
for es in [0, 1, 2, 3, 4, 5, 8, 9, 16, 17]:
    for n in [0, 1, 2, 3, 100, 4097]:
        nb = n * max(es, 1)
        add({"id": "shuffle", "elementsize": es}, nrng.integers(0, 256, nb, dtype=np.uint8).tobytes(), "stored")

# bitround
for dt in ["<f2", "<f4", "<f8"]:
    arr = np.frombuffer(stored(dt, 333), dt).copy()  # bitround encodes in place
    for kb in [0, 3, 10]:
        cfg = {"id": "bitround", "keepbits": kb}
        enc = encode(cfg, arr)
        if enc is not None:
            add(cfg, enc, "numcodecs-encoded " + dt)

result_types = {}
for a in ALL:
    for b in ALL:
        try:
            result_types[a + "," + b] = np.result_type(np.dtype(a), np.dtype(b)).str
        except Exception:
            result_types[a + "," + b] = None

with open(os.path.join(out, "cases.json"), "w") as f:
    json.dump({"cases": cases, "result_types": result_types}, f, indent=1)
print(len(cases), "cases")
