#!/usr/bin/python3
"""Read the netCDF files of a zfuse --as-nc mount and compare.

usage: /usr/bin/python3 nccheck.py COMMAND ARGS...

  zarr ORIG MOUNT ROOTNAME   every group of the v2 store ORIG, read by
                             zarr-python 2.13, is the file MOUNT/PATH.nc
                             (ROOTNAME.nc for the root; an array at the
                             root: ROOTNAME.nc of one variable ROOTNAME),
                             read by netCDF4-python with masking and
                             scaling off: each array of a netCDF type is a
                             variable of the type zfuse maps it to, with
                             its shape (and NAME_strlen for S<n>), its
                             dimension names, its values (bools 0/1, S<n>
                             as characters, datetimes as int64 with CF
                             units), _FillValue its fill_value, the
                             attributes as stored; the other arrays are
                             absent; the format is CDF-5 exactly where a
                             type needs it; the group's attributes are the
                             global ones. Arrays zarr-python cannot read
                             are only logged.
  values MOUNT ROOTNAME WANT every array of WANT (a JSON file: {"path":
                             {"shape": [...], "data": [...]}}, data in C
                             order, booleans as 0/1) is the variable of its
                             name in the file of its group, holding those
                             values
  absent MOUNT ROOTNAME PATH...
                             none of the arrays PATH is a variable of its
                             group's file
  xarray ORIG FILE ENGINE    xarray (2023.01) opening FILE with ENGINE
                             (netcdf4, scipy) gives the dataset
                             xr.open_zarr(ORIG) gives: identical, values,
                             dtypes, coordinates, encoded times, masks
                             and scale factors decoded alike
  writecf OUT                write the CF groups the tests read: OUT/cf.zarr
                             (xarray: a time coordinate, scale/offset and
                             fill values, a bool and a string variable,
                             coordinates; CDF-5 for its int64 times) and
                             OUT/cf2.zarr (every type CDF-2 has: times as
                             float64), layout.zarr (order F and big-endian
                             arrays), big.zarr, 16x64x64 float32 in
                             8x32x32 chunks, for the C reader, and
                             slab.zarr, 128x256x256 float32 (32 MiB) in
                             1x128x128 chunks (Blosc-LZ4), for the slab
                             reads of TestNetCDFSlab
  native ORIG MOUNT          every array of ORIG (writecf's layout.zarr:
                             order F, big-endian, both) through MOUNT, a
                             --layout native mount: its .zarray says order C
                             and a little-endian dtype, zarr-python reads
                             the same values as from ORIG, and so does
                             netCDF-C's NCZarr (netCDF4-python), which
                             reads them wrong through a plain mount
  nativev2 MOUNT WANT        every array of WANT (as for values) through
                             MOUNT, a --as-v2 --layout native mount of a v3
                             store: zarr-python reads those values, its
                             dtype little-endian
  slab ORIG ARRAY START COUNT  print, one a line as %.9g, the elements of
                             zarr-python's ORIG/ARRAY in the hyperslab
                             START (comma-separated) of COUNT, as
                             testdata/ncread.c prints them

Prints one JSON object per check, {"name": ..., "err": ...}; err is empty
when the check passed (slab prints numbers). Exits 0 unless the script
itself fails.
"""
import json
import math
import os
import sys

import netCDF4
import numpy as np
import zarr

from check import checked, report  # check.py, beside this file


def log(name, msg):
    print(json.dumps({"name": name, "log": msg}), flush=True)


CF_TIME = {"D": "days", "h": "hours", "m": "minutes", "s": "seconds", "ms": "milliseconds",
           "us": "microseconds", "ns": "nanoseconds"}


def nc_type(dt):
    """The numpy dtype a netCDF4 reader gets for a Zarr dtype dt, as zfuse
    maps it (bool: None, which the file's format decides; datetimes:
    int64 where their unit has a CF name), or "" for none."""
    if dt.kind in "iu" or (dt.kind == "f" and dt.itemsize in (4, 8)):
        return np.dtype(dt.str[1:])
    if dt.kind == "b":
        return None
    if dt.kind == "S":
        return np.dtype("S1")
    if dt.kind in "Mm" and np.datetime_data(dt)[0] in CF_TIME and np.datetime_data(dt)[1] == 1:
        return np.dtype("i8")
    return ""


