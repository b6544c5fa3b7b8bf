package fusemount

import (
	"sync/atomic"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// The FUSE requests a mount counts, by the name of their opcode: every
// request that reaches the file system, on either transport. go-fuse
// answers INIT, INTERRUPT and its poll hack itself; those are not counted.
const (
	opLookup = iota
	opForget
	opGetattr
	opSetattr
	opReadlink
	opSymlink
	opMknod
	opMkdir
	opUnlink
	opRmdir
	opRename
	opLink
	opOpen
	opRead
	opWrite
	opStatfs
	opRelease
	opFsync
	opSetxattr
	opGetxattr
	opListxattr
	opRemovexattr
	opFlush
	opOpendir
	opReaddir
	opReleasedir
	opFsyncdir
	opGetlk
	opSetlk
	opAccess
	opCreate
	opIoctl
	opFallocate
	opReaddirplus
	opLseek
	opCopyFileRange
	opStatx
	opCount
)

var opNames = [opCount]string{
	"LOOKUP", "FORGET", "GETATTR", "SETATTR", "READLINK", "SYMLINK", "MKNOD", "MKDIR", "UNLINK", "RMDIR",
	"RENAME", "LINK", "OPEN", "READ", "WRITE", "STATFS", "RELEASE", "FSYNC", "SETXATTR", "GETXATTR",
	"LISTXATTR", "REMOVEXATTR", "FLUSH", "OPENDIR", "READDIR", "RELEASEDIR", "FSYNCDIR", "GETLK", "SETLK", "ACCESS",
	"CREATE", "IOCTL", "FALLOCATE", "READDIRPLUS", "LSEEK", "COPY_FILE_RANGE", "STATX",
}

// requestCounts counts requests by opcode. The zero value is ready; it is
// safe for concurrent use.
type requestCounts [opCount]atomic.Int64

// snapshot returns the counts by name, without the zeros.
func (c *requestCounts) snapshot() map[string]int64 {
	m := map[string]int64{}
	for i := range c {
		if n := c[i].Load(); n > 0 {
			m[opNames[i]] = n
		}
	}
	return m
}

// counting is a fuse.RawFileSystem that counts each request on its way to
// the one it wraps: what reached the daemon, however the transport got it
// there. A method it does not override (String, Init, OnUnmount, ...) is
// not a request.
type counting struct {
	fuse.RawFileSystem
	n     *requestCounts
	after *afterRelease // run after each Release; nil: nothing
}

func (c counting) add(op int) { c.n[op].Add(1) }

func (c counting) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	c.add(opLookup)
	return c.RawFileSystem.Lookup(cancel, h, name, out)
}

func (c counting) Forget(nodeid, nlookup uint64) {
	c.add(opForget)
	c.RawFileSystem.Forget(nodeid, nlookup)
}

func (c counting) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	c.add(opGetattr)
	return c.RawFileSystem.GetAttr(cancel, in, out)
}

func (c counting) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	c.add(opSetattr)
	return c.RawFileSystem.SetAttr(cancel, in, out)
}

func (c counting) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	c.add(opReadlink)
	return c.RawFileSystem.Readlink(cancel, h)
}

func (c counting) Symlink(cancel <-chan struct{}, h *fuse.InHeader, to, name string, out *fuse.EntryOut) fuse.Status {
	c.add(opSymlink)
	return c.RawFileSystem.Symlink(cancel, h, to, name, out)
}

func (c counting) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	c.add(opMknod)
	return c.RawFileSystem.Mknod(cancel, in, name, out)
}

func (c counting) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	c.add(opMkdir)
	return c.RawFileSystem.Mkdir(cancel, in, name, out)
}

func (c counting) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	c.add(opUnlink)
	return c.RawFileSystem.Unlink(cancel, h, name)
}

func (c counting) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	c.add(opRmdir)
	return c.RawFileSystem.Rmdir(cancel, h, name)
}

