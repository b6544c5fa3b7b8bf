"""The Python half of zfuse bench; run with /usr/bin/python3 (zarr 2.13, numcodecs 0.11).

  bench.py write OUT BYTES SIDE    write OUT/blosc.zarr, OUT/zstd.zarr and OUT/raw.zarr: the same
                                   float32 array of about BYTES decoded bytes, planes of 1024x1024
                                   in chunks of (1, SIDE, SIDE), compressed with Blosc(lz4, clevel 5,
                                   shuffle), with Zstd(level 3), and uncompressed; print its shape
  bench.py zarr PATH EPOCHS        read the array at PATH plane by plane with zarr-python, EPOCHS
                                   times; print each epoch's seconds and bytes as JSON. PATH may be
                                   an http:// URL: zarr-python then reads through fsspec (FSStore,
                                   aiohttp), fetching the chunks of a plane concurrently
  bench.py loader PATH EPOCHS W    read it with a PyTorch DataLoader of W worker processes, each
                                   opening the array with zarr-python, one plane per item, shuffled
                                   (a new order every epoch); print each epoch's seconds and bytes
  bench.py npymap PATH EPOCHS      map the .npy file at PATH with np.load(mmap_mode='r') and copy
                                   the first eighth of the array along axis 0 out of the map,
                                   EPOCHS times; print each epoch's seconds and bytes
  bench.py files PATH EPOCHS       read each chunk file of the array at PATH in grid order with
                                   Python's open().read(), as zarr-python reads a chunk (without its
                                   decode and copy), EPOCHS times; print each epoch's seconds and bytes
  bench.py dask PATH EPOCHS        the mean of the array at PATH with dask (da.from_zarr, its threads),
                                   EPOCHS times; print each epoch's seconds and bytes
  bench.py xarray PATH EPOCHS      the mean of the array at PATH as xarray users take it: open_zarr of
                                   a group holding it (a scratch directory with a .zgroup and a link
                                   to PATH), .mean() with dask's threads, EPOCHS times
  bench.py writenc OUT             write OUT/raw.nc, a netCDF classic file (CDF-2) holding the array
                                   of OUT/raw.zarr as variable "raw" (t, y, x)
  bench.py netcdf PATH EPOCHS      read the 3-dimensional variable of the netCDF file at PATH plane
                                   by plane with netCDF4-python (netCDF-C's nc_get_vara; no masking or
                                   scaling), EPOCHS times; print each epoch's seconds and bytes

With ZFUSE_BENCH_SYNC set, each reader stops after each epoch until zfuse bench has counted
what the mount answered (epoch_done).
"""
import json
import os
import sys
import time

import numcodecs
import numpy as np
import zarr

SIDE = 1024  # planes are SIDE x SIDE float32: 4 MiB


