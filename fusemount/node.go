package fusemount

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/zfuse/zfuse/internal/procfs"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/tree"
)

// unconfirmedTimeout is how long the kernel keeps the entry of an
// unconfirmed file (tree.Node.Unconfirmed) before looking it up again:
// not at all, the next stat or open asks again (0 would mean go-fuse's
// default for all entries, an hour).
const unconfirmedTimeout = time.Nanosecond

// dirNode is a directory of the mount. With tree.Config.Refresh, what its
// path serves is looked up again once the node is older than that (node);
// else its node never changes.
type dirNode struct {
	fusefs.Inode
	t *tree.Tree
	m *mount

	mu sync.Mutex // guards n and at
	n  *tree.Node
	at time.Time // when n was looked up
}

func newDirNode(t *tree.Tree, n *tree.Node, m *mount) *dirNode {
	return &dirNode{t: t, n: n, m: m, at: time.Now()}
}

// node returns what d's path serves: d.n, looked up again when it is no
// longer fresh (Tree.Fresh), so that a directory's metadata read again (an
// array's grown shape) is what its lookups and listings see.
func (d *dirNode) node(ctx context.Context) (*tree.Node, error) {
	d.mu.Lock()
	n, at := d.n, d.at
	d.mu.Unlock()
	if d.t.Fresh(at) {
		return n, nil
	}
	at = time.Now()
	cur, err := d.t.Lookup(ctx, n.Path())
	if err == nil && !cur.IsDir() {
		err = &fs.PathError{Op: "lookup", Path: n.Path(), Err: syscall.ENOENT}
	}
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.m.place.setDir(d.n, cur) // a new array, perhaps: the placer follows
	d.n, d.at = cur, at
	d.mu.Unlock()
	return cur, nil
}

