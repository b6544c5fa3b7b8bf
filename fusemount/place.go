package fusemount

import (
	"sync"

	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/tree"
	"github.com/zfuse/zfuse/zarr"
)

// A placer pushes decoded chunks into the kernel's page cache before their
// first read (FUSE_NOTIFY_STORE, go-fuse's Inode.WriteCache): readahead's
// Placer on the page-cache serving paths (NoOpen, Open), so that a first
// read of a prefetched chunk costs what a warm read costs, with no READ
// round trip and no copy while the reader waits. The kernel takes pages
// only for files it knows (looked up, or listed with READDIRPLUS, as ls
// and os.ReadDir list); a chunk of any other file is refused and waits in
// staging for its READ. It is safe for concurrent use.
type placer struct {
	n    *serveCounters // the mount's
	mnt  string         // the mountpoint, to look files up through; "" when it cannot be (/dev/fd/N)
	look looker         // looks them up, from a child process

	mu    sync.Mutex
	nodes map[chunkID]*fileNode      // chunk files with an inode, by chunk: the kernel may know them
	dirs  map[*zarr.Array]*tree.Node // directories of raw arrays the kernel may know, by array
}

// A chunkID names one chunk of one array, as readahead places it.
type chunkID struct {
	a *zarr.Array
	i int64 // linear index in the chunk grid
}

var _ readahead.Placer = (*placer)(nil)

// add records f, a chunk file given an inode.
func (p *placer) add(f *fileNode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nodes == nil {
		p.nodes = map[chunkID]*fileNode{}
	}
	p.nodes[f.chunkID()] = f
}

// setDir records that a directory whose node was old (nil: a new inode)
// now serves cur (nil: the kernel forgot it): the directory of cur's
// array, if raw, replaces old's. Under tree.Config.Refresh each metadata read
// is a new array, so the entries follow the kernel's directories, not
// every array the tree ever read.
func (p *placer) setDir(old, cur *tree.Node) {
	was, now := rawArray(old), rawArray(cur)
	if was == now {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if d := p.dirs[was]; was != nil && d != nil && d.Path() == old.Path() {
		delete(p.dirs, was)
	}
	if now != nil {
		if p.dirs == nil {
			p.dirs = map[*zarr.Array]*tree.Node{}
		}
		p.dirs[now] = cur
	}
}

// rawArray returns the array n, a directory, is, if it is presented raw;
// else (and for no directory, nil) nil.
func rawArray(n *tree.Node) *zarr.Array {
	if n == nil {
		return nil
	}
	return n.Array()
}

// remove forgets f, which the kernel forgot.
func (p *placer) remove(f *fileNode) {
	id := f.chunkID()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nodes[id] == f {
		delete(p.nodes, id)
	}
}

// Place writes data into the page cache of chunk i of a, if the kernel
// knows its file and the file is not stale (replaced by a new version,
// whose bytes these are).
func (p *placer) Place(a *zarr.Array, _ string, i int64, data []byte) bool {
	f := p.node(a, i)
	if f == nil {
		f = p.introduce(a, i)
	}
	if f == nil || f.stale.Load() {
		p.n.pushUnknown.Add(1)
		return false
	}
	if e := f.WriteCache(0, data); e != 0 {
		p.n.pushRefused.Add(1)
		return false
	}
	p.n.pushed.Add(1)
	p.n.pushedBytes.Add(int64(len(data)))
	return true
}

func (p *placer) node(a *zarr.Array, i int64) *fileNode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nodes[chunkID{a, i}]
}

// Expect starts the lookup of chunk i of a (see introduce) where the
// kernel does not know its file yet, without waiting: readahead calls it
// as it plans the chunk, so that by the time the chunk is decoded its file
// is known and Place can push it.
func (p *placer) Expect(a *zarr.Array, i int64) {
	if p.node(a, i) == nil {
		if path, ok := p.path(a, i); ok {
			p.look.ask(path)
		}
	}
}

// introduce makes the kernel know the file of chunk i of a, in a directory
// it knows, by looking it up through the mount (a stat from a child
// process, see looker, answered by this mount's LOOKUP, which gives it an
// inode) and returns it, or nil. A reader that opens chunk files by name
// without listing them (zarr-python) would otherwise meet each file's
// first LOOKUP and READ, one after another, with its pages pushed only
// once it had asked; now it finds both cached.
func (p *placer) introduce(a *zarr.Array, i int64) *fileNode {
	path, ok := p.path(a, i)
	if !ok || !p.look.look(path) {
		return nil
	}
	return p.node(a, i)
}

// path is the path of chunk i of a through the mount, if a's directory is
// one the kernel may know and the mount has a path.
func (p *placer) path(a *zarr.Array, i int64) (string, bool) {
	p.mu.Lock()
	d, ok := p.dirs[a]
	p.mu.Unlock()
	if !ok || p.mnt == "" {
		return "", false
	}
	return p.mnt + "/" + d.ChunkPath(i), true
}

// chunkID names the chunk a chunk file serves.
func (f *fileNode) chunkID() chunkID {
	a, i := f.n.Chunk()
	return chunkID{a, i}
}

// OnForget drops f from the placer once the kernel has forgotten it.
func (f *fileNode) OnForget() {
	if f.n.IsChunk() {
		f.m.place.remove(f)
	}
}

// OnForget drops d, an array's directory, from the placer once the kernel
// has forgotten it.
func (d *dirNode) OnForget() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.m.place.setDir(d.n, nil) // under d.mu, as node's calls are
}