def needs_cdf5(dt):
    t = nc_type(dt)
    return t is not None and t != "" and (t.kind == "u" or t.itemsize == 8 and t.kind == "i")


def expected(z, cdf5):
    """The netCDF dtype and values of zarr array z."""
    v = z[...]
    t = nc_type(z.dtype)
    if t is None:
        t = np.dtype("u1" if cdf5 else "i1")
    if z.dtype.kind == "S":
        n = z.dtype.itemsize
        return t, np.frombuffer(np.ascontiguousarray(v).tobytes(), "S1").reshape(z.shape + (n,))
    if z.dtype.kind in "Mm":
        return t, np.ascontiguousarray(v).view("i8")
    return t, np.asarray(v).astype(t)


def same(want, got):
    want, got = np.asarray(want), np.asarray(got)
    if want.dtype != got.dtype or want.shape != got.shape:
        return f"got {got.dtype}{got.shape}, want {want.dtype}{want.shape}"
    ok = np.array_equal(want, got, equal_nan=True) if want.dtype.kind == "f" else np.array_equal(want, got)
    if not ok:
        bad = np.argwhere(~((want == got) | ((want != want) & (got != got))) if want.dtype.kind == "f" else want != got)
        i = tuple(bad[0]) if len(bad) else ()
        return f"values differ first at {i}: got {got[i]!r}, want {want[i]!r}"
    return ""


def layout(orig):
    """{group path: [array names]} of the v2 store orig, from its files:
    every directory holding .zarray is an array of its parent, every
    other directory with .zgroup (and the root) a group."""
    groups = {}
    for d, dirs, files in os.walk(orig):
        dirs.sort()
        rel = os.path.relpath(d, orig)
        rel = "" if rel == "." else rel
        if ".zarray" in files:
            parent, name = os.path.split(rel)
            groups.setdefault(parent, []).append(name)
            dirs[:] = []  # arrays are leaves
        elif ".zgroup" in files or rel == "":
            groups.setdefault(rel, [])
    return groups


def open_array(orig, rel):
    """zarr-python's view of the array at rel, a legacy nested one (no
    dimension_separator, "0/0" keys) through a NestedDirectoryStore."""
    with open(os.path.join(orig, rel, ".zarray")) as f:
        meta = json.load(f)
    store = zarr.DirectoryStore(orig)
    d = os.path.join(orig, rel)
    if "dimension_separator" not in meta and any(os.path.isdir(os.path.join(d, e)) for e in os.listdir(d)):
        store = zarr.NestedDirectoryStore(orig)
    return zarr.open_array(store=store, path=rel, mode="r")


def zattrs(orig, rel):
    """The .zattrs at rel, as stored (zarr-python 2.13 fails on some UTF-8)."""
    p = os.path.join(orig, rel, ".zattrs")
    if not os.path.exists(p):
        return {}
    with open(p, encoding="utf-8") as f:
        return json.load(f)


def nc_path(mount, group, rootname):
    return os.path.join(mount, rootname + ".nc") if group == "" else os.path.join(mount, group + ".nc")


def attr_equal(want, got):
    """Whether the netCDF attribute got holds the JSON attribute want."""
    if isinstance(want, str):
        return isinstance(got, str) and got == want
    if isinstance(want, (bool, int, float)):
        g = np.asarray(got, dtype="f8").ravel() if not isinstance(got, str) else np.array([])
        return g.size == 1 and (g[0] == float(want) or (want != want and g[0] != g[0]))
    if isinstance(want, list) and want and all(isinstance(x, (int, float)) for x in want):
        return not isinstance(got, str) and np.array_equal(np.asarray(got, dtype="f8").ravel(), np.asarray(want, dtype="f8"), equal_nan=True)
    return got == json.dumps(want, separators=(",", ":"), ensure_ascii=False)