// cur returns d.n as it is now, without looking it up again.
func (d *dirNode) cur() *tree.Node {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

// fileNode is a file of the mount: one version of it. Its node never
// changes; with tree.Config.Refresh another version of the file is another
// fileNode, with an inode of its own (mount.inode).
type fileNode struct {
	fusefs.Inode
	t *tree.Tree
	n *tree.Node
	m *mount

	// stale is set once another version has replaced this one (replaced):
	// its bytes are gone from the store, so a READ that reaches zfuse for
	// it, from a reader that held the file open across the change, is
	// ESTALE rather than the new version's bytes completing the old.
	stale atomic.Bool

	ptMu    sync.Mutex      // guards pt and ptOpens
	pt      *readahead.File // under Passthrough, the chunk every open is handed while any is open (passthrough)
	ptOpens int             // opens handed pt whose release has not ended
}

// mount holds what every node of one mount shares.
type mount struct {
	born  time.Time // reported as every file's times
	procs tgids     // the process of each reading thread

	ready   chan struct{} // closed once serving is set
	serving Serving       // the serving path; set once, before ready is closed
	refused string        // why not passthrough, where it was wanted; set with serving

	n     serveCounters
	place placer // chunk files the kernel may know, to push chunks into

	onLookup func(pid uint32) // Config.onLookup

	guard   *guard    // aborts the connection if this process dies; nil: none
	closing sync.Once // close

	after afterRelease // what a RELEASE leaves to do once go-fuse is done with it
}

// A chunkHandle is one open of a chunk file under Passthrough: the open
// decoded chunk, which the kernel reads itself (PassthroughFd), shared with
// the file's other opens (fileNode.passthrough). It is safe for concurrent
// use.
type chunkHandle struct {
	f    *readahead.File
	node *fileNode
}

var (
	_ fusefs.FilePassthroughFder = (*chunkHandle)(nil)
	_ fusefs.FileReleaser        = (*chunkHandle)(nil)
)

// PassthroughFd gives go-fuse the file to register with the kernel.
func (h *chunkHandle) PassthroughFd() (int, bool) {
	fd := h.f.Fd()
	return fd, fd >= 0
}

// Release lets go of the chunk when the kernel closes the file, once
// go-fuse has let go of its backing file (see fileNode.passthrough).
func (h *chunkHandle) Release(ctx context.Context) syscall.Errno {
	h.node.m.after.add(ctx, h.node.releasePassthrough)
	return 0
}

// passthrough returns the chunk file to hand a passthrough open of f: the
// one f's other opens have, while any is open; else the tree opens it
// (which decodes the chunk if no tier holds it, and is the read readahead
// sees).
//
// go-fuse registers one backing file per inode with the kernel, the file
// of the open that finds none registered, and hands it to every later open
// of the inode until the last of them is released. So every open must be
// handed that one file, which must not go back to the loader until go-fuse
// has unregistered it: the loader reuses the memory of a chunk it let go
// for another chunk, and an open handed the registered file would read
// that other chunk's bytes (seen, as wrong bytes, with RELEASE and OPEN of
// one file answered at once on two threads). A release therefore ends only
// after go-fuse's (releasePassthrough, through afterRelease).
func (f *fileNode) passthrough(ctx context.Context) (*readahead.File, error) {
	f.ptMu.Lock()
	if f.pt != nil {
		f.ptOpens++
		defer f.ptMu.Unlock()
		return f.pt, nil
	}
	f.ptMu.Unlock()
	cf, err := f.t.Open(ctx, f.n, f.pid(ctx))
	if err != nil {
		return nil, err
	}
	f.ptMu.Lock()
	defer f.ptMu.Unlock()
	if f.pt == nil {
		f.pt = cf
	} else {
		cf.Close() // another open came first
	}
	f.ptOpens++
	return f.pt, nil
}

// releasePassthrough ends the release of one passthrough open of f, and
// only then counts it: a file counted released is one the next open opens
// anew.
func (f *fileNode) releasePassthrough() {
	f.ptMu.Lock()
	defer f.ptMu.Unlock()
	if f.ptOpens--; f.ptOpens == 0 {
		f.pt.Close()
		f.pt = nil
	}
	f.m.n.releases.Add(1)
}

// afterRelease holds what a RELEASE of this mount leaves to do once go-fuse
// has released the file itself: go-fuse calls a handle's Release before it
// lets go of the inode's backing file. The counting RawFileSystem runs it
// after go-fuse's Release returns. Requests are told apart by their cancel
// channel, which go-fuse gives the handle in its context. It is safe for
// concurrent use; the zero value is ready.
type afterRelease struct {
	m sync.Map // cancel channel -> func()
}

// add has fn run after the release whose context is ctx; at once when ctx
// is not go-fuse's.
func (a *afterRelease) add(ctx context.Context, fn func()) {
	c, ok := ctx.(*fuse.Context)
	if a == nil || !ok || c.Cancel == nil {
		fn()
		return
	}
	if _, dup := a.m.LoadOrStore(c.Cancel, fn); dup {
		fn() // not reached: one handle per RELEASE
	}
}

// run runs what the release with cancel channel cancel left.
func (a *afterRelease) run(cancel <-chan struct{}) {
	if a == nil {
		return
	}
	if fn, ok := a.m.LoadAndDelete(cancel); ok {
		fn.(func())()
	}
}

var (
	_ fusefs.NodeLookuper       = (*dirNode)(nil)
	_ fusefs.NodeReaddirer      = (*dirNode)(nil)
	_ fusefs.NodeOpendirHandler = (*dirNode)(nil)
	_ fusefs.NodeGetattrer      = (*dirNode)(nil)
	_ fusefs.NodeCreater        = (*dirNode)(nil)
	_ fusefs.NodeMkdirer        = (*dirNode)(nil)
	_ fusefs.NodeMknoder        = (*dirNode)(nil)
	_ fusefs.NodeSymlinker      = (*dirNode)(nil)
	_ fusefs.NodeLinker         = (*dirNode)(nil)
	_ fusefs.NodeUnlinker       = (*dirNode)(nil)
	_ fusefs.NodeRmdirer        = (*dirNode)(nil)
	_ fusefs.NodeRenamer        = (*dirNode)(nil)
	_ fusefs.NodeSetattrer      = (*dirNode)(nil)
	_ fusefs.NodeOpener         = (*fileNode)(nil)
	_ fusefs.NodeReader         = (*fileNode)(nil)
	_ fusefs.NodeGetattrer      = (*fileNode)(nil)
	_ fusefs.NodeSetattrer      = (*fileNode)(nil)
	_ fusefs.NodeWriter         = (*fileNode)(nil)
	_ fusefs.NodeSetxattrer     = (*fileNode)(nil)
	_ fusefs.NodeFlusher        = (*fileNode)(nil)
	_ fusefs.NodeOnForgetter    = (*fileNode)(nil)
	_ fusefs.NodeOnForgetter    = (*dirNode)(nil)
)

// BlockSize is the st_blksize of every file of a mount, 4 KiB as on
// ext4: the size readers buffer by. Python's buffered open() allocates a
// buffer of st_blksize for every file it opens; at 1 MiB, each
// open().read() of a chunk file (zarr-python's read of a chunk) also
// mapped and faulted in a fresh MiB for its result, as glibc gave the
// heap back at every close, and ran at a fifth of the speed of the same
// read of an ext4 file (docs/performance.md). The kernel's requests to
// the mount do not depend on it.
const BlockSize = 4096

// attr fills out with n's presented attributes.
func (m *mount) attr(n *tree.Node, out *fuse.Attr) {
	if n.IsDir() {
		out.Mode = fuse.S_IFDIR | 0o555
		out.Nlink = 2
	} else {
		out.Mode = fuse.S_IFREG | 0o444
		out.Nlink = 1
		out.Size = uint64(n.Size())
		out.Blocks = (out.Size + 511) / 512
	}
	out.Blksize = BlockSize
	t := m.born
	out.SetTimes(&t, &t, &t)
}

// inode returns the inode for n below parent, reusing one the kernel
// already knows, unless the Tree refreshes (tree.Config.Refresh), or n may
// change (tree.Node.MayChange), and that one serves another version of
// the file (replaced): otherwise an inode is kept for the mount's life.
// A new version gets a new inode (a new node id): the kernel keeps a page
// cache per inode, so none of the old version's pages can complete a read
// of the new one, under every serving path.
func (m *mount) inode(ctx context.Context, parent *fusefs.Inode, t *tree.Tree, n *tree.Node) *fusefs.Inode {
	if ch := parent.GetChild(n.Name()); ch != nil && ((t.Refresh() == 0 && !n.MayChange()) || !m.replaced(ctx, t, ch, n)) {
		return ch
	}
	if n.IsDir() {
		ch := parent.NewInode(ctx, newDirNode(t, n, m), fusefs.StableAttr{Mode: fuse.S_IFDIR})
		m.place.setDir(nil, n)
		return ch
	}
	f := &fileNode{t: t, n: n, m: m}
	ch := parent.NewInode(ctx, f, fusefs.StableAttr{Mode: fuse.S_IFREG})
	if n.IsChunk() {
		m.place.add(f) // once NewInode has set up its Inode
	}
	return ch
}

// replaced reports whether n, just looked up, is not what the inode ch
// serves: another kind of file, or another version of it (changed). Then
// the decoded copies of the old chunk are dropped (Tree.Forget), the
// kernel is told to drop ch's cached pages, and ch is stale: a reader that
// holds the old file open gets ESTALE for what it has not read yet, never
// the new version's bytes (under passthrough it keeps reading its memfd,
// the old version). The caller gives n a new inode.
func (m *mount) replaced(ctx context.Context, t *tree.Tree, ch *fusefs.Inode, n *tree.Node) bool {
	var old *fileNode
	switch op := ch.Operations().(type) {
	case *dirNode:
		return !n.IsDir()
	case *fileNode:
		old = op
	default:
		return false
	}
	if !old.n.Changed(n) {
		return false
	}
	old.stale.Store(true)
	m.n.replaced.Add(1)
	t.Log().DebugContext(ctx, "file changed in the store: a new inode", "key", n.Path(), "was", old.n.Version(), "now", n.Version())
	t.Forget(old.n)
	// ENOENT: the kernel has forgotten the inode already.
	if e := ch.NotifyContent(0, 0); e != 0 && e != syscall.ENOENT {
		t.Log().DebugContext(ctx, "cannot drop the kernel's cache of a changed file", "key", n.Path(), "err", e)
	}
	return true
}

func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	d.m.n.lookups.Add(1)
	if c, ok := fuse.FromContext(ctx); ok {
		if int64(c.Pid) == d.m.place.look.pid.Load() {
			d.m.n.introduced.Add(1)
		}
		if d.m.onLookup != nil {
			d.m.onLookup(c.Pid)
		}
	}
	dn, err := d.node(ctx)
	if err != nil {
		return nil, d.t.Errno(ctx, "lookup", path.Join(d.cur().Path(), name), err)
	}
	n, err := d.t.Child(ctx, dn, name)
	if err != nil {
		return nil, d.t.Errno(ctx, "lookup", path.Join(dn.Path(), name), err)
	}
	d.m.attr(n, &out.Attr)
	if n.Unconfirmed() || n.MayChange() { // looked up again at its next use
		out.SetEntryTimeout(unconfirmedTimeout)
	}
	return d.m.inode(ctx, d.EmbeddedInode(), d.t, n), 0
}

