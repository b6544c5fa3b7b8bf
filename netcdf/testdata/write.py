#!/usr/bin/python3
"""Write a netCDF classic file with netCDF4-python from a JSON description.

usage: /usr/bin/python3 write.py SPEC.json OUT.nc

SPEC is {"format": "NETCDF3_64BIT_OFFSET" (or _CLASSIC, _64BIT_DATA),
"dims": [[name, length], ...], "attrs": [ATTR, ...], "vars": [{"name",
"dtype", "dims": [name, ...], "attrs": [ATTR, ...]}, ...]}, an ATTR being
[name, dtype, values] (a numpy dtype and a list of numbers, hex strings of
the big-endian bits for floats) or [name, "text", string]. A variable's
_FillValue, if any, is its first attribute, given to createVariable.
netcdf/header_test.go compares the header Encode writes with this file's.
"""
import json
import struct
import sys

import netCDF4
import numpy as np


def value(dtype, values):
    if dtype == "text":
        return values
    if dtype in ("f4", "f8"):
        fmt = ">f" if dtype == "f4" else ">d"
        return np.array([struct.unpack(fmt, bytes.fromhex(v))[0] for v in values], dtype=dtype)
    return np.array(values, dtype=dtype)


def main():
    spec = json.load(open(sys.argv[1]))
    d = netCDF4.Dataset(sys.argv[2], "w", format=spec["format"])
    for name, n in spec["dims"]:
        d.createDimension(name, n)
    for name, dtype, values in spec["attrs"]:
        d.setncattr(name, value(dtype, values))
    for v in spec["vars"]:
        attrs = v["attrs"]
        fill = None
        if attrs and attrs[0][0] == "_FillValue":
            fill = value(attrs[0][1], attrs[0][2])[0]
            attrs = attrs[1:]
        x = d.createVariable(v["name"], v["dtype"], v["dims"], fill_value=fill)
        for name, dtype, values in attrs:
            x.setncattr(name, value(dtype, values))
    d.close()


main()
