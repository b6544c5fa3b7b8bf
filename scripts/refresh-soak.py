#!/usr/bin/python3
"""refresh-soak.py: the RSS of a --refresh mount over a long run.

usage: /usr/bin/python3 scripts/refresh-soak.py ZFUSE DIR [MINUTES [ZFUSE-MOUNT-FLAGS...]]

Writes a local store with zarr-python into DIR/src (one array rewritten
and resized while mounted, eight that never change), mounts it with ZFUSE
at DIR/mnt with --refresh 1s (and small budgets, so that a cache filling
up cannot pass for growth), and for MINUTES (default 30) rewrites a few
chunks of the changing array every 2 s, resizes it every 10 s, rewrites its
.zattrs, and reads every array through the mount with zarr-python and as
plain chunk files. Every 30 s it prints the mount's VmRSS (KiB; and its
anonymous and file-backed parts, the latter mostly the binary's own pages),
its peak, the Go heap in use (bytes), the goroutines and the arrays the
loader keeps decoders for (from --metrics). Arrays that never change must read
right every time; reads of the changing one that differ from the store
(not yet refreshed) are counted, not failed.
"""

import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import zarr
from numcodecs import Zlib, Blosc


def free_addr():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    a = "127.0.0.1:%d" % s.getsockname()[1]
    s.close()
    return a


def status(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])  # KiB
    return -1


def scrape(addr):
    out = {}
    with urllib.request.urlopen("http://%s/metrics" % addr, timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("#") or " " not in line:
                continue
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return out


def main():
    zfuse, d = sys.argv[1], sys.argv[2]
    minutes = float(sys.argv[3]) if len(sys.argv) > 3 else 30
    extra = sys.argv[4:]
    src, mnt = os.path.join(d, "src"), os.path.join(d, "mnt")
    os.makedirs(mnt, exist_ok=True)
    root = zarr.open_group(src, mode="w")
    rng = np.random.default_rng(1)
    ch = root.create_dataset("changing", shape=(40, 256, 256), chunks=(1, 256, 256),
                             dtype="u1", compressor=Zlib(level=1))
    ch[:] = rng.integers(0, 8, size=ch.shape, dtype="u1")
    still = {}
    for i in range(8):
        comp = Blosc(cname="lz4", clevel=5) if i % 2 else Zlib(level=1)
        a = root.create_dataset("still%d" % i, shape=(10, 200, 200), chunks=(1, 128, 128),
                                dtype="<i2", compressor=comp)
        a[:] = rng.integers(0, 100, size=a.shape, dtype="<i2")
        still[a.name.strip("/")] = a[:]
    zarr.consolidate_metadata(src)

    addr = free_addr()
    cmd = [zfuse, "mount", "--refresh", "1s", "--metrics", addr,
           "--cache-decoded", "16MiB", "--readahead", "16MiB"] + extra + [src, mnt]
    log = open(os.path.join(d, "zfuse.log"), "w")
    p = subprocess.Popen(cmd, stderr=log)
    for _ in range(300):
        if os.path.ismount(mnt):
            break
        time.sleep(0.1)
    else:
        sys.exit("not mounted after 30 s")
    print("zfuse", " ".join(cmd[1:]), flush=True)
    print("%6s %9s %9s %9s %9s %11s %5s %8s %6s %5s %6s" % (
        "t s", "VmRSS", "RssAnon", "RssFile", "VmHWM", "heap inuse", "gorou", "decoders", "rounds", "stale", "errors"), flush=True)

    start = time.time()
    next_sample, rounds, stale, errors, grown = start, 0, 0, 0, False
    rss = []
    while True:
        now = time.time()
        if now >= next_sample:
            m = scrape(addr)
            r = status(p.pid, "VmRSS")
            rss.append(r)
            print("%6.0f %9d %9d %9d %9d %11.0f %5.0f %8.0f %6d %5d %6d" % (
                now - start, r, status(p.pid, "RssAnon"), status(p.pid, "RssFile"), status(p.pid, "VmHWM"),
                m.get("go_memstats_heap_inuse_bytes", -1), m.get("go_goroutines", -1),
                m.get('zfuse_readahead_arrays{table="decoders"}', -1), rounds, stale, errors), flush=True)
            next_sample += 30
        if now - start >= minutes * 60:
            break
        # Write: a few chunks; every fifth round grow or shrink back; attrs.
        w = zarr.open_group(src, mode="r+")
        c = w["changing"]
        for _ in range(4):
            k = random.randrange(c.shape[0])
            c[k] = rng.integers(0, 8, size=c.shape[1:], dtype="u1")
        if rounds % 5 == 4:
            grown = not grown
            c.resize((41 if grown else 40,) + c.shape[1:])
            if grown:
                c[40] = rng.integers(0, 8, size=c.shape[1:], dtype="u1")
        c.attrs["round"] = rounds
        zarr.consolidate_metadata(src)
        want = c[:]
        time.sleep(2)
        # Read through the mount.
        try:
            g = zarr.open_consolidated(mnt, mode="r")
            for name, v in still.items():
                if not np.array_equal(g[name][:], v):
                    errors += 1
                    print("wrong bytes in", name, flush=True)
            got = g["changing"][:]
            if got.shape != want.shape or not np.array_equal(got, want):
                stale += 1
            for k in random.sample(range(40), 4):
                with open(os.path.join(mnt, "changing", "%d.0.0" % k), "rb") as f:
                    f.read()
        except Exception as e:  # a failed read: count it and go on
            errors += 1
            print("read error:", repr(e), flush=True)
        rounds += 1

    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=60)
    q = max(len(rss) // 4, 1)
    print("exit %d; %d rounds, %d stale, %d errors; VmRSS mean first quarter %d KiB, last quarter %d KiB" % (
        rc, rounds, stale, errors, sum(rss[:q]) // q, sum(rss[-q:]) // q), flush=True)


if __name__ == "__main__":
    main()
