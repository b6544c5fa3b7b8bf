package fs

import (
	"sync"

	"github.com/zfuse/zfuse/readahead"
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
	n *serveCounters // the mount's

	mu    sync.Mutex
	nodes map[chunkID]*fileNode // chunk files with an inode, by chunk: the kernel may know them
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
	p.mu.Lock()
	f := p.nodes[chunkID{a, i}]
	p.mu.Unlock()
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

// chunkID names the chunk a chunk file serves.
func (f *fileNode) chunkID() chunkID {
	return chunkID{f.n.arr.a, f.n.arr.a.Linear(f.n.coords)}
}

// OnForget drops f from the placer once the kernel has forgotten it.
func (f *fileNode) OnForget() {
	if f.n.kind == kindChunk {
		f.m.place.remove(f)
	}
}