func (d *dirNode) Readdir(ctx context.Context) (fusefs.DirStream, syscall.Errno) {
	dn, err := d.node(ctx)
	if err == nil {
		var ns []*tree.Node
		if ns, err = d.t.Children(ctx, dn); err == nil {
			return dirStream(ns), 0
		}
	}
	return nil, d.t.Errno(ctx, "readdir", d.cur().Path(), err)
}

// OpendirHandle opens d for listing. Unless the tree refreshes, the kernel
// keeps the listing (FOPEN_CACHE_DIR, FOPEN_KEEP_CACHE), and answers the
// next listing of d from it, with no READDIR: a reader that lists an
// array's chunks in each epoch (netCDF-C does) then costs an OPENDIR and
// a RELEASEDIR a listing, whatever the number of chunks.
func (d *dirNode) OpendirHandle(ctx context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
	var keep uint32
	if d.t.Refresh() == 0 {
		keep = fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE
	}
	return &dirHandle{d: d}, keep, 0
}

// A dirHandle is one open of a directory: its listing, made by the first
// READDIR (go-fuse calls one at a time per handle).
type dirHandle struct {
	d  *dirNode
	ds fusefs.DirStream
}

var (
	_ fusefs.FileReaddirenter = (*dirHandle)(nil)
	_ fusefs.FileSeekdirer    = (*dirHandle)(nil)
	_ fusefs.FileReleasedirer = (*dirHandle)(nil)
)

