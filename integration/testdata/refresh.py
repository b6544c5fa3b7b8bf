#!/usr/bin/python3
"""Write, change and read the stores of TestRefresh (refresh_test.go).

usage: /usr/bin/python3 refresh.py write|rewrite|append SRC RAW
       /usr/bin/python3 refresh.py read DIR

SRC is an int32 array at the store root, Blosc-LZ4 compressed, of shape
(10, 8) in chunks of (4, 4), so the last row of chunks is a partial edge
chunk; RAW is the same array written uncompressed, whose chunk files are
the decoded chunks zfuse must serve for SRC. Each step does the same to
both, with zarr-python 2.13 (DirectoryStore: a chunk is written to a
temporary file and renamed into place):

  write    the array, values 0, 1, 2, ... in C order
  rewrite  two chunks, (0, 0) and (1, 1), get new values
  append   four rows of 7 (shape (14, 8)): the edge chunks (2, *) are
           rewritten and the chunks (3, *) are new

read opens the array at DIR with zarr-python and prints
{"shape": [...], "data": [...]} (C order).
"""
import json
import sys

import numcodecs
import numpy as np
import zarr
from numcodecs import Blosc

assert zarr.__version__.startswith("2.13"), zarr.__version__
assert numcodecs.__version__.startswith("0.11"), numcodecs.__version__


def main():
    step = sys.argv[1]
    if step == "read":
        a = zarr.open(sys.argv[2], mode="r")
        json.dump({"shape": list(a.shape), "data": a[...].ravel().tolist()}, sys.stdout)
        return
    for path, compressor in ((sys.argv[2], Blosc("lz4", 5, Blosc.SHUFFLE)), (sys.argv[3], None)):
        if step == "write":
            a = zarr.open(path, mode="w", shape=(10, 8), chunks=(4, 4), dtype="<i4",
                          compressor=compressor, fill_value=0)
            a[...] = np.arange(80, dtype="<i4").reshape(10, 8)
            continue
        a = zarr.open(path, mode="r+")
        if step == "rewrite":
            a[0:4, 0:4] = -np.arange(16, dtype="<i4").reshape(4, 4) - 1
            a[4:8, 4:8] = 1000 + np.arange(16, dtype="<i4").reshape(4, 4)
        elif step == "append":
            a.append(np.full((4, 8), 7, dtype="<i4"))
        else:
            sys.exit(f"unknown step {step!r}")


if __name__ == "__main__":
    main()