def check_var(name, z, attrs, d, cdf5):
    v = d.variables[name]
    v.set_auto_maskandscale(False)
    v.set_auto_chartostring(False)
    t, want = expected(z, cdf5)
    if v.dtype != t:
        return f"variable of type {v.dtype}, want {t}"
    dims = attrs.get("_ARRAY_DIMENSIONS")
    if not isinstance(dims, list) or len(dims) != z.ndim:
        dims = [f"{name}_dim{i}" for i in range(z.ndim)]
    dims = list(dims)
    if z.dtype.kind == "S":
        dims.append(f"{name}_strlen")
    if len(v.dimensions) != len(dims) or any(g != w and not g.startswith(w + "_") for g, w in zip(v.dimensions, dims)):
        return f"dimensions {v.dimensions}, want {dims} (or renamed NAME_LENGTH)"
    err = same(want, v[...] if v.ndim else np.asarray(v.getValue()))
    if err:
        return err
    fill = z.fill_value
    have = v.ncattrs()
    if fill is not None and z.dtype.kind in "iuf":
        if "_FillValue" not in have or not attr_equal(float(fill), v.getncattr("_FillValue")):
            return f"_FillValue {v.getncattr('_FillValue') if '_FillValue' in have else None}, want {fill}"
    elif fill is None and "_FillValue" in have and z.dtype.kind in "iuf":
        return f"_FillValue {v.getncattr('_FillValue')}, want none"
    if z.dtype.kind == "M":
        unit = CF_TIME[np.datetime_data(z.dtype)[0]]
        if v.getncattr("units") != f"{unit} since 1970-01-01":
            return f"units {v.getncattr('units')!r}"
    if z.dtype.kind == "b" and (v.getncattr("dtype") != "bool" or "_FillValue" in have):
        return f"attributes {have}: want dtype = bool and no _FillValue"
    for k, a in attrs.items():
        if k in ("_ARRAY_DIMENSIONS", "_FillValue"):
            continue
        if k not in have or not attr_equal(a, v.getncattr(k)):
            return f"attribute {k} = {v.getncattr(k) if k in have else None!r}, want {a!r}"
    return ""


def check_zarr(orig, mount, rootname):
    groups = {"": [""]} if os.path.exists(os.path.join(orig, ".zarray")) else layout(orig)
    for path, names in sorted(groups.items()):
        f = nc_path(mount, path, rootname)
        if not os.path.exists(f):
            report(f"{path or '/'} file", f"{f} does not exist")
            continue
        d = netCDF4.Dataset(f)
        present = {}
        for name in names:
            rel = os.path.join(path, name) if name else ""
            var = name or rootname
            try:
                z = open_array(orig, rel or ".")
            except Exception as e:  # a codec option numcodecs 0.11 lacks
                log(f"{path}/{var}", f"zarr-python cannot open it: {e}")
                continue
            if nc_type(z.dtype) == "":
                report(f"{path}/{var} left out", f"variable {var} of {z.dtype} in the file" if var in d.variables else "")
                continue
            try:
                z[...]
            except Exception as e:
                log(f"{path}/{var}", f"zarr-python cannot read it: {e}")
                continue
            present[var] = (z, zattrs(orig, rel))
        cdf5 = any(needs_cdf5(z.dtype) for z, _ in present.values())
        model = "NETCDF3_64BIT_DATA" if cdf5 else "NETCDF3_64BIT_OFFSET"
        report(f"{path or '/'} format", "" if d.data_model == model else f"{d.data_model}, want {model}")
        for var, (z, attrs) in sorted(present.items()):
            if var not in d.variables:
                report(f"{path}/{var}", f"no variable {var} in {f}")
                continue
            checked(f"{path}/{var}", check_var, var, z, attrs, d, d.data_model == "NETCDF3_64BIT_DATA")
        if names != [""]:
            def gattrs():
                for k, a in zattrs(orig, path).items():
                    if k not in d.ncattrs() or not attr_equal(a, d.getncattr(k)):
                        return f"global attribute {k} = {d.getncattr(k) if k in d.ncattrs() else None!r}, want {a!r}"
            checked(f"{path or '/'} attributes", gattrs)
        d.close()


