#!/usr/bin/python3
"""The store and the readers of requests_test.go: what each reader users
have makes the mount answer, epoch by epoch.

usage: /usr/bin/python3 requests.py COMMAND ARGS...

  write OUT        write OUT/t.zarr: a group with one float32 array "t",
                   16 x 1024 x 1024 in chunks of 1 x 128 x 128 (64 KiB),
                   Blosc(lz4, shuffle), _ARRAY_DIMENSIONS (time, y, x), its
                   last plane all fill value (those 4 chunks not stored)
  zarr MNT         zarr-python reads t plane by plane
  xarray MNT       xarray: open_zarr(MNT).t.mean(), computed by dask's threads
  loader MNT       a PyTorch DataLoader of 2 worker processes, shuffled
                   planes, each worker opening t with zarr-python
  netcdf4 MNT      netCDF4-python (netCDF-C's NCZarr) reads t whole
  npymap MNT       np.load(mmap_mode='r') of MNT/t.npy (an --as-npy mount),
                   copied out whole

Each reader checks the values it read and exits 1 with a message if they
are not the array's.
"""
import sys

import numpy as np

SHAPE, CHUNKS = (16, 1024, 1024), (1, 128, 128)


def want():
    a = np.arange(np.prod(SHAPE), dtype="<f4").reshape(SHAPE) % 1000.0
    a[-1] = -1  # the fill value: these chunks are not stored
    return a


def check(name, got):
    if not np.array_equal(np.asarray(got), want()):
        sys.exit(f"{name}: values differ from the array written")


def write(out):
    import numcodecs
    import zarr

    g = zarr.open_group(f"{out}/t.zarr", mode="w")
    t = g.create_dataset("t", shape=SHAPE, chunks=CHUNKS, dtype="<f4", fill_value=-1,
                         compressor=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE))
    t.attrs["_ARRAY_DIMENSIONS"] = ["time", "y", "x"]
    t[:-1] = want()[:-1]


def read_zarr(mnt):
    import zarr

    t = zarr.open_group(mnt, mode="r")["t"]
    check("zarr", np.stack([t[i] for i in range(t.shape[0])]))


def read_xarray(mnt):
    import xarray as xr

    ds = xr.open_zarr(mnt)  # the fill value is NaN to xarray
    m, w = float(ds.t.mean().compute()), float(want()[:-1].mean(dtype="f8"))
    if abs(m - w) > 1e-3 * abs(w):
        sys.exit(f"xarray: mean {m}, want {w}")


def read_loader(mnt):
    import torch
    import zarr
    from torch.utils.data import DataLoader, Dataset

    class Planes(Dataset):
        def __init__(self):
            self.t = None

        def __len__(self):
            return SHAPE[0]

        def __getitem__(self, i):
            if self.t is None:  # opened in each worker process
                self.t = zarr.open_group(mnt, mode="r")["t"]
            return i, torch.from_numpy(self.t[i])

    got = np.empty(SHAPE, dtype="<f4")
    for i, x in DataLoader(Planes(), batch_size=1, shuffle=True, num_workers=2):
        got[int(i[0])] = x[0].numpy()
    check("loader", got)


def read_netcdf4(mnt):
    import netCDF4

    with netCDF4.Dataset(f"file://{mnt}#mode=zarr,file") as ds:
        v = ds["t"]
        v.set_auto_maskandscale(False)
        check("netcdf4", v[:])


def read_npymap(mnt):
    a = np.load(f"{mnt}/t.npy", mmap_mode="r")
    check("npymap", np.array(a))


if __name__ == "__main__":
    cmd, arg = sys.argv[1], sys.argv[2]
    {"write": write, "zarr": read_zarr, "xarray": read_xarray, "loader": read_loader,
     "netcdf4": read_netcdf4, "npymap": read_npymap}[cmd](arg)
