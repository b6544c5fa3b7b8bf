#!/usr/bin/env bash
# demo.sh: on a fresh Debian 12 machine, as root: install what the demo needs
# (make, Go, FUSE, zarr-python, netCDF-C's ncdump), build zfuse, write a
# small compressed Zarr store with zarr-python, show that netCDF-C reads it
# wrong without an error, mount it in the background, read it through the
# mount (ls, cat, zarr-python, ncdump), print zfuse info, and unmount.
# It exits 0 when every step worked; CI runs it (.ci/run) and checks its
# output.
set -euo pipefail
cd "$(dirname "$0")/.."

GO_VERSION=${GO_VERSION:-1.26.8}

# 1. Tools: make and curl from Debian, Go from go.dev (Debian 12 has Go 1.19),
# and the Debian packages: fuse3 (fusermount3), zarr-python 2.13 with
# numcodecs, netcdf-bin (ncdump). Nothing is installed that is there already.
pkgs=(make curl ca-certificates fuse3 python3-zarr python3-numcodecs python3-numpy netcdf-bin)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "== installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
PATH=$PATH:/usr/local/go/bin
if ! go version 2>/dev/null | grep -Eq 'go1\.(2[6-9]|[3-9][0-9])'; then
	echo "== installing Go $GO_VERSION into /usr/local/go"
	rm -rf /usr/local/go
	curl -fsSL "https://go.dev/dl/go${GO_VERSION}.linux-$(dpkg --print-architecture).tar.gz" | tar -C /usr/local -xz
fi
ln -sf /usr/local/go/bin/go /usr/local/go/bin/gofmt /usr/local/bin/ 2>/dev/null || true

# 2. The build.
echo "== make build"
make build

# 3. A small compressed store: Blosc/zstd temperatures, zlib counts, with
# xarray's dimension names (netCDF-C reads them too).
work=$(mktemp -d)
store=$work/example.zarr mnt=$work/mnt
mkdir "$mnt"
pid=
# On any exit: stop zfuse if it still runs, show its log if something
# failed, remove the work directory, and keep the exit status.
cleanup() {
	local rc=$?
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		{ wait "$pid" || true; } 2>/dev/null
	fi
	if ((rc != 0)) && [[ -f $work/zfuse.log ]]; then
		echo "== zfuse's log"
		cat "$work/zfuse.log"
	fi
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT

/usr/bin/python3 - "$store" <<'PY'
import sys, numpy as np, zarr
from numcodecs import Blosc, Zlib
g = zarr.open_group(sys.argv[1], mode="w")
t = g.create_dataset("temperature", shape=(365, 180, 360), chunks=(30, 90, 90), dtype="<f4",
                     compressor=Blosc("zstd", 5, Blosc.SHUFFLE))
t[:] = (15 + 10 * np.sin(np.linspace(0, 6.28, 365))[:, None, None]
        + np.linspace(-20, 20, 180)[None, :, None]).astype("f4") + np.zeros((1, 1, 360), "f4")
t.attrs["_ARRAY_DIMENSIONS"] = ["time", "lat", "lon"]
c = g.create_dataset("counts", data=np.arange(1000, dtype="<i8"), chunks=(100,), compressor=Zlib(5))
c.attrs["_ARRAY_DIMENSIONS"] = ["i"]
zarr.consolidate_metadata(sys.argv[1])
PY
echo "== stored (compressed): $(du -sh "$store" | cut -f1)"

# counts[0:6] as ncdump prints them from the store at $1 (a netCDF-C URL).
ncdump_counts() {
	local out
	out=$(ncdump -v counts "$1")
	out=${out#*counts = } # the data section: values over many lines, up to " ;"
	out=${out%% ;*}
	echo $out | cut -d, -f1-6 # unquoted: one line
}
echo "== netCDF-C (ncdump) reads the store itself: exit 0, wrong values (it has no zlib filter for Zarr)"
echo "counts[0:6] = $(ncdump_counts "file://$store#mode=zarr,file")"

# 4. Mount in the background; the mount is ready when zfuse logs "mounted".
./bin/zfuse mount "$store" "$mnt" 2>"$work/zfuse.log" &
pid=$!
for _ in $(seq 600); do
	grep -q 'msg=mounted' "$work/zfuse.log" && break
	kill -0 "$pid" 2>/dev/null || { echo "zfuse mount exited before mounting"; exit 1; }
	sleep 0.1
done
grep 'msg=mounted' "$work/zfuse.log"

echo "== ls -l temperature (chunk files have their decoded size: 30x90x90 float32 = 972000 bytes)"
listing=$(ls -l "$mnt/temperature")
sed -n 2,6p <<<"$listing" # after "total"
echo "... $(($(wc -l <<<"$listing") - 1)) chunk files"
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
echo "== netCDF-C (ncdump) through the mount"
counts=$(ncdump_counts "file://$mnt#mode=zarr,file")
echo "counts[0:6] = $counts"
[[ $counts == "0, 1, 2, 3, 4, 5" ]] || { echo "ncdump through the mount read the wrong values"; exit 1; }
echo "== zfuse info"
./bin/zfuse info "$store"
echo "== unmount (SIGTERM)"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
echo "== zfuse's log"
cat "$work/zfuse.log"
if ((rc != 0)); then
	echo "zfuse exited $rc"
	exit 1
fi
echo "zfuse exited 0"