def split(path, rootname):
    group, name = os.path.split(path)
    return group, name


def check_values(mount, rootname, want_file):
    with open(want_file) as f:
        want = json.load(f)
    for path, w in sorted(want.items()):
        group, name = split(path, rootname)

        def one():
            d = netCDF4.Dataset(nc_path(mount, group, rootname))
            v = d.variables[name]
            v.set_auto_maskandscale(False)
            got = np.asarray(v[...] if v.ndim else v.getValue())
            if list(got.shape) != w["shape"]:
                return f"shape {got.shape}, want {w['shape']}"
            if not np.array_equal(got.astype("f8").ravel(), np.asarray(w["data"], dtype="f8"), equal_nan=True):
                return f"values {got.ravel()[:8]}, want {w['data'][:8]}"
            d.close()
        checked(path, one)


def check_absent(mount, rootname, paths):
    for path in paths:
        group, name = split(path, rootname)
        f = nc_path(mount, group, rootname)
        d = netCDF4.Dataset(f)
        report(f"{path} left out", f"variable {name} in {f}" if name in d.variables else "")
        d.close()


def check_xarray(orig, nc, engine):
    import xarray as xr
    z = xr.open_zarr(orig)
    d = xr.open_dataset(nc, engine=engine)
    if d.identical(z):
        report(f"xarray {engine}: identical")
        return
    diffs = []
    for k in sorted(set(z.variables) | set(d.variables)):
        if k not in d.variables or k not in z.variables:
            diffs.append(f"{k}: only in {'zarr' if k in z.variables else 'netCDF'}")
        elif not d[k].identical(z[k]):
            diffs.append(f"{k}: {d[k].dtype} {dict(d[k].attrs)} vs zarr {z[k].dtype} {dict(z[k].attrs)}; equal values {d[k].equals(z[k])}")
    if d.attrs != z.attrs:
        diffs.append(f"global attributes {d.attrs} vs zarr {z.attrs}")
    report(f"xarray {engine}: identical", "\n".join(diffs) or "not identical")


def write_cf(out):
    import pandas as pd
    import xarray as xr
    rng = np.random.default_rng(0)
    t = pd.date_range("2000-01-01", periods=8, freq="6H")
    lat, lon = np.linspace(-60, 60, 5), np.arange(0.0, 360.0, 60.0)
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), (280 + 10 * rng.random((8, 5, 6))).astype("f4")),
         "precip": (("time", "lat", "lon"), 0.1 * np.arange(240.0).reshape(8, 5, 6)),
         "land": (("lat", "lon"), np.arange(30).reshape(5, 6) % 3 == 0),
         "count": (("time",), np.arange(8, dtype="i2")),
         "station": (("lat",), np.array([b"a", b"bb", b"", b"dddd", b"eeeee"])),
         "elev": (("lat", "lon"), rng.normal(500, 100, (5, 6)))},
        coords={"time": t, "lat": lat, "lon": lon, "height": 2.0},
        attrs={"title": "a CF group", "Conventions": "CF-1.8", "history": "written by nccheck.py", "version": 3})
    ds.t2m.attrs.update(units="K", long_name="2 m temperature", standard_name="air_temperature")
    ds.t2m.values[0, 0, 0] = np.nan
    ds.precip.attrs.update(units="mm")
    ds.precip.values[2, 2, 2] = np.nan
    ds.precip.encoding.update(dtype="i2", scale_factor=0.1, add_offset=0.0, _FillValue=-32767)
    ds.elev.encoding.update(_FillValue=-999.0)
    ds.lat.attrs.update(units="degrees_north", standard_name="latitude")
    ds.lon.attrs.update(units="degrees_east", standard_name="longitude")
    ds.to_zarr(os.path.join(out, "cf.zarr"), mode="w")
    ds2 = ds.drop_vars("station")
    ds2.time.encoding.update(dtype="f8", units="hours since 2000-01-01")
    ds2.to_zarr(os.path.join(out, "cf2.zarr"), mode="w")
    g = zarr.open_group(os.path.join(out, "layout.zarr"), mode="w")
    for name, dtype, order in [("f", "<f8", "F"), ("b", ">i4", "C"), ("fb", ">i2", "F"), ("fb3", ">f4", "F")]:
        shape = (5, 7, 3) if name == "fb3" else (5, 7)
        a = g.create_dataset(name, data=np.arange(np.prod(shape)).reshape(shape).astype(dtype), chunks=(2, 3, 2)[:len(shape)],
                             order=order, compressor=zarr.Zlib(1))
        a.attrs["_ARRAY_DIMENSIONS"] = ["y", "x", "z"][:len(shape)]
    z = zarr.open(os.path.join(out, "big.zarr"), mode="w", shape=(16, 64, 64), chunks=(8, 32, 32), dtype="<f4",
                  compressor=zarr.Blosc("lz4", 5, 1))
    z[...] = (np.arange(16 * 64 * 64, dtype="f4") / 7).reshape(16, 64, 64)
    z.attrs["_ARRAY_DIMENSIONS"] = ["time", "y", "x"]
    # scripts/nc-bench.py's array at 1/16 of its size.
    z = zarr.open(os.path.join(out, "slab.zarr"), mode="w", shape=(128, 256, 256), chunks=(1, 128, 128), dtype="<f4",
                  compressor=zarr.Blosc("lz4", 5, 1))
    x = np.linspace(0, 20, 256, dtype="f4")
    z[...] = (np.sin(x)[None, :] * np.cos(x)[:, None])[None] * (1 + np.arange(128, dtype="f4")[:, None, None] / 100)
    z.attrs["_ARRAY_DIMENSIONS"] = ["time", "y", "x"]


