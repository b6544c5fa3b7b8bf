#!/usr/bin/python3
"""Go vs C decode speed on the same numcodecs-written chunks.

Writes 1 MiB chunks encoded by numcodecs (the C libraries: c-blosc, zstd,
zlib, lz4) into a temporary directory, then in --count alternating rounds
times numcodecs decoding them on one thread and runs the Go benchmark
BenchmarkNumcodecsFiles on the same files (ZFUSE_BENCH_DIR, GOMAXPROCS=1 via
-cpu 1), keeping each side's best, and prints one table: case, C GB/s,
Go GB/s, Go/C.

Run from anywhere with Debian's python (numpy, numcodecs 0.11):
    /usr/bin/python3 codec/testdata/bench_c.py [--benchtime 300x] [--keep]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import numcodecs
from numcodecs import blosc

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def field(dtype):
    """A smooth field plus noise: a random walk, as float data often looks."""
    n = (1 << 20) // np.dtype(dtype).itemsize
    rng = np.random.default_rng(0)
    walk = np.cumsum(rng.normal(size=n))
    if np.dtype(dtype).kind == "c":
        walk = walk + 1j * np.cumsum(rng.normal(size=n))
    return walk.astype(dtype)


CASES = [
    # name, codec, data
    ("blosc-lz4-shuffle-f4", numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1), "f4"),
    ("blosc-lz4-shuffle-f8", numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1), "f8"),
    ("blosc-lz4-shuffle-c16", numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1), "c16"),
    ("blosc-lz4-bitshuffle-f4", numcodecs.Blosc(cname="lz4", clevel=5, shuffle=2), "f4"),
    ("blosc-lz4-noshuffle-f4", numcodecs.Blosc(cname="lz4", clevel=5, shuffle=0), "f4"),
    ("blosc-zstd-shuffle-f4", numcodecs.Blosc(cname="zstd", clevel=5, shuffle=1), "f4"),
    ("blosc-blosclz-shuffle-f4", numcodecs.Blosc(cname="blosclz", clevel=5, shuffle=1), "f4"),
    ("zstd-f4", numcodecs.Zstd(level=1), "f4"),
    ("zlib-f4", numcodecs.Zlib(level=1), "f4"),
    ("gzip-f4", numcodecs.GZip(level=1), "f4"),
    ("lz4-f4", numcodecs.LZ4(acceleration=1), "f4"),
]


def time_c(codec, enc, out, repeat):
    """Best seconds per decode over `repeat` rounds of ~20 ms each."""
    codec.decode(enc, out=out)
    t0 = time.perf_counter()
    codec.decode(enc, out=out)
    k = max(1, int(0.02 / max(time.perf_counter() - t0, 1e-6)))
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(k):
            codec.decode(enc, out=out)
        best = min(best, (time.perf_counter() - t0) / k)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--benchtime", default="300x", help="go test -benchtime (default 300x)")
    ap.add_argument("--count", type=int, default=5, help="rounds of C then Go; the best counts (default 5)")
    ap.add_argument("--repeat", type=int, default=5, help="C timings per case per round (default 5)")
    ap.add_argument("--go", default=shutil.which("go") or "/usr/local/go/bin/go", help="go binary")
    ap.add_argument("--keep", action="store_true", help="keep the chunk directory and print its path")
    args = ap.parse_args()

    blosc.set_nthreads(1)
    load0 = open("/proc/loadavg").read().split()[0]
    d = tempfile.mkdtemp(prefix="zfuse-bench-")
    try:
        chunks = {}
        for name, codec, dtype in CASES:
            data = field(dtype)
            enc = bytes(codec.encode(data))
            raw = data.tobytes()
            out = np.empty_like(data)
            if codec.decode(enc, out=out).tobytes() != raw:
                sys.exit("%s: numcodecs does not round-trip" % name)
            with open(os.path.join(d, name + ".json"), "w") as f:
                json.dump(codec.get_config(), f)
            with open(os.path.join(d, name + ".enc"), "wb") as f:
                f.write(enc)
            with open(os.path.join(d, name + ".raw"), "wb") as f:
                f.write(raw)
            chunks[name] = (codec, enc, out, len(raw))

        # C and Go take turns, round after round, and each keeps its best:
        # on a shared machine, load that comes and goes then hits both alike.
        cmd = [args.go, "test", "-run", "^$", "-bench", "^BenchmarkNumcodecsFiles$", "-benchtime", args.benchtime,
               "-count", "1", "-cpu", "1", "./codec"]
        env = dict(os.environ, ZFUSE_BENCH_DIR=d)
        c_speed, go_speed, allocs, skipped = {}, {}, {}, []
        for _ in range(args.count):
            for name, (codec, enc, out, n) in chunks.items():
                gbs = n / time_c(codec, enc, out, args.repeat) / 1e9
                c_speed[name] = (max(gbs, c_speed.get(name, (0,))[0]), n / len(enc))
            res = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
            if res.returncode != 0:
                sys.exit("go test failed:\n" + res.stdout + res.stderr)
            for line in res.stdout.splitlines():
                m = re.match(r"BenchmarkNumcodecsFiles/(\S+?)(?:-\d+)?\s+\d+\s+[\d.]+ ns/op\s+([\d.]+) MB/s(.*)", line)
                if m:
                    name, mbs = m.group(1), float(m.group(2))
                    go_speed[name] = max(go_speed.get(name, 0), mbs / 1000)
                    a = re.search(r"(\d+) allocs/op", m.group(3))
                    if a:
                        allocs[name] = a.group(1)
            skipped = re.findall(r"--- SKIP: BenchmarkNumcodecsFiles/(\S+)", res.stdout)

        cpu = ""
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        print("Go vs C decode, 1 MiB chunks written by numcodecs %s, one core (%s), %s"
              % (numcodecs.__version__, cpu, time.strftime("%Y-%m-%d")))
        print("C: numcodecs decode(out=...), blosc nthreads 1; Go: %s; best of %d alternating rounds"
              % (" ".join(cmd[1:]), args.count))
        print("load average before/after: %s / %s" % (load0, open("/proc/loadavg").read().split()[0]))
        print()
        print("%-26s %6s %8s %8s %7s %7s" % ("case", "ratio", "C GB/s", "Go GB/s", "Go/C", "allocs"))
        for name, _, _ in CASES:
            c, ratio = c_speed[name]
            g = go_speed.get(name)
            if g is None:
                why = "skipped (no Go decoder)" if name in skipped else "missing"
                print("%-26s %6.2f %8.2f %8s   %s" % (name, ratio, c, "-", why))
                continue
            print("%-26s %6.2f %8.2f %8.2f %6.2fx %7s" % (name, ratio, c, g, g / c, allocs.get(name, "?")))
    finally:
        if args.keep:
            print("\nchunks kept in", d)
        else:
            shutil.rmtree(d)


if __name__ == "__main__":
    main()
