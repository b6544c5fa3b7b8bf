package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zfuse/zfuse/internal/bytesize"
	"github.com/zfuse/zfuse/zarr"
)

// The FUSE floor is a minimal FUSE server that already holds the bytes
// (fusemount/floor), which the bench runs as zfuse bench floor: what any
// FUSE server costs on this machine. This file reads it.

// viaFloor reads set's chunk files with reader from a fresh FUSE floor
// (zfuse bench floor) of the uncompressed store: the names, sizes and
// metadata of the store, the bytes of one chunk. The readers of .npy
// files read a floor of one .npy file instead (npyFloor).
func (b *bencher) viaFloor(ctx context.Context, set *storeSet, reader string) error {
	dir := filepath.Join(set.dir, storeRaw)
	if reader == readNpy || reader == readMap {
		var err error
		if dir, err = b.npyFloor(set); err != nil {
			return err
		}
	}
	m, err := b.floor(ctx, dir) // mount.go
	if err != nil {
		return err
	}
	epochs, rerr := b.read(ctx, set, reader, m.dir, nil)
	st, serr := m.stop()
	if err := errors.Join(rerr, serr); err != nil {
		return err
	}
	c := cell{set.name, "", reader, viaFloor, "", ""}
	b.res.Add(c, epochs)
	b.res.addMount(c, st)
	b.say("%s %s floor(%s, %s): %s; peak RSS %s, CPU %.2f s", set.name, reader, st.serving, st.transport, epochString(epochs), bytesize.Format(st.hwm), st.cpu.Seconds())
	return nil
}

// npyFloor returns a directory holding one file, raw.npy, of the size of
// the array's .npy file under --as-npy: its header, then zeros (a sparse
// file), for the floor to serve as the readers of .npy files read it. It
// is made once per chunk size, in the bench's scratch directory.
func (b *bencher) npyFloor(set *storeSet) (string, error) {
	dir := filepath.Join(b.work, "npy-floor-"+set.name)
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	zarray, err := os.ReadFile(filepath.Join(set.dir, storeRaw, zarr.ArrayFile))
	if err != nil {
		return "", err
	}
	a, err := zarr.ParseV2(zarray)
	if err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	h, err := a.NpyHeader()
	if err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.Create(filepath.Join(dir, "raw.npy"))
	if err != nil {
		return "", err
	}
	_, err = f.Write(h)
	if err == nil {
		err = f.Truncate(int64(len(h)) + a.FlatLen())
	}
	return dir, errors.Join(err, f.Close())
}
