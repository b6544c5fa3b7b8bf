// Package floor is zfuse bench's FUSE floor: what any FUSE server costs
// on this machine. Serve mounts a minimal server with a mount's FUSE
// options (fusemount.FUSEOptions: timeouts, 1 MiB requests, no splice,
// read-only; the kernel readahead raised as a mount raises it) whose
// chunk files have the names and sizes of a store's, served from one
// buffer it already holds: no store, no decode, no allocation of the
// bytes per request. OPEN is answered ENOSYS, so that the kernel opens
// files without asking, as under a mount's no-open serving path (or, on a
// kernel without no-open mode, FOPEN_KEEP_CACHE, as the open path).
//
// The one fact to know: it is the go-fuse side of the bench, and the only
// one: the bench harness (internal/bench) runs it as a process of its own
// (zfuse bench floor), as it runs a mount, so that the server never
// shares CPUs with the reader's process.
package floor

import (
	"context"
	"fmt"
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
)

// A Config says how the floor is served.
type Config struct {
	Transport       fusemount.Transport // how FUSE requests reach it, as for a mount
	KernelReadahead int64               // the kernel's readahead for it, set when running as root; 0 leaves the default
	Log             *slog.Logger        // nil means discard; "mounted" and "unmounted" at Info
	Ready           func()              // nil, or called once it is mounted, after "mounted" is logged
}

// Serve serves the files of the array at store (an uncompressed store) at
// dir until ctx ends, then unmounts it. Metadata documents (names starting
// with ".") are served as stored; every other file has its stored size and
// the bytes of the store's largest file, read once at the start. Its log
// says when it is mounted, on which serving path and transport.
func Serve(ctx context.Context, store, dir string, cfg Config) error {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	files, err := readFiles(store)
	if err != nil {
		return fmt.Errorf("bench floor: %w", err)
	}
	root := &root{files: files}
	srv, err := fusemount.Serve(dir, root, fusemount.FUSEOptions(fusemount.Config{FsName: "zfuse-floor", KernelReadahead: cfg.KernelReadahead}, log), cfg.Transport, log)
	if err != nil {
		return fmt.Errorf("bench floor: %w", err)
	}
	serving := fusemount.NoOpen
	if srv.KernelSettings().Flags64()&fuse.CAP_NO_OPEN_SUPPORT == 0 {
		serving = fusemount.Open
	}
	root.noOpen.Store(serving == fusemount.NoOpen)
	if cfg.KernelReadahead > 0 {
		if _, _, err := fusemount.SetKernelReadahead(dir, cfg.KernelReadahead); err != nil {
			log.Debug("kernel readahead left as it was", "mountpoint", dir, "err", err)
		}
	}
	log.Info("mounted", "mountpoint", dir, "files", len(files), "serving", serving.String(), "transport", srv.Transport.String())
	if cfg.Ready != nil {
		cfg.Ready()
	}
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

// A file is one file of the floor: its name and bytes. The bytes of chunk
// files share one buffer.
type file struct {
	name string
	data []byte
}

// readFiles returns the files of the floor for the store at dir.
func readFiles(dir string) ([]file, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []file
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
		f := file{name: e.Name()}
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

// root is the floor's root: every file a child, known from the start.
type root struct {
	fusefs.Inode
	files  []file
	noOpen atomic.Bool // set once mounted, before the bench is told so
}

var _ fusefs.NodeOnAdder = (*root)(nil)

func (d *root) OnAdd(ctx context.Context) {
	for _, f := range d.files {
		n := &node{data: f.data, noOpen: &d.noOpen, born: time.Now()}
		d.AddChild(f.name, d.NewPersistentInode(ctx, n, fusefs.StableAttr{Mode: fuse.S_IFREG}), false)
	}
}

// A node is one file of the floor.
type node struct {
	fusefs.Inode
	data   []byte // immutable
	noOpen *atomic.Bool
	born   time.Time
}

var (
	_ fusefs.NodeGetattrer = (*node)(nil)
	_ fusefs.NodeOpener    = (*node)(nil)
	_ fusefs.NodeReader    = (*node)(nil)
	_ fusefs.NodeFlusher   = (*node)(nil)
)

// Getattr answers what a mount answers for a chunk file.
func (n *node) Getattr(ctx context.Context, _ fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = fuse.S_IFREG | 0o444
	out.Nlink = 1
	out.Size = uint64(len(n.data))
	out.Blocks = (out.Size + 511) / 512
	out.Blksize = fusemount.BlockSize
	out.SetTimes(&n.born, &n.born, &n.born)
	return 0
}

// Open answers ENOSYS (no-open mode: no more OPENs, and the page cache
// kept across opens), or keeps the page cache where the kernel has no
// no-open mode. Writes are refused, as a mount refuses them.
func (n *node) Open(ctx context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
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
func (n *node) Read(ctx context.Context, _ fusefs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= int64(len(n.data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(n.data[off:min(off+int64(len(dest)), int64(len(n.data)))]), 0
}

// Flush answers ENOSYS, as a mount does: no FLUSH on every close.
func (n *node) Flush(context.Context, fusefs.FileHandle) syscall.Errno { return syscall.ENOSYS }
