package fusemount

import (
	"fmt"
	"log/slog"
	"strings"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/zfuse/zfuse/fusemount/fuseuring"
)

// Transport is how FUSE requests travel between the kernel and the mount:
//
//   - URing: FUSE over io_uring (fuseuring), where every request is
//     answered on the CPU that made it. A request the daemon must answer
//     costs a third of what it costs through /dev/fuse (Python's open(),
//     whose isatty is a FUSE_IOCTL the kernel always sends, is the reader
//     it matters most to). Linux 6.14 or later offers it once root has
//     enabled it: echo Y > /sys/module/fuse/parameters/enable_uring.
//   - DevFuse: requests read from /dev/fuse by go-fuse's own loop.
//
// Auto takes URing where the kernel offers it, else DevFuse. URing falls
// back to DevFuse, with a line saying why, where it cannot be had.
type Transport int32

const (
	TransportAuto Transport = iota
	URing
	DevFuse
)

var transportNames = [...]string{"auto", "uring", "dev"}

func (tr Transport) String() string {
	if tr < 0 || int(tr) >= len(transportNames) {
		return fmt.Sprintf("Transport(%d)", int32(tr))
	}
	return transportNames[tr]
}

// ParseTransport parses a transport by name: auto, uring, dev.
func ParseTransport(s string) (Transport, error) {
	for i, n := range transportNames {
		if strings.EqualFold(s, n) {
			return Transport(i), nil
		}
	}
	return 0, fmt.Errorf("fs: unknown transport %q (want auto, uring or dev)", s)
}

// Set lets a Transport be a flag.Value.
func (tr *Transport) Set(v string) error {
	p, err := ParseTransport(v)
	if err == nil {
		*tr = p
	}
	return err
}

// A Conn is a file system mounted and served: by go-fuse's /dev/fuse loop
// or by fuseuring. It counts the requests that reach the file system.
type Conn struct {
	*fuse.Server            // notifications, the kernel's settings
	Transport    Transport  // the transport in use
	Why          string     // why not the one asked for; "" when it is
	c            connection // Unmount, Wait
	n            requestCounts
}

// connection is what serves a Conn: a *fuse.Server or a *fuseuring.Server.
type connection interface {
	Unmount() error
	Wait()
}

// Unmount unmounts the file system (it fails while a process uses it).
// A /dev/fd/N mount is unmounted by whoever mounted it.
func (c *Conn) Unmount() error { return c.c.Unmount() }

// Wait waits until the file system is unmounted and served no more.
func (c *Conn) Wait() { c.c.Wait() }

// Requests returns the requests that reached the file system so far, by
// opcode name (LOOKUP, GETATTR, IOCTL, READ, ...), without the zeros.
func (c *Conn) Requests() map[string]int64 { return c.n.snapshot() }

// Serve mounts root at dir with opts, over the transport asked for (see
// Transport), and returns once it answers. zfuse bench's FUSE floor
// serves its files with it, as Mount serves a Tree.
func Serve(dir string, root fusefs.InodeEmbedder, opts *fusefs.Options, want Transport, log *slog.Logger) (*Conn, error) {
	return serve(dir, root, opts, want, log, nil)
}

// serve is Serve, running after what each Release leaves (see
// afterRelease).
func serve(dir string, root fusefs.InodeEmbedder, opts *fusefs.Options, want Transport, log *slog.Logger, after *afterRelease) (*Conn, error) {
	c := &Conn{}
	raw := counting{fusefs.NewNodeFS(root, opts), &c.n, after}
	if want == DevFuse {
		srv, err := fuse.NewServer(raw, dir, &opts.MountOptions)
		if err != nil {
			return nil, err
		}
		go srv.Serve()
		c.Server, c.c, c.Transport = srv, srv, DevFuse
		return c, srv.WaitMount()
	}
	s, err := fuseuring.Serve(dir, raw, opts.MountOptions, fuseuring.Config{
		Count: func(op uint32) { c.n[opIoctl].Add(1) }, // the rings answer only IOCTL themselves
		Log:   log,
	})
	if err != nil {
		return nil, err
	}
	c.Server, c.c, c.Transport = s.Server, s, URing
	if err := s.Ring(); err != nil {
		c.Transport, c.Why = DevFuse, err.Error()
	}
	return c, nil
}

// logTransport logs the transport a mount got, at Warn when it asked for
// another one.
func logTransport(log *slog.Logger, dir string, want, got Transport, why string) {
	attrs := []any{"transport", got.String(), "mountpoint", dir}
	if why != "" {
		attrs = append(attrs, "why", why)
	}
	if want == URing && got != URing {
		log.Warn("FUSE transport falls back", append(attrs, "wanted", want.String())...)
		return
	}
	log.Info("FUSE transport", attrs...)
}
