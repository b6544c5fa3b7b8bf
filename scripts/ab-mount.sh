#!/usr/bin/env bash
# ab-mount.sh: the mount of an earlier commit against this tree's, alternating,
# a fresh mount for every reader run, so that a change's effect on what
# readers get is measured side by side on the same machine and store.
#
#   bash scripts/ab-mount.sh STORES REV [ROUNDS]
#
# STORES holds blosc.zarr (zfuse bench --keep --dir D writes D/1MiB and
# D/64KiB); REV is any git revision (the one before a change). Each round reads
# STORES/blosc.zarr through each mount for 3 epochs with zarr-python 2.13
# (plane by plane) and with a file tool (open, read whole, close each chunk file
# in grid order), printing GB/s per epoch; run as root where the mount needs it.
set -euo pipefail
stores=$(realpath "$1"); rev=$2; rounds=${3:-5}
repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
git -C "$repo" worktree add -q --detach "$tmp/old" "$rev"
(cd "$tmp/old" && go build -o "$tmp/zfuse-old" ./cmd/zfuse)
git -C "$repo" worktree remove --force "$tmp/old"
(cd "$repo" && go build -o "$tmp/zfuse-new" ./cmd/zfuse)
cat >"$tmp/read.py" <<'PY'
import os, sys, time
import zarr
kind, root, epochs = sys.argv[1], os.path.join(sys.argv[2], "blosc.zarr"), int(sys.argv[3])
rates = []
for _ in range(epochs):
    t, n = time.perf_counter(), 0
    if kind == "zarr":
        z = zarr.open(root, mode="r")
        for i in range(z.shape[0]):
            n += z[i].nbytes
    else:
        names = sorted((f for f in os.listdir(root) if not f.startswith(".")),
                       key=lambda s: tuple(map(int, s.split("."))))
        for f in names:
            with open(os.path.join(root, f), "rb", buffering=0) as fh:
                n += len(fh.read())
    rates.append(n / (time.perf_counter() - t) / 1e9)
print(" ".join(f"{r:.2f}" for r in rates))
PY
echo "ab-mount: $rev against $(git -C "$repo" rev-parse --short HEAD) (+ working tree), $stores, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%F %H:%M UTC')"
for r in $(seq "$rounds"); do
	for kind in zarr files; do
		for b in old new; do
			m=$(mktemp -d "$tmp/mnt.XXXX")
			"$tmp/zfuse-$b" mount "$stores" "$m" 2>"$m.log" &
			pid=$!
			until grep -q "msg=mounted" "$m.log"; do
				kill -0 "$pid" || { cat "$m.log" >&2; exit 1; }
				sleep 0.1
			done
			echo "round $r $kind $b: $(/usr/bin/python3 "$tmp/read.py" "$kind" "$m" 3)"
			kill -TERM "$pid"; wait "$pid" || true
			rmdir "$m"
		done
	done
done
