"""Readers for the reliability tests: read through a mount and compare every
byte with the uncompressed twin stores stores.py wrote.

usage:
  checkedreads.py files MOUNT WANT [options]   plain file reads of every chunk file
  checkedreads.py zarr MOUNT WANT [--seconds S] ARRAY...
                                          zarr-python reads, one chunk region at a time
                                          (--seconds: again and again for S seconds)

The chunk files are all the chunk keys of the arrays under WANT (from each
.zarray): those WANT has must read equal to it, the others must be missing
(ENOENT), as the fill value. EIO is counted, never a mistake; anything else
is. The last line printed is a JSON summary: reads, bytes, ok, eio, wrong
(bytes that differ, or ENOENT for a chunk that exists), errors (other
errnos, by name), examples (the first few mistakes), seconds.

files options:
  --threads T        T threads, each reading its share (default 1)
  --order O          seq (grid order, a contiguous share per thread),
                     stride (every T-th file, axis 0 fastest), random
                     (shuffled), sub (random byte ranges of random files)
  --rounds R         read the list R times (default 1)
  --seconds S        instead: keep reading rounds until S seconds passed
  --drop             drop each file's cached pages first (fadvise), so that
                     every read reaches the mount
  --stop-on-error    end at the first error, printing it (crash tests)
  --ready            print "ready" after the first read that succeeds
  --seed K           for random and sub (default 1)
  --arrays A,B       only these arrays (paths under WANT)
"""
import errno
import json
import os
import random
import sys
import threading
import time


