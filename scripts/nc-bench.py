#!/usr/bin/python3
"""Measure the netCDF view (zfuse mount --as-nc) against the plain mount.

usage: /usr/bin/python3 scripts/nc-bench.py [--zfuse bin/zfuse] [--base OTHER]
           [--rounds 3] [--chunk 1m|64k] [--dir /tmp/zfuse-nc-bench]
           [--flags '--transport dev']

Writes (once) a 512 MiB float32 array, 128x1024x1024, Blosc-LZ4, in
chunks of 1x512x512 (1 MiB) or 1x128x128 (64 KiB), as the root of a
Zarr v2 store, so that its netCDF file is ROOT.nc with one variable. Then,
for each round, alternating, each reader on a fresh mount (nothing
decoded yet; the store's own files stay in the page cache, as for
every reader):

  slab      netCDF4-python reads v[0:16] (1/8 of the array); the mount's
            stats file says how many values it read from the store,
            against the chunks the slab covers
  var       netCDF4-python reads v[:], the whole variable
  bytes     os.pread of the variable's bytes, 1 MiB at a time, in order
  npy       the same of the array's .npy file under --as-npy: the other
            flat view, for comparison
  chunks    the plain mount: every chunk file read whole, in grid order
  local     netCDF4-python reads v[:] from a copy of the .nc file on local
            disk, in the page cache: netCDF-C's own cost (8 KiB reads,
            byte swapping), which no server can take away

and prints the median time of each with its range, the rates relative
to a cold scan of the chunk files (chunks time / reader time, each round
against the same round's scan), and the store reads of the slab. With
--base, a second binary (the build before a change) serves every mount
reader too, alternating with --zfuse reader by reader, so that both see
the same load. Run it on a quiet machine, as
root (FUSE).
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time

import netCDF4
import numcodecs
import numpy as np
import zarr

SHAPE = (128, 1024, 1024)


def write_store(path, chunks):
    z = zarr.open(path, mode="w", shape=SHAPE, chunks=chunks, dtype="<f4",
                  compressor=numcodecs.Blosc("lz4", 5, 1))
    x = np.linspace(0, 20, SHAPE[2], dtype="f4")
    base = np.sin(x)[None, :] * np.cos(x)[:, None]
    for i in range(0, SHAPE[0], 16):
        z[i:i + 16] = base[None] * (1 + np.arange(i, i + 16, dtype="f4")[:, None, None] / 100)
    z.attrs["_ARRAY_DIMENSIONS"] = ["time", "y", "x"]


class Mount:
    extra = []  # --flags, for every mount

    def __init__(self, zfuse, src, flags, work):
        self.dir = tempfile.mkdtemp(dir=work)
        self.stats = os.path.join(work, "stats.json")
        self.p = subprocess.Popen([zfuse, "mount", "--stats-file", self.stats, *Mount.extra, *flags, src, self.dir],
                                  stderr=subprocess.PIPE, text=True)
        for line in self.p.stderr:
            if "msg=mounted" in line:
                return
        raise RuntimeError("zfuse mount did not mount")

    def store_reads(self):
        self.p.send_signal(signal.SIGUSR1)
        for _ in range(100):
            time.sleep(0.05)
            try:
                with open(self.stats) as f:
                    return json.load(f)["stats"]["StoreReads"]
            except (OSError, ValueError, KeyError):
                pass
        raise RuntimeError("no stats file")

    def close(self):
        subprocess.run(["fusermount3", "-u", self.dir], check=True)
        self.p.wait()
        os.rmdir(self.dir)
        if os.path.exists(self.stats):
            os.remove(self.stats)


def var_extent(path):
    """The begin offset and length of the one variable of a .nc (or the
    data of a .npy) file: its last bytes (a multiple of 4: no padding)."""
    n = 4 * SHAPE[0] * SHAPE[1] * SHAPE[2]
    return os.stat(path).st_size - n, n


def run(args):
    os.makedirs(args.dir, exist_ok=True)
    chunks = {"1m": (1, 512, 512), "64k": (1, 128, 128)}[args.chunk]
    name = f"big{args.chunk}"
    src = os.path.join(args.dir, name + ".zarr")
    if not os.path.exists(os.path.join(src, ".zarray")):
        write_store(src, chunks)
    covered = -(-SHAPE[0] // 8 // chunks[0]) * (SHAPE[1] // chunks[1]) * (SHAPE[2] // chunks[2])
    local = os.path.join(args.dir, name + ".nc")
    if not os.path.exists(local):
        with open(local, "wb") as f:
            subprocess.run([args.zfuse, "cat", "--as-nc", src, name + ".nc"], stdout=f, check=True)
    builds = [("", args.zfuse)] + ([("base", args.base)] if args.base else [])
    kinds = ["slab", "var", "bytes", "npy", "chunks"]
    times = {b: {k: [] for k in kinds} for b, _ in builds}
    reads = {b: [] for b, _ in builds}
    local_times = []
    for r in range(args.rounds):
        for k in kinds:
            for b, zfuse in builds:  # alternating, reader by reader
                t, n = measure(k, zfuse, src, name, args.dir)
                times[b][k].append(t)
                if k == "slab":
                    reads[b].append(n)
        for b, _ in builds:
            print(f"round {r}{' ' + b if b else ''}: " + ", ".join(f"{k} {times[b][k][-1]:.2f}s" for k in kinds) + f", slab store reads {reads[b][-1]}", flush=True)
        t = time.perf_counter()
        d = netCDF4.Dataset(local)
        v = d[name]
        v.set_auto_maskandscale(False)
        v[:]
        d.close()
        local_times.append(time.perf_counter() - t)
        print(f"round {r}: local {local_times[-1]:.2f}s", flush=True)
    print(f"chunks of {args.chunk}B, {args.rounds} rounds, mount flags {Mount.extra}, load average {os.getloadavg()[0]:.1f}; median [range]:")
    for b, zfuse in builds:
        tb = dict(times[b], local=local_times)
        med = {k: statistics.median(v) for k, v in tb.items()}
        print(f" {zfuse}:")
        for k, v in tb.items():
            # Each round's rate against the same round's chunk scan, by the same build.
            rates = [c / x / (1 if k != "slab" else 8) for c, x in zip(tb["chunks"], v)]
            print(f"  {k:7s} {med[k]:.3f}s [{min(v):.3f}-{max(v):.3f}]  ({512 if k != 'slab' else 64} MiB; rate / chunk-file scan: "
                  f"{statistics.median(rates):.2f}x [{min(rates):.2f}-{max(rates):.2f}])")
        m = statistics.median(reads[b])
        print(f"  slab store reads: median {m} [{min(reads[b])}-{max(reads[b])}] for {covered} chunks covered ({m / covered:.2f}x)")


def measure(kind, zfuse, src, name, work):
    """Reader kind once, on a fresh mount of zfuse: its time, and for the
    slab the store reads."""
    flags = {"slab": ["--as-nc"], "var": ["--as-nc"], "bytes": ["--as-nc"], "npy": ["--as-npy"], "chunks": []}[kind]
    m = Mount(zfuse, src, flags, work)
    n = None
    if kind in ("slab", "var"):
        start = time.perf_counter()
        d = netCDF4.Dataset(os.path.join(m.dir, name + ".nc"))
        v = d[name]
        v.set_auto_maskandscale(False)
        v[0:SHAPE[0] // 8] if kind == "slab" else v[:]
        d.close()
        t = time.perf_counter() - start
        if kind == "slab":
            n = m.store_reads()
    elif kind in ("bytes", "npy"):
        path = os.path.join(m.dir, name + (".nc" if kind == "bytes" else ".npy"))
        begin, size = var_extent(path)
        start = time.perf_counter()
        fd = os.open(path, os.O_RDONLY)
        for off in range(begin, begin + size, 1 << 20):
            os.pread(fd, min(1 << 20, begin + size - off), off)
        os.close(fd)
        t = time.perf_counter() - start
    else:
        files = sorted((f for f in os.listdir(m.dir) if not f.startswith(".")),
                       key=lambda f: tuple(int(c) for c in f.split(".")))
        start = time.perf_counter()
        for f in files:
            fd = os.open(os.path.join(m.dir, f), os.O_RDONLY)
            while os.read(fd, 1 << 20):
                pass
            os.close(fd)
        t = time.perf_counter() - start
    m.close()
    return t, n


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--zfuse", default="bin/zfuse")
    p.add_argument("--base", default="", help="another zfuse binary to measure alongside, alternating with --zfuse reader by reader")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--chunk", default="1m", choices=["1m", "64k"])
    p.add_argument("--dir", default="/tmp/zfuse-nc-bench")
    p.add_argument("--flags", default="", help="more flags for every mount, e.g. '--transport dev'")
    args = p.parse_args()
    Mount.extra = args.flags.split()
    run(args)


main()
