#!/usr/bin/env bash
# demo.sh: on a fresh Debian 12 machine, as root: install what zfuse needs
# (make, Go, FUSE, zarr-python), build zfuse, write a small compressed Zarr
# store with zarr-python, mount it in the background, read it through the
# mount, and unmount.
set -euo pipefail
cd "$(dirname "$0")/.."

GO_VERSION=${GO_VERSION:-1.26.8}

# 1. Tools: make and curl from Debian, Go from go.dev (Debian 12 has Go 1.19).
if ! command -v make >/dev/null || ! command -v curl >/dev/null; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends make curl ca-certificates
fi
PATH=$PATH:/usr/local/go/bin
if ! go version 2>/dev/null | grep -Eq 'go1\.(2[6-9]|[3-9][0-9])'; then
	echo "== installing Go $GO_VERSION into /usr/local/go"
	rm -rf /usr/local/go
	curl -fsSL "https://go.dev/dl/go${GO_VERSION}.linux-$(dpkg --print-architecture).tar.gz" | tar -C /usr/local -xz
fi
ln -sf /usr/local/go/bin/go /usr/local/go/bin/gofmt /usr/local/bin/ 2>/dev/null || true

# 2. Packages (fuse3, zarr-python, numcodecs, xarray) and the build.
make deps
make build

# 3. A small compressed store: Blosc/zstd temperatures, zlib counts.
work=$(mktemp -d)
store=$work/example.zarr mnt=$work/mnt
mkdir "$mnt"
/usr/bin/python3 - "$store" <<'PY'
import sys, numpy as np, zarr
from numcodecs import Blosc, Zlib
g = zarr.open_group(sys.argv[1], mode="w")
t = g.create_dataset("temperature", shape=(365, 180, 360), chunks=(30, 90, 90), dtype="<f4",
                     compressor=Blosc("zstd", 5, Blosc.SHUFFLE))
t[:] = (15 + 10 * np.sin(np.linspace(0, 6.28, 365))[:, None, None]
        + np.linspace(-20, 20, 180)[None, :, None]).astype("f4") + np.zeros((1, 1, 360), "f4")
g.create_dataset("counts", data=np.arange(1000, dtype="<i8"), chunks=(100,), compressor=Zlib(5))
zarr.consolidate_metadata(sys.argv[1])
PY
echo "== stored (compressed): $(du -sh "$store" | cut -f1)"

# 4. Mount in the background and wait until the kernel shows the mount.
./bin/zfuse mount "$store" "$mnt" 2>"$work/zfuse.log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; cat "$work/zfuse.log"; rm -rf "$work"' EXIT
for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
mountpoint "$mnt"

echo "== ls -l (chunk files have their decoded size)"
ls -l "$mnt/temperature" | head -6
echo "== cat temperature/.zarray (no compression)"
cat "$mnt/temperature/.zarray"; echo
echo "== zarr-python through the mount"
/usr/bin/python3 - "$store" "$mnt" <<'PY'
import sys, numpy as np, zarr
orig, mnt = zarr.open_group(sys.argv[1], mode="r"), zarr.open_consolidated(sys.argv[2], mode="r")
t = mnt["temperature"]
print("compressor through the mount:", t.compressor)
print("temperature[100, 90, :4] =", t[100, 90, :4])
assert np.array_equal(t[...], orig["temperature"][...]) and np.array_equal(mnt["counts"][...], orig["counts"][...])
print("whole store equals the original: yes")
PY
echo "== unmount (SIGTERM)"
kill -TERM $pid
wait $pid && echo "zfuse exited 0"