def chunk_files(want, only=None):
    """(path, exists) for every chunk key of every array under want."""
    out = []
    for dirpath, dirs, names in os.walk(want):
        dirs.sort()
        if ".zarray" not in names:
            continue
        arr = os.path.relpath(dirpath, want)
        if only and arr not in only:
            continue
        with open(os.path.join(dirpath, ".zarray")) as f:
            meta = json.load(f)
        sep = meta.get("dimension_separator", ".") or "."
        grid = [-(-s // c) for s, c in zip(meta["shape"], meta["chunks"])]
        keys = [[]]
        for g in grid:
            keys = [k + [i] for k in keys for i in range(g)]
        for k in keys:
            rel = os.path.join(arr, sep.join(map(str, k)))
            out.append((rel, os.path.exists(os.path.join(want, rel)), k))
    return out


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.reads = self.bytes = self.ok = self.eio = self.wrong = 0
        self.errors = {}
        self.examples = []

    def add(self, what, path, n=0, detail=""):
        with self.lock:
            self.reads += 1
            self.bytes += n
            if what == "ok":
                self.ok += 1
                return
            if what == "eio":
                self.eio += 1
            elif what == "wrong":
                self.wrong += 1
            else:
                self.errors[what] = self.errors.get(what, 0) + 1
            if what != "eio" and len(self.examples) < 8:  # the mistakes; EIO is allowed
                self.examples.append(f"{path}: {what} {detail}".strip())

    def summary(self, start):
        return {"reads": self.reads, "bytes": self.bytes, "ok": self.ok, "eio": self.eio, "wrong": self.wrong,
                "errors": self.errors, "examples": self.examples, "seconds": round(time.time() - start, 3)}


def errname(e):
    return errno.errorcode.get(e.errno, str(e.errno))


def read_file(mount, want, rel, exists, drop, sub_rng):
    """Reads one chunk file; returns (what, bytes read, detail)."""
    try:
        with open(os.path.join(mount, rel), "rb", buffering=0) as f:
            if drop:
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            if sub_rng is None:
                got = f.read()
                off = 0
            else:
                size = os.fstat(f.fileno()).st_size
                off = sub_rng.randrange(max(size, 1))
                got = os.pread(f.fileno(), sub_rng.randrange(1, 65536), off)
    except OSError as e:
        if e.errno == errno.ENOENT:
            return ("ok", 0, "") if not exists else ("wrong", 0, "ENOENT for a chunk that exists")
        if e.errno == errno.EIO:
            return "eio", 0, ""
        return errname(e), 0, str(e)
    if not exists:
        return "wrong", len(got), "read, but the chunk does not exist"
    with open(os.path.join(want, rel), "rb") as f:
        f.seek(off)
        expect = f.read(len(got) if sub_rng is not None else -1)
    if got != expect:
        first = next((i for i, (a, b) in enumerate(zip(got, expect)) if a != b), min(len(got), len(expect)))
        return "wrong", len(got), f"{len(got)} bytes at {off}, want {len(expect)}; first difference at {off + first}"
    return "ok", len(got), ""


def files(mount, want, args):
    opts = {"--threads": "1", "--order": "seq", "--rounds": "1", "--seconds": "0", "--seed": "1", "--arrays": ""}
    flags = set()
    i = 0
    while i < len(args):
        if args[i] in opts:
            opts[args[i]] = args[i + 1]
            i += 2
        else:
            flags.add(args[i])
            i += 1
    threads, order = int(opts["--threads"]), opts["--order"]
    rounds, seconds = int(opts["--rounds"]), float(opts["--seconds"])
    only = set(filter(None, opts["--arrays"].split(",")))
    todo = chunk_files(want, only)
    if order == "stride":  # axis 0 fastest: a constant stride in grid order
        todo.sort(key=lambda t: (os.path.dirname(t[0]), t[2][1:], t[2][0]))
    tally, start, stop = Tally(), time.time(), threading.Event()
    ready = threading.Event()

    def work(t):
        rng = random.Random(int(opts["--seed"]) * 1000 + t)  # byte ranges for sub
        r = 0
        while not stop.is_set():
            if seconds > 0:
                if time.time() - start >= seconds:
                    return
            elif r >= rounds:
                return
            r += 1
            if order == "seq":
                share = todo[t * len(todo) // threads:(t + 1) * len(todo) // threads]
            elif order == "stride":
                share = todo[t::threads]
            else:  # the same permutation in every thread, a share each
                share = todo[:]
                random.Random(int(opts["--seed"]) * 1000 + r).shuffle(share)
                share = share[t::threads]
            for rel, exists, _ in share:
                if stop.is_set():
                    return
                what, n, detail = read_file(mount, want, rel, exists, "--drop" in flags, rng if order == "sub" else None)
                tally.add(what, rel, n, detail)
                if what == "ok" and "--ready" in flags and not ready.is_set():
                    ready.set()
                    print("ready", flush=True)
                if what != "ok" and "--stop-on-error" in flags:
                    stop.set()
                    return

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return tally.summary(start)


def zarr_reads(mount, want, args):
    seconds = 0.0
    if args[:1] == ["--seconds"]:
        seconds, args = float(args[1]), args[2:]
    tally, start = Tally(), time.time()
    arrays = list(args)
    while seconds > 0 and time.time() - start < seconds:  # --seconds: round after round
        zarr_round(mount, want, arrays, tally)
    if seconds <= 0:
        zarr_round(mount, want, arrays, tally)
    return tally.summary(start)


def zarr_round(mount, want, arrays, tally):
    import numpy as np
    import zarr

    for arr in arrays:
        zw = zarr.open(os.path.join(want, arr), mode="r")
        grid = [range(0, s, c) for s, c in zip(zw.shape, zw.chunks)]
        regions = [()]
        for g, c in zip(grid, zw.chunks):
            regions = [r + (slice(i, i + c),) for r in regions for i in g]
        try:
            zm = zarr.open(os.path.join(mount, arr), mode="r")
        except (OSError, zarr.errors.PathNotFoundError) as e:
            # zarr-python says "nothing found" for metadata it cannot stat:
            # the errno of another stat says whether that was an I/O error
            # (each chunk's read failed) or the array vanished (wrong). If
            # it succeeds, the I/O error passed.
            try:
                os.stat(os.path.join(mount, arr, ".zarray"))
                what = errname(e) if isinstance(e, OSError) and e.errno != errno.EIO else "eio"
            except OSError as se:
                what = {errno.EIO: "eio", errno.ENOENT: "wrong"}.get(se.errno, errname(se))
            for reg in regions:
                tally.add(what, arr, 0, f"opening: {e}")
            continue
        for reg in regions:
            try:
                got = zm[reg]
            except OSError as e:
                tally.add("eio" if e.errno == errno.EIO else errname(e), arr, 0, str(reg))
                continue
            expect = zw[reg]
            same = np.array_equal(got, expect, equal_nan=got.dtype.kind in "fc")
            tally.add("ok" if same else "wrong", arr, got.nbytes, "" if same else f"values differ in {reg}")


def main():
    mode, mount, want = sys.argv[1:4]
    if mode == "files":
        res = files(mount, want, sys.argv[4:])
    elif mode == "zarr":
        res = zarr_reads(mount, want, sys.argv[4:])
    else:
        sys.exit(f"unknown mode {mode}")
    res["mode"] = mode
    print(json.dumps(res), flush=True)


main()
