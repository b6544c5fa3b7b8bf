#!/usr/bin/python3
# Writes chunks encoded by numcodecs (Debian's 0.11, with its c-blosc) into
# the directory argv[1], one folder per array: ARRAY/array.raw (the array's
# bytes) and ARRAY/NAME.enc (its encodings). Blosc encodings are named after
# their cname; numcodecs LZ4 ones start with "numlz4". Used by
# TestEmulatedNumcodecsPython and, through `make gpu`, by TestDeviceNumcodecs
# on a GPU machine.
import sys, os, numpy as np
from numcodecs import Blosc, LZ4

d = sys.argv[1]
os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(42)


def arrays(n):
    x = np.linspace(0, 50, n)
    yield "f4", (np.sin(x) * 1000).astype("<f4")
    yield "i2", (np.arange(n) % 1000).astype("<i2")
    yield "u1", rng.integers(0, 4, n).astype("u1")
    yield "f8", np.cumsum(rng.normal(size=n)).astype("<f8")
    yield "S3", np.array([b"abc", b"xyz", b"abd"] * (n // 3 + 1))[:n]


def write(array, name, enc):
    open(os.path.join(d, array, name + ".enc"), "wb").write(enc)


for n in (100, 1000, 33333, 200000):
    for dt, a in arrays(n):
        if n == 200000 and dt != "f4":
            continue
        array = "%s_%d" % (dt, n)
        os.makedirs(os.path.join(d, array), exist_ok=True)
        open(os.path.join(d, array, "array.raw"), "wb").write(a.tobytes())
        for cname in ("lz4", "lz4hc", "zstd", "blosclz"):
            for shuffle in (0, 1, 2, -1):
                for bs in (0, 4096, 65536):
                    if cname in ("zstd", "blosclz") and (bs or n == 1000):
                        continue
                    c = Blosc(cname=cname, clevel=5, shuffle=shuffle, blocksize=bs)
                    write(array, "%s_s%d_b%d" % (cname, shuffle, bs), c.encode(a))
        write(array, "numlz4", LZ4().encode(a))