func (h *dirHandle) stream(ctx context.Context) syscall.Errno {
	if h.ds != nil {
		return 0
	}
	ds, errno := h.d.Readdir(ctx)
	h.ds = ds
	return errno
}

func (h *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if errno := h.stream(ctx); errno != 0 {
		return nil, errno
	}
	if !h.ds.HasNext() {
		return nil, 0
	}
	e, errno := h.ds.Next()
	return &e, errno
}

func (h *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if errno := h.stream(ctx); errno != 0 {
		return errno
	}
	if sd, ok := h.ds.(fusefs.FileSeekdirer); ok {
		return sd.Seekdir(ctx, off)
	}
	return syscall.ENOTSUP
}

func (h *dirHandle) Releasedir(context.Context, uint32) {
	if h.ds != nil {
		h.ds.Close()
	}
}

// dirStream lists ns.
func dirStream(ns []*tree.Node) fusefs.DirStream {
	es := make([]fuse.DirEntry, len(ns))
	for i, n := range ns {
		es[i] = fuse.DirEntry{Name: n.Name(), Mode: fuse.S_IFREG}
		if n.IsDir() {
			es[i].Mode = fuse.S_IFDIR
		}
	}
	return fusefs.NewListDirStream(es)
}

func (d *dirNode) Getattr(ctx context.Context, _ fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.m.attr(d.cur(), &out.Attr)
	return 0
}

