package fs

import (
	"context"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// dirNode is a directory of the mount. Its node never changes.
type dirNode struct {
	fusefs.Inode
	t *Tree
	n *node
	m *mount
}

// fileNode is a file of the mount. Its node never changes.
type fileNode struct {
	fusefs.Inode
	t *Tree
	n *node
	m *mount
}

// mount holds what every node of one mount shares.
type mount struct {
	born time.Time // reported as every file's times
}

var (
	_ fusefs.NodeLookuper   = (*dirNode)(nil)
	_ fusefs.NodeReaddirer  = (*dirNode)(nil)
	_ fusefs.NodeGetattrer  = (*dirNode)(nil)
	_ fusefs.NodeCreater    = (*dirNode)(nil)
	_ fusefs.NodeMkdirer    = (*dirNode)(nil)
	_ fusefs.NodeMknoder    = (*dirNode)(nil)
	_ fusefs.NodeSymlinker  = (*dirNode)(nil)
	_ fusefs.NodeLinker     = (*dirNode)(nil)
	_ fusefs.NodeUnlinker   = (*dirNode)(nil)
	_ fusefs.NodeRmdirer    = (*dirNode)(nil)
	_ fusefs.NodeRenamer    = (*dirNode)(nil)
	_ fusefs.NodeSetattrer  = (*dirNode)(nil)
	_ fusefs.NodeOpener     = (*fileNode)(nil)
	_ fusefs.NodeReader     = (*fileNode)(nil)
	_ fusefs.NodeGetattrer  = (*fileNode)(nil)
	_ fusefs.NodeSetattrer  = (*fileNode)(nil)
	_ fusefs.NodeWriter     = (*fileNode)(nil)
	_ fusefs.NodeSetxattrer = (*fileNode)(nil)
)

// attr fills out with n's presented attributes.
func (m *mount) attr(n *node, out *fuse.Attr) {
	if n.kind == kindDir {
		out.Mode = fuse.S_IFDIR | 0o555
		out.Nlink = 2
	} else {
		out.Mode = fuse.S_IFREG | 0o444
		out.Nlink = 1
		out.Size = uint64(n.size)
		out.Blocks = (out.Size + 511) / 512
	}
	out.Blksize = 1 << 20
	t := m.born
	out.SetTimes(&t, &t, &t)
}

// inode returns the inode for n below parent, reusing one the kernel
// already knows: the tree does not change.
func (m *mount) inode(ctx context.Context, parent *fusefs.Inode, t *Tree, n *node) *fusefs.Inode {
	if ch := parent.GetChild(n.name()); ch != nil {
		return ch
	}
	if n.kind == kindDir {
		return parent.NewInode(ctx, &dirNode{t: t, n: n, m: m}, fusefs.StableAttr{Mode: fuse.S_IFDIR})
	}
	return parent.NewInode(ctx, &fileNode{t: t, n: n, m: m}, fusefs.StableAttr{Mode: fuse.S_IFREG})
}

func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	n, err := d.t.child(ctx, d.n, name)
	if err != nil {
		return nil, errno(ctx, d.t.log, "lookup", join(d.n.key, name), err)
	}
	d.m.attr(n, &out.Attr)
	return d.m.inode(ctx, d.EmbeddedInode(), d.t, n), 0
}

func (d *dirNode) Readdir(ctx context.Context) (fusefs.DirStream, syscall.Errno) {
	ns, err := d.t.children(ctx, d.n)
	if err != nil {
		return nil, errno(ctx, d.t.log, "readdir", d.n.key, err)
	}
	es := make([]fuse.DirEntry, len(ns))
	for i, n := range ns {
		es[i] = fuse.DirEntry{Name: n.name(), Mode: fuse.S_IFREG}
		if n.kind == kindDir {
			es[i].Mode = fuse.S_IFDIR
		}
	}
	return fusefs.NewListDirStream(es), 0
}

func (d *dirNode) Getattr(ctx context.Context, _ fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.m.attr(d.n, &out.Attr)
	return 0
}

func (f *fileNode) Getattr(ctx context.Context, _ fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.m.attr(f.n, &out.Attr)
	return 0
}

// Open refuses writing. Every file is immutable for the life of the mount,
// so the kernel may keep its page cache across opens.
func (f *fileNode) Open(ctx context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	return nil, fuse.FOPEN_KEEP_CACHE, 0
}

// Read serves [off, off+len(dest)) of the file.
func (f *fileNode) Read(ctx context.Context, _ fusefs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	var pid uint32
	if c, ok := fuse.FromContext(ctx); ok {
		pid = c.Pid
	}
	b, err := f.t.readAt(ctx, f.n, off, int64(len(dest)), pid)
	if err != nil {
		return nil, errno(ctx, f.t.log, "read", f.n.key, err)
	}
	return fuse.ReadResultData(b), 0
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