def write(out, nbytes, side):
    n = max(1, nbytes // (4 * SIDE * SIDE))
    shape = (n, SIDE, SIDE)
    compressors = {
        "blosc": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
        "zstd": numcodecs.Zstd(level=3),
        "raw": None,
    }
    arrays = {
        name: zarr.open(f"{out}/{name}.zarr", mode="w", shape=shape, chunks=(1, side, side), dtype="<f4", compressor=c)
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
    for a in arrays.values():
        a.attrs["_ARRAY_DIMENSIONS"] = ["t", "y", "x"]  # xarray's dimension names
    print(json.dumps({"shape": shape}))


def epoch_done(e):
    """With ZFUSE_BENCH_SYNC set, say on stderr that epoch e (1, 2, ...) is
    done and wait for a line on stdin: zfuse bench counts the requests the
    epoch made meanwhile, outside its time."""
    if os.environ.get("ZFUSE_BENCH_SYNC"):
        print(f"zfuse-bench: epoch {e} done", file=sys.stderr, flush=True)
        sys.stdin.readline()


def read_zarr(path, epochs):
    a = zarr.open(path, mode="r")
    out = []
    for _ in range(epochs):
        t = time.perf_counter()
        n = 0
        for i in range(a.shape[0]):
            n += a[i].nbytes
        out.append({"seconds": time.perf_counter() - t, "bytes": n})
        epoch_done(len(out))
    print(json.dumps(out))


def chunk_keys(path):
    """The chunk keys of the v2 array at path, in grid (C) order."""
    with open(f"{path}/.zarray") as f:
        meta = json.load(f)
    grid = [-(-s // c) for s, c in zip(meta["shape"], meta["chunks"])]
    sep = meta.get("dimension_separator") or "."
    return [sep.join(map(str, i)) for i in np.ndindex(*grid)]


def read_files(path, epochs):
    keys = chunk_keys(path)
    out = []
    for _ in range(epochs):
        t = time.perf_counter()
        n = 0
        for k in keys:
            with open(f"{path}/{k}", "rb") as f:
                n += len(f.read())
        out.append({"seconds": time.perf_counter() - t, "bytes": n})
        epoch_done(len(out))
    print(json.dumps(out))


def read_dask(path, epochs):
    import dask.array as da

    out = []
    for _ in range(epochs):
        t = time.perf_counter()
        a = da.from_zarr(path)
        a.mean().compute()
        out.append({"seconds": time.perf_counter() - t, "bytes": a.nbytes})
        epoch_done(len(out))
    print(json.dumps(out))


def read_xarray(path, epochs):
    import shutil
    import tempfile

    import xarray as xr

    with open(f"{path}/.zattrs") as f:
        if "_ARRAY_DIMENSIONS" not in json.load(f):
            sys.exit(f"bench.py xarray: {path} has no _ARRAY_DIMENSIONS: a store written before zfuse bench wrote them")
    group = tempfile.mkdtemp(prefix="zfuse-bench-xarray-")
    out = []
    try:
        with open(f"{group}/.zgroup", "w") as f:
            f.write('{"zarr_format": 2}')
        os.symlink(path, f"{group}/a")
        for _ in range(epochs):
            t = time.perf_counter()
            ds = xr.open_zarr(group, consolidated=False)
            ds["a"].mean().compute()
            out.append({"seconds": time.perf_counter() - t, "bytes": ds["a"].nbytes})
            ds.close()
            epoch_done(len(out))
    finally:
        shutil.rmtree(group)
    print(json.dumps(out))


def write_nc(out):
    import netCDF4

    a = zarr.open(f"{out}/raw.zarr", mode="r")
    with netCDF4.Dataset(f"{out}/raw.nc.tmp", "w", format="NETCDF3_64BIT_OFFSET") as ds:
        for name, n in zip(("t", "y", "x"), a.shape):
            ds.createDimension(name, n)
        v = ds.createVariable("raw", "f4", ("t", "y", "x"))
        for i in range(0, a.shape[0], 8):
            v[i : i + 8] = a[i : i + 8]
    os.rename(f"{out}/raw.nc.tmp", f"{out}/raw.nc")


def read_netcdf(path, epochs):
    import netCDF4

    out = []
    for _ in range(epochs):
        t = time.perf_counter()
        n = 0
        with netCDF4.Dataset(path) as ds:
            v = next(v for v in ds.variables.values() if v.ndim == 3)
            v.set_auto_maskandscale(False)
            for i in range(v.shape[0]):
                n += v[i].nbytes
        out.append({"seconds": time.perf_counter() - t, "bytes": n})
        epoch_done(len(out))
    print(json.dumps(out))


def read_loader(path, epochs, workers):
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Planes(Dataset):
        def __init__(self, path):
            self.path = path
            self.a = None
            self.n = zarr.open(path, mode="r").shape[0]

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            if self.a is None:  # opened in each worker process
                self.a = zarr.open(self.path, mode="r")
            return torch.from_numpy(self.a[i])

    torch.manual_seed(0)
    loader = DataLoader(Planes(path), batch_size=1, shuffle=True, num_workers=workers, persistent_workers=True)
    out = []
    for _ in range(epochs):
        t = time.perf_counter()
        n = 0
        for x in loader:
            n += x.numel() * x.element_size()
        out.append({"seconds": time.perf_counter() - t, "bytes": n})
        epoch_done(len(out))
    print(json.dumps(out))


def read_npymap(path, epochs):
    out = []
    for _ in range(epochs):
        t = time.perf_counter()
        a = np.load(path, mmap_mode="r")
        part = np.array(a[: max(1, a.shape[0] // 8)])
        out.append({"seconds": time.perf_counter() - t, "bytes": part.nbytes})
        del a
        epoch_done(len(out))
    print(json.dumps(out))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "write":
        write(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif cmd == "zarr":
        read_zarr(sys.argv[2], int(sys.argv[3]))
    elif cmd == "loader":
        read_loader(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif cmd == "npymap":
        read_npymap(sys.argv[2], int(sys.argv[3]))
    elif cmd == "files":
        read_files(sys.argv[2], int(sys.argv[3]))
    elif cmd == "dask":
        read_dask(sys.argv[2], int(sys.argv[3]))
    elif cmd == "xarray":
        read_xarray(sys.argv[2], int(sys.argv[3]))
    elif cmd == "writenc":
        write_nc(sys.argv[2])
    elif cmd == "netcdf":
        read_netcdf(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)