func (f *fileNode) Getattr(ctx context.Context, _ fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.m.attr(f.n, &out.Attr)
	return 0
}

// Open refuses writing, then opens the file as the mount's serving path
// says (see Serving): under NoOpen it answers ENOSYS, after which the
// kernel sends no more OPENs; under Passthrough a chunk file's open
// decodes the chunk (readahead sees the read here, since no READ will
// follow) and hands the kernel the file holding it; otherwise the open
// keeps the page cache (FOPEN_KEEP_CACHE), which is valid for the life of
// the mount. An O_DIRECT open asks to bypass the page cache, and gets
// direct I/O (FOPEN_DIRECT_IO) for that open only, and no handle: a memfd
// cannot do direct I/O, so it is not passed through, and go-fuse 2.12
// counts every handle's RELEASE against the backing files of the inode's
// passthrough opens (one racing it then failed with EIO).
func (f *fileNode) Open(ctx context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
	f.m.n.opens.Add(1)
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	serving, err := f.m.servingPath(ctx)
	if err != nil {
		return nil, 0, f.errno(ctx, "open", err)
	}
	direct := flags&syscall.O_DIRECT != 0
	switch {
	case serving == NoOpen:
		return nil, 0, syscall.ENOSYS
	case direct:
		return nil, fuse.FOPEN_DIRECT_IO, 0
	case serving == Passthrough && f.n.IsChunk():
		pt, err := f.passthrough(ctx)
		if err != nil {
			return nil, 0, f.errno(ctx, "open", err)
		}
		f.m.n.handles.Add(1)
		f.m.n.passthroughOpens.Add(1)
		return &chunkHandle{f: pt, node: f}, 0, 0
	}
	return nil, fuse.FOPEN_KEEP_CACHE, 0
}

// Read serves [off, off+len(dest)) of the file. The reader that readahead
// tracks is the calling thread's process (see tgids).
func (f *fileNode) Read(ctx context.Context, fh fusefs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f.m.n.reads.Add(1)
	if f.n.IsChunk() {
		defer f.m.n.chunkReadTimes.observe(time.Now())
	}
	var b []byte
	var err error
	if h, ok := fh.(*chunkHandle); ok { // a passthrough open the kernel read through the daemon after all
		var n int
		n, err = h.f.ReadAt(dest[:max(min(int64(len(dest)), h.f.Size()-off), 0)], off)
		b = dest[:n]
		if errors.Is(err, io.EOF) {
			err = nil
		}
	} else if f.stale.Load() {
		f.t.Log().WarnContext(ctx, "read of a file replaced in the store since it was opened", "key", f.n.Path(), "errno", "ESTALE")
		return nil, syscall.ESTALE
	} else {
		b, err = f.t.ReadAt(ctx, f.n, dest, off, f.pid(ctx))
	}
	if err != nil {
		return nil, f.errno(ctx, "read", err)
	}
	if f.n.IsChunk() {
		f.m.n.chunkReads.Add(1)
	}
	f.m.n.readBytes.Add(int64(len(b)))
	return fuse.ReadResultData(b), 0
}

