package fusemount

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Serving is how the mount gets a chunk's decoded bytes to a reader. Each
// costs FUSE round trips differently (measured in docs/performance.md);
// a mount uses one, for every file:
//
//   - Passthrough: OPEN replies with a backing file, a memfd the chunk was
//     decoded into (or the stored file of a chunk stored uncompressed), and
//     the kernel reads it without asking the daemon: no READ, no copy
//     through /dev/fuse. Every open costs an OPEN and a RELEASE round trip.
//     It needs Linux 6.9 or later and CAP_SYS_ADMIN.
//   - NoOpen: OPEN is answered ENOSYS once, and the kernel then opens every
//     file of the mount without asking (FUSE's no-open mode) and keeps its
//     page cache across opens. A chunk's first read is one READ round
//     trip, with the bytes copied through /dev/fuse; later reads come from
//     the page cache. The daemon drops its copy of a chunk once the kernel
//     has read all of it.
//   - Open: OPEN and RELEASE on every open (FOPEN_KEEP_CACHE), READ as in
//     NoOpen: the fallback where neither of the others is available.
type Serving int32

// The serving paths. Auto picks NoOpen where the kernel offers it, else
// the first of Passthrough and Open this kernel and process allow.
const (
	Auto Serving = iota
	Passthrough
	NoOpen
	Open
)

var servingNames = [...]string{"auto", "passthrough", "no-open", "open"}

func (s Serving) String() string {
	if s < 0 || int(s) >= len(servingNames) {
		return fmt.Sprintf("Serving(%d)", int32(s))
	}
	return servingNames[s]
}

// ParseServing parses a serving path by name: auto, passthrough, no-open,
// open.
func ParseServing(s string) (Serving, error) {
	for i, n := range servingNames {
		if strings.EqualFold(s, n) {
			return Serving(i), nil
		}
	}
	return 0, fmt.Errorf("fusemount: unknown serving path %q (want auto, passthrough, no-open or open)", s)
}

// Set and Type let a Serving be a flag.Value.
func (s *Serving) Set(v string) error {
	p, err := ParseServing(v)
	if err == nil {
		*s = p
	}
	return err
}

// choose decides the serving path of a mount that asked for want, given
// what the kernel agreed to at FUSE INIT. Auto takes NoOpen, which the
// measurements of docs/performance.md found as fast as Passthrough on a
// chunk's first read and faster on every later one (no OPEN, no RELEASE, no memfd to
// allocate and free), and whose page cache the kernel can reclaim, where
// memfds stay pinned. Passthrough is probed by registering a backing file
// with the kernel (refused without CAP_SYS_ADMIN, before Linux 6.9, or
// when the kernel did not offer FUSE_PASSTHROUGH). why says why the path
// asked for is not the one chosen; it is empty when it is.
func choose(srv *fuse.Server, want Serving) (got Serving, why string) {
	flags := srv.KernelSettings().Flags64()
	noOpen := flags&fuse.CAP_NO_OPEN_SUPPORT != 0
	var whys []string
	if want == Auto && noOpen {
		return NoOpen, ""
	}
	if want == Auto || want == Passthrough {
		err := probePassthrough(srv, flags)
		if err == nil {
			return Passthrough, ""
		}
		whys = append(whys, "passthrough refused: "+err.Error())
	}
	if want != Open {
		if noOpen {
			return NoOpen, strings.Join(whys, "; ")
		}
		whys = append(whys, "the kernel does not offer no-open mode (FUSE_NO_OPEN_SUPPORT)")
	}
	return Open, strings.Join(whys, "; ")
}

// A Probe is what a mount would get here: its serving path and its
// transport, each with why it is not the one asked for ("" when it is).
type Probe struct {
	Serving      Serving
	ServingWhy   string
	Transport    Transport
	TransportWhy string
}

