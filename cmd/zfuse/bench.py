"""The Python half of zfuse bench; run with /usr/bin/python3 (zarr 2.13, numcodecs 0.11).

  bench.py write OUT BYTES   write OUT/blosc.zarr, OUT/zstd.zarr and OUT/raw.zarr: the same
                             float32 array of about BYTES decoded bytes, in 1 MiB chunks,
                             compressed with Blosc(lz4, clevel 5, shuffle), with Zstd(level 3),
                             and uncompressed; print what was written as JSON
  bench.py read PATH         read the whole array at PATH with zarr-python; print the time
"""
import json
import sys
import time

import numcodecs
import numpy as np
import zarr

CHUNKS = (1, 512, 512)  # 1 MiB of float32
SIDE = 1024  # each step along axis 0 is a 2x2 grid of chunks: 4 MiB


def write(out, nbytes):
    n = max(1, nbytes // (4 * SIDE * SIDE))
    shape = (n, SIDE, SIDE)
    compressors = {
        "blosc": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
        "zstd": numcodecs.Zstd(level=3),
        "raw": None,
    }
    arrays = {
        name: zarr.open(f"{out}/{name}.zarr", mode="w", shape=shape, chunks=CHUNKS, dtype="<f4", compressor=c)
        for name, c in compressors.items()
    }
    # A field like a temperature: smooth in space, slowly varying in time,
    # with measurement noise in the low mantissa bits.
    rng = np.random.default_rng(42)
    y = np.linspace(0, 6 * np.pi, SIDE, dtype=np.float32)
    field = (12 * np.sin(y)[:, None] * np.cos(0.7 * y)[None, :]).astype(np.float32)
    step = 8
    for i in range(0, n, step):
        m = min(step, n - i)
        t = np.arange(i, i + m, dtype=np.float32)[:, None, None]
        block = 288 + field[None] + 3 * np.sin(t / 24)
        block = (block + 0.25 * rng.standard_normal((m, SIDE, SIDE), dtype=np.float32)).astype("<f4")
        for a in arrays.values():
            a[i : i + m] = block
    print(json.dumps({"shape": shape, "chunks": CHUNKS}))


def read(path):
    a = zarr.open(path, mode="r")
    t = time.perf_counter()
    x = a[...]
    dt = time.perf_counter() - t
    threads = numcodecs.blosc.get_nthreads() if hasattr(numcodecs.blosc, "get_nthreads") else None
    print(json.dumps({"seconds": dt, "bytes": int(x.nbytes), "compressor": repr(a.compressor), "blosc_threads": threads}))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "read":
        read(sys.argv[2])
    else:
        sys.exit("usage: bench.py write OUT BYTES | read PATH")