// Flush answers ENOSYS: there is nothing to flush in a read-only file, and
// the kernel then stops sending FLUSH on every close, for every file of the
// mount, saving a round trip per close.
func (f *fileNode) Flush(context.Context, fusefs.FileHandle) syscall.Errno {
	return syscall.ENOSYS
}

// pid returns the process that made the request (see tgids).
func (f *fileNode) pid(ctx context.Context) uint32 {
	if c, ok := fuse.FromContext(ctx); ok {
		return f.m.procs.of(c.Pid)
	}
	return 0
}

// errno maps err for a request on f, counting failures.
func (f *fileNode) errno(ctx context.Context, op string, err error) syscall.Errno {
	e := f.t.Errno(ctx, op, f.n.Path(), err)
	switch e {
	case syscall.EINTR:
		f.m.n.interrupted.Add(1)
	case syscall.EIO:
		f.m.n.errors.Add(1)
	}
	return e
}

// tgids maps the thread ids FUSE requests carry to their thread group
// (process) ids. The kernel puts the calling thread's id in a request; a
// PyTorch DataLoader with threads, or zarr-python reading with a thread
// pool, is one reader to readahead, as a process of several workers would be
// several. The map is read from /proc/<tid>/status once per thread and kept
// (at most maxTgids entries; then it starts over). A thread id reused later
// by another process keeps the old mapping until then: at worst readahead
// counts that thread with an exited process's reads for a while. Where /proc
// does not know the thread (another pid namespace), its id is used as it
// is. The zero value is ready to use; it is safe for concurrent use.
type tgids struct {
	mu sync.Mutex
	m  map[uint32]uint32 // thread id -> thread group id
}

const maxTgids = 1 << 14

// of returns the process of thread tid (0 stays 0: no caller).
func (g *tgids) of(tid uint32) uint32 {
	if tid == 0 {
		return 0
	}
	g.mu.Lock()
	p, ok := g.m[tid]
	g.mu.Unlock()
	if ok {
		return p
	}
	p, err := readTgid(tid)
	if err != nil {
		p = tid
	}
	g.mu.Lock()
	if g.m == nil || len(g.m) >= maxTgids {
		g.m = make(map[uint32]uint32)
	}
	g.m[tid] = p
	g.mu.Unlock()
	return p
}

// readTgid reads the Tgid line of /proc/<tid>/status.
func readTgid(tid uint32) (uint32, error) {
	v, err := procfs.Status(int(tid), "Tgid")
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(v, 10, 32)
	return uint32(n), err
}

// The mount is read-only: everything that would change it is EROFS.

func (d *dirNode) Create(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fusefs.Inode, fusefs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EROFS
}
func (d *dirNode) Mkdir(context.Context, string, uint32, *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}
func (d *dirNode) Mknod(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}
func (d *dirNode) Symlink(context.Context, string, string, *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}
func (d *dirNode) Link(context.Context, fusefs.InodeEmbedder, string, *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}
func (d *dirNode) Unlink(context.Context, string) syscall.Errno { return syscall.EROFS }
func (d *dirNode) Rmdir(context.Context, string) syscall.Errno  { return syscall.EROFS }
func (d *dirNode) Rename(context.Context, string, fusefs.InodeEmbedder, string, uint32) syscall.Errno {
	return syscall.EROFS
}
func (d *dirNode) Setattr(context.Context, fusefs.FileHandle, *fuse.SetAttrIn, *fuse.AttrOut) syscall.Errno {
	return syscall.EROFS
}
func (f *fileNode) Setattr(context.Context, fusefs.FileHandle, *fuse.SetAttrIn, *fuse.AttrOut) syscall.Errno {
	return syscall.EROFS
}
func (f *fileNode) Write(context.Context, fusefs.FileHandle, []byte, int64) (uint32, syscall.Errno) {
	return 0, syscall.EROFS
}
func (f *fileNode) Setxattr(context.Context, string, []byte, uint32) syscall.Errno {
	return syscall.EROFS
}