// ProbeMount reports the serving path and the transport a mount asking for
// serving and transport would use here (see Mount), by mounting an empty
// file system on a temporary directory under dir ("" for the system's) and
// asking the kernel. It is what zfuse info says.
func ProbeMount(dir string, serving Serving, transport Transport) (Probe, error) {
	tmp, err := os.MkdirTemp(dir, "zfuse-probe-")
	if err != nil {
		return Probe{}, err
	}
	defer os.Remove(tmp)
	c, err := Serve(tmp, &fusefs.Inode{}, &fusefs.Options{MountOptions: fuse.MountOptions{
		FsName: "zfuse-probe", Name: "zfuse", Options: []string{"ro"}}}, transport, nil)
	if err != nil {
		return Probe{}, fmt.Errorf("probing the serving path: %w", err)
	}
	p := Probe{Transport: c.Transport, TransportWhy: c.Why}
	p.Serving, p.ServingWhy = choose(c.Server, serving)
	err = c.Unmount()
	c.Wait()
	return p, err
}

// probePassthrough registers a memfd as a backing file and unregisters it.
func probePassthrough(srv *fuse.Server, kernelFlags uint64) error {
	if kernelFlags&fuse.CAP_PASSTHROUGH == 0 {
		return errors.New("the kernel does not offer FUSE_PASSTHROUGH (Linux 6.9 or later with CONFIG_FUSE_PASSTHROUGH)")
	}
	fd, err := unix.MemfdCreate("zfuse-probe", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("memfd_create: %w", err)
	}
	defer unix.Close(fd)
	id, errno := srv.RegisterBackingFd(&fuse.BackingMap{Fd: int32(fd)})
	if errno != 0 {
		if errno == syscall.EPERM && os.Geteuid() != 0 {
			return fmt.Errorf("registering a backing file: %w (it needs CAP_SYS_ADMIN: run zfuse as root)", errno)
		}
		return fmt.Errorf("registering a backing file: %w", errno)
	}
	srv.UnregisterBackingFd(id)
	return nil
}

// ServeStats count what reached the daemon, by kind of request: how the
// serving path shows (no READ for passthrough chunks; no OPEN after the
// first in no-open mode).
type ServeStats struct {
	Serving             string           // the path in use
	Transport           string           // how requests reach the daemon: uring or dev (see Transport)
	Requests            map[string]int64 // requests that reached the file system, by opcode (LOOKUP, IOCTL, READ, ...)
	Lookups             int64            // LOOKUP requests answered
	Opens               int64            // OPEN requests, of any file
	PassthroughOpens    int64            // chunk opens answered with a backing file
	Reads, ReadBytes    int64            // READ requests, and bytes they returned
	ChunkReads          int64            // of those, of chunk files
	Releases            int64            // RELEASE of chunk files opened with a handle
	OpenFiles           int64            // chunk files open with a handle now
	Interrupted         int64            // requests whose caller gave up (EINTR)
	Replaced            int64            // files found changed in the store (--refresh), served under a new inode since
	DecodeErrors        int64            // chunk opens and reads that failed with EIO
	Pushed, PushedBytes int64            // chunks pushed into the kernel's page cache before their first read (no-open, open)
	PushRefused         int64            // pushes the kernel refused (it forgot the file meanwhile)
	ChunkReadTimes      Latency          // service times of the READs of chunk files
	PushUnknown         int64            // chunks not pushed: the kernel did not know their files, nor their array's directory
	Introduced          int64            // chunk files the mount looked up itself, to push their chunks (readers that do not list)
	PassthroughRefused  string           `json:",omitempty"` // why passthrough is not in use, where it was wanted
}

// serveCounters are a mount's ServeStats, updated atomically.
type serveCounters struct {
	lookups, opens, passthroughOpens, handles, reads, readBytes, chunkReads, releases, interrupted, errors, replaced atomic.Int64
	chunkReadTimes                                                                                                   latencies
	pushed, pushedBytes, pushRefused, pushUnknown, introduced                                                        atomic.Int64
}

// wait returns the serving path once Mount has chosen it.
func (m *mount) servingPath(ctx context.Context) (Serving, error) {
	select {
	case <-m.ready:
		return m.serving, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}
