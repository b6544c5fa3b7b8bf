"""The Python half of zfuse bench compress; run with /usr/bin/python3 (zarr 2.13, numcodecs 0.11).

  bench_compress.py write OUT BYTES        write OUT (an uncompressed zarr-python store): a float32
                                           array of about BYTES in 1 MiB chunks, a smooth field plus
                                           noise, as zfuse bench's (bench.py); print its shape
  bench_compress.py encode SRC THREADS CODEC
                                           encode every chunk file of SRC's array (read into memory
                                           first) with numcodecs, Blosc using THREADS threads; CODEC is
                                           blosc-lz4 (Blosc lz4 clevel 5 shuffle) or zstd (Zstd level 3);
                                           print the seconds and the encoded bytes
  bench_compress.py copy SRC DEST THREADS  zarr-python copying SRC's array into a new store DEST with
                                           Blosc(lz4, 5, shuffle), Blosc using THREADS threads, as a user
                                           would (zarr.copy with the compressor); print the seconds
"""
import json
import os
import sys
import time

import numcodecs
import numpy as np
import zarr
from numcodecs import blosc

CHUNKS = (1, 512, 512)  # 1 MiB of float32
SIDE = 1024


def write(out, nbytes):
    n = max(1, nbytes // (4 * SIDE * SIDE))
    a = zarr.open(out, mode="w", shape=(n, SIDE, SIDE), chunks=CHUNKS, dtype="<f4", compressor=None)
    rng = np.random.default_rng(42)
    y = np.linspace(0, 6 * np.pi, SIDE, dtype=np.float32)
    field = (12 * np.sin(y)[:, None] * np.cos(0.7 * y)[None, :]).astype(np.float32)
    for i in range(0, n, 8):
        m = min(8, n - i)
        t = np.arange(i, i + m, dtype=np.float32)[:, None, None]
        block = 288 + field[None] + 3 * np.sin(t / 24)
        a[i:i + m] = (block + 0.25 * rng.standard_normal((m, SIDE, SIDE), dtype=np.float32)).astype("<f4")
    print(json.dumps({"shape": a.shape, "chunks": CHUNKS}))


def chunk_files(src):
    return sorted(os.path.join(src, k) for k in os.listdir(src) if not k.startswith("."))


def encode(src, threads, which):
    blosc.set_nthreads(int(threads))
    codec = {"blosc-lz4": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
             "zstd": numcodecs.Zstd(level=3)}[which]
    chunks = []
    for p in chunk_files(src):
        with open(p, "rb") as f:
            chunks.append(np.frombuffer(f.read(), dtype="<f4"))
    t = time.perf_counter()
    n = 0
    for c in chunks:
        n += len(codec.encode(c))
    dt = time.perf_counter() - t
    print(json.dumps({"seconds": dt, "encoded": n, "bytes": sum(c.nbytes for c in chunks)}))


def copy(src, dest, threads):
    blosc.set_nthreads(int(threads))
    s = zarr.open(src, mode="r")
    g = zarr.open_group(dest, mode="w")
    t = time.perf_counter()
    zarr.copy(s, g, name="a", compressor=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE))
    print(json.dumps({"seconds": time.perf_counter() - t}))


if __name__ == "__main__":
    cmds = {"write": lambda a: write(a[0], int(a[1])), "encode": lambda a: encode(*a), "copy": lambda a: copy(*a)}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    cmds[sys.argv[1]](sys.argv[2:])