def check_native(orig, mount):
    url = "file://" + os.path.abspath(mount) + "#mode=zarr,file"
    d = netCDF4.Dataset(url)
    d.set_auto_mask(False)
    for rel in layout(orig)[""]:
        def one(rel=rel):
            want = open_array(orig, rel)[...]
            with open(os.path.join(mount, rel, ".zarray")) as f:
                meta = json.load(f)
            if meta["order"] != "C" or meta["dtype"][0] == ">":
                return f".zarray says order {meta['order']}, dtype {meta['dtype']}"
            if e := same(want.astype(want.dtype.newbyteorder("=")), zarr.open(mount, mode="r")[rel][...].astype(want.dtype.newbyteorder("="))):
                return "zarr-python: " + e
            if e := same(want.astype(want.dtype.newbyteorder("=")), np.asarray(d.variables[rel][...])):
                return "NCZarr: " + e
        checked(f"{rel} native", one)
    d.close()


def check_native_v2(mount, want_file):
    with open(want_file) as f:
        want = json.load(f)
    root = zarr.open(mount, mode="r")
    for path, w in sorted(want.items()):
        def one(path=path, w=w):
            z = root[path]
            if z.dtype.byteorder == ">":
                return f"dtype {z.dtype}"
            got = np.asarray(z[...])
            if list(got.shape) != w["shape"] or not np.array_equal(got.astype("f8").ravel(), np.asarray(w["data"], dtype="f8")):
                return f"values {got.ravel()[:8]}, want {w['data'][:8]}"
        checked(path, one)


def slab(orig, array, start, count):
    s = [int(x) for x in start.split(",")]
    c = [int(x) for x in count.split(",")]
    z = zarr.open(orig, mode="r")
    if array:
        z = z[array]
    for x in np.asarray(z[tuple(slice(a, a + n) for a, n in zip(s, c))], dtype="f4").ravel():
        print("%.9g" % x)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "zarr":
        check_zarr(*args)
    elif cmd == "values":
        check_values(*args)
    elif cmd == "absent":
        check_absent(args[0], args[1], args[2:])
    elif cmd == "xarray":
        check_xarray(*args)
    elif cmd == "writecf":
        write_cf(*args)
    elif cmd == "native":
        check_native(*args)
    elif cmd == "nativev2":
        check_native_v2(*args)
    elif cmd == "slab":
        slab(*args)
    else:
        sys.exit(f"unknown command {cmd}")


main()