func (c counting) Rename(cancel <-chan struct{}, in *fuse.RenameIn, from, to string) fuse.Status {
	c.add(opRename)
	return c.RawFileSystem.Rename(cancel, in, from, to)
}

func (c counting) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	c.add(opLink)
	return c.RawFileSystem.Link(cancel, in, name, out)
}

func (c counting) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	c.add(opOpen)
	return c.RawFileSystem.Open(cancel, in, out)
}

func (c counting) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	c.add(opRead)
	return c.RawFileSystem.Read(cancel, in, buf)
}

func (c counting) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	c.add(opWrite)
	return c.RawFileSystem.Write(cancel, in, data)
}

func (c counting) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	c.add(opWrite)
	return c.RawFileSystem.Writev(cancel, in, data)
}

func (c counting) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	c.add(opStatfs)
	return c.RawFileSystem.StatFs(cancel, h, out)
}

func (c counting) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	c.add(opRelease)
	c.RawFileSystem.Release(cancel, in)
	c.after.run(cancel)
}

func (c counting) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	c.add(opFsync)
	return c.RawFileSystem.Fsync(cancel, in)
}

func (c counting) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	c.add(opSetxattr)
	return c.RawFileSystem.SetXAttr(cancel, in, attr, data)
}

func (c counting) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	c.add(opGetxattr)
	return c.RawFileSystem.GetXAttr(cancel, h, attr, dest)
}

func (c counting) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	c.add(opListxattr)
	return c.RawFileSystem.ListXAttr(cancel, h, dest)
}

func (c counting) RemoveXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	c.add(opRemovexattr)
	return c.RawFileSystem.RemoveXAttr(cancel, h, attr)
}

func (c counting) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	c.add(opFlush)
	return c.RawFileSystem.Flush(cancel, in)
}

func (c counting) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	c.add(opOpendir)
	return c.RawFileSystem.OpenDir(cancel, in, out)
}

func (c counting) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	c.add(opReaddir)
	return c.RawFileSystem.ReadDir(cancel, in, out)
}

func (c counting) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	c.add(opReaddirplus)
	return c.RawFileSystem.ReadDirPlus(cancel, in, out)
}

func (c counting) ReleaseDir(in *fuse.ReleaseIn) {
	c.add(opReleasedir)
	c.RawFileSystem.ReleaseDir(in)
}

func (c counting) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	c.add(opFsyncdir)
	return c.RawFileSystem.FsyncDir(cancel, in)
}

func (c counting) GetLk(cancel <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	c.add(opGetlk)
	return c.RawFileSystem.GetLk(cancel, in, out)
}

func (c counting) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	c.add(opSetlk)
	return c.RawFileSystem.SetLk(cancel, in)
}

func (c counting) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	c.add(opSetlk)
	return c.RawFileSystem.SetLkw(cancel, in)
}

func (c counting) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	c.add(opAccess)
	return c.RawFileSystem.Access(cancel, in)
}

func (c counting) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	c.add(opCreate)
	return c.RawFileSystem.Create(cancel, in, name, out)
}

func (c counting) Tmpfile(cancel <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	c.add(opCreate)
	return c.RawFileSystem.Tmpfile(cancel, in, out)
}

func (c counting) Ioctl(cancel <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	c.add(opIoctl)
	return c.RawFileSystem.Ioctl(cancel, in, inbuf, out, outbuf)
}

func (c counting) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	c.add(opFallocate)
	return c.RawFileSystem.Fallocate(cancel, in)
}

func (c counting) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	c.add(opLseek)
	return c.RawFileSystem.Lseek(cancel, in, out)
}

func (c counting) CopyFileRange(cancel <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	c.add(opCopyFileRange)
	return c.RawFileSystem.CopyFileRange(cancel, in)
}

func (c counting) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	c.add(opStatx)
	return c.RawFileSystem.Statx(cancel, in, out)
}
