#!/usr/bin/python3
"""numcodecs 0.11's side of codec's encoder tests (TestNumcodecsEncode).

  encode_check.py gen OUT    write inputs and numcodecs' own encodings of them
                             (c-blosc with one thread): OUT/cases.json lists
                             {name, config, itemsize}; OUT/NAME.raw is the input,
                             OUT/NAME.nc the numcodecs encoding
  encode_check.py check LIST decode every file LIST (a JSON list of {name, config,
                             file, want}) names with numcodecs and compare it with
                             the bytes of want (a .raw file, or a .npy array's
                             tobytes(order='A')); print one JSON line per file:
                             {"name": ..., "err": "" or why}

Run with Debian's python (numpy, numcodecs 0.11).
"""
import json
import os
import sys

import numcodecs
import numpy as np
from numcodecs import blosc
from numcodecs.compat import ensure_bytes


def inputs():
    rng = np.random.default_rng(7)
    n = 1 << 16
    y = np.linspace(0, 20, n)
    yield "f4-field", (288 + 5 * np.sin(y) + 0.25 * rng.standard_normal(n)).astype("<f4")
    yield "f8-walk", np.cumsum(rng.standard_normal(n // 2))
    yield "i2-ramp", (np.arange(10007) % 3000).astype("<i2")
    yield "u1-noise", rng.integers(0, 256, 5000, dtype=np.uint8)
    yield "b1-blocks", np.repeat(rng.integers(0, 2, 500).astype(bool), 7)
    yield "c16-walk", (np.cumsum(rng.standard_normal(3001)) + 1j).astype("<c16")
    yield "i4-small", np.arange(20, dtype="<i4")  # under 128 bytes: memcpyed


def configs():
    for cname in ("lz4", "blosclz", "lz4hc", "zlib", "zstd"):
        for clevel in (1, 5, 9):
            for shuffle in (-1, 0, 1, 2):
                if cname in ("lz4hc", "zlib", "zstd") and (clevel != 5 or shuffle == -1):
                    continue
                yield {"id": "blosc", "cname": cname, "clevel": clevel, "shuffle": shuffle, "blocksize": 0}
        yield {"id": "blosc", "cname": cname, "clevel": 5, "shuffle": 1, "blocksize": 2000}
    yield {"id": "lz4", "acceleration": 1}
    yield {"id": "lz4", "acceleration": 10}
    yield {"id": "zstd", "level": 3}
    yield {"id": "zlib", "level": 1}
    yield {"id": "gzip", "level": 1}


def gen(out):
    blosc.set_nthreads(1)  # blocks in order: the bytes are comparable
    os.makedirs(out, exist_ok=True)
    cases = []
    for iname, arr in inputs():
        for k, cfg in enumerate(configs()):
            name = f"{iname}.{k:02d}"
            enc = ensure_bytes(numcodecs.get_codec(dict(cfg)).encode(arr))
            with open(os.path.join(out, name + ".raw"), "wb") as f:
                f.write(arr.tobytes())
            with open(os.path.join(out, name + ".nc"), "wb") as f:
                f.write(enc)
            cases.append({"name": name, "config": cfg, "itemsize": arr.dtype.itemsize})
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(cases, f)


def check(listfile):
    with open(listfile) as f:
        items = json.load(f)
    for it in items:
        cfg = dict(it["config"])
        if cfg.get("id") == "zstd":
            cfg.pop("checksum", None)  # numcodecs 0.11 has no such key; the frames decode
        err = ""
        try:
            with open(it["file"], "rb") as f:
                enc = f.read()
            got = ensure_bytes(numcodecs.get_codec(cfg).decode(enc))
            want = it["want"]
            if want.endswith(".npy"):
                want = np.load(want).tobytes(order="A")
            else:
                with open(want, "rb") as f:
                    want = f.read()
            if got != want:
                err = f"numcodecs decodes {len(got)} bytes that differ from the {len(want)} input bytes"
        except Exception as e:  # a refusal is a failure too
            err = f"numcodecs: {type(e).__name__}: {e}"
        print(json.dumps({"name": it["name"], "err": err}))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "gen":
        gen(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        check(sys.argv[2])
    else:
        sys.exit(__doc__)
