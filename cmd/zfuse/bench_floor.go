package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/internal/bytesize"
	"github.com/zfuse/zfuse/zarr"
)

// This file is zfuse bench's FUSE floor: what any FUSE server costs on this
// machine. `zfuse bench floor` mounts a minimal server with the mount's
// FUSE options (fusemount.FUSEOptions: timeouts, 1 MiB requests, no splice,
// read-only; the kernel readahead raised as the mount raises it) whose
// chunk files have the names and sizes of a store's, served from one
// buffer it already holds: no store, no decode, no allocation of the
// bytes per request. OPEN is answered ENOSYS, so that the kernel opens
// files without asking, as under the mount's no-open serving path (or, on
// a kernel without no-open mode, FOPEN_KEEP_CACHE, as the open path). The
// bench reads it with each reader, in a process of its own as it does a
// mount, so that the server never shares CPUs with the reader's process.

// benchFloor is zfuse bench floor [--kernel-readahead N] STORE MOUNTPOINT:
// it serves the files of the array at STORE (an uncompressed store) at
// MOUNTPOINT until SIGINT/SIGTERM. Metadata documents (names starting with
// ".") are served as stored; every other file has its stored size and the
// bytes of the store's largest file, read once at the start.
func benchFloor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("zfuse bench floor", flag.ContinueOnError)
	fl.SetOutput(stderr)
	ra := Size(16 << 20)
	var transport fusemount.Transport
	fl.Var(&transport, "transport", "how FUSE requests reach the floor, `auto|uring|dev`, as for zfuse mount")
	fl.Var(&ra, "kernel-readahead", "the kernel's readahead for the mount, set when running as root, as zfuse mount does; 0 leaves the kernel default")
	if err := parseFlags(fl, args, 2, stdout); err != nil { // usage.go
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	files, err := floorFiles(fl.Arg(0))
	if err != nil {
		return fmt.Errorf("bench floor: %w", err)
	}
	dir := fl.Arg(1)
	root := &floorDir{files: files}
	srv, err := fusemount.Serve(dir, root, fusemount.FUSEOptions(fusemount.Config{FsName: "zfuse-floor"}, log), transport, log)
	if err != nil {
		return fmt.Errorf("bench floor: %w", err)
	}
	serving := fusemount.NoOpen
	if srv.KernelSettings().Flags64()&fuse.CAP_NO_OPEN_SUPPORT == 0 {
		serving = fusemount.Open
	}
	root.noOpen.Store(serving == fusemount.NoOpen)
	if ra > 0 {
		if _, _, err := fusemount.SetKernelReadahead(dir, int64(ra)); err != nil {
			log.Debug("kernel readahead left as it was", "mountpoint", dir, "err", err)
		}
	}
	log.Info("mounted", "mountpoint", dir, "files", len(files), "serving", serving.String(), "transport", srv.Transport.String())
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		if err := srv.Unmount(); err != nil {
			return fmt.Errorf("bench floor: unmounting %s: %w", dir, err)
		}
		<-done
	}
	log.Info("unmounted", "mountpoint", dir)
	return nil
}

// A floorFile is one file of the floor: its name and bytes. The bytes of
// chunk files share one buffer.
type floorFile struct {
	name string
	data []byte
}

// floorFiles returns the files of the floor for the store at dir.
func floorFiles(dir string) ([]floorFile, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []floorFile
	var sizes []int64
	var largest string
	var most int64 = -1
	for _, e := range es {
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("%s: not a regular file (the floor serves one array's files)", filepath.Join(dir, e.Name()))
		}
		fi, err := e.Info()
		if err != nil {
			return nil, err
		}
		f := floorFile{name: e.Name()}
		if strings.HasPrefix(e.Name(), ".") {
			if f.data, err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
				return nil, err
			}
		} else if fi.Size() > most {
			largest, most = e.Name(), fi.Size()
		}
		files, sizes = append(files, f), append(sizes, fi.Size())
	}
	if largest == "" {
		return files, nil
	}
	buf, err := os.ReadFile(filepath.Join(dir, largest))
	if err != nil {
		return nil, err
	}
	if int64(len(buf)) != most {
		return nil, fmt.Errorf("%s changed while read", filepath.Join(dir, largest))
	}
	for i := range files {
		if files[i].data == nil {
			files[i].data = buf[:sizes[i]]
		}
	}
	return files, nil
}

// floorDir is the floor's root: every file a child, known from the start.
type floorDir struct {
	fusefs.Inode
	files  []floorFile
	noOpen atomic.Bool // set once mounted, before the bench is told so
}

var _ fusefs.NodeOnAdder = (*floorDir)(nil)

func (d *floorDir) OnAdd(ctx context.Context) {
	for _, f := range d.files {
		n := &floorNode{data: f.data, noOpen: &d.noOpen, born: time.Now()}
		d.AddChild(f.name, d.NewPersistentInode(ctx, n, fusefs.StableAttr{Mode: fuse.S_IFREG}), false)
	}
}

// A floorNode is one file of the floor.
type floorNode struct {
	fusefs.Inode
	data   []byte // immutable
	noOpen *atomic.Bool
	born   time.Time
}

var (
	_ fusefs.NodeGetattrer = (*floorNode)(nil)
	_ fusefs.NodeOpener    = (*floorNode)(nil)
	_ fusefs.NodeReader    = (*floorNode)(nil)
	_ fusefs.NodeFlusher   = (*floorNode)(nil)
)

// Getattr answers what the mount answers for a chunk file (fs: mount.attr).
func (n *floorNode) Getattr(ctx context.Context, _ fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = fuse.S_IFREG | 0o444
	out.Nlink = 1
	out.Size = uint64(len(n.data))
	out.Blocks = (out.Size + 511) / 512
	out.Blksize = 1 << 20
	out.SetTimes(&n.born, &n.born, &n.born)
	return 0
}

// Open answers ENOSYS (no-open mode: no more OPENs, and the page cache
// kept across opens), or keeps the page cache where the kernel has no
// no-open mode. Writes are refused, as the mount refuses them.
func (n *floorNode) Open(ctx context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	if n.noOpen.Load() {
		return nil, 0, syscall.ENOSYS
	}
	return nil, fuse.FOPEN_KEEP_CACHE, 0
}

// Read answers from the bytes held: a slice of them, no copy but the one
// into /dev/fuse.
func (n *floorNode) Read(ctx context.Context, _ fusefs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= int64(len(n.data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(n.data[off:min(off+int64(len(dest)), int64(len(n.data)))]), 0
}

// Flush answers ENOSYS, as the mount does: no FLUSH on every close.
func (n *floorNode) Flush(context.Context, fusefs.FileHandle) syscall.Errno { return syscall.ENOSYS }

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
	m, err := b.floor(ctx, dir) // bench_mount.go
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
