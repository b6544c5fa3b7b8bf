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

// conn is a mounted connection, served by go-fuse's loop or by fuseuring.
type conn interface {
	Unmount() error
	Wait()
}

// serve mounts root at dir and serves it over the transport asked for,
// counting the requests that reach the file system in n. It returns the
// go-fuse server (for notifications and the kernel's settings), the
// connection, the transport in use and, where it is not the one asked
// for, why.
func serve(dir string, root fusefs.InodeEmbedder, opts *fusefs.Options, want Transport, n *requestCounts, log *slog.Logger) (*fuse.Server, conn, Transport, string, error) {
	raw := counting{fusefs.NewNodeFS(root, opts), n}
	if want == DevFuse {
		srv, err := fuse.NewServer(raw, dir, &opts.MountOptions)
		if err != nil {
			return nil, nil, 0, "", err
		}
		go srv.Serve()
		return srv, srv, DevFuse, "", srv.WaitMount()
	}
	s, err := fuseuring.Serve(dir, raw, opts.MountOptions, fuseuring.Config{
		Count: func(op uint32) { n[opIoctl].Add(1) }, // the rings answer only IOCTL themselves
		Log:   log,
	})
	if err != nil {
		return nil, nil, 0, "", err
	}
	if err := s.Ring(); err != nil {
		return s.Server, s, DevFuse, err.Error(), nil
	}
	return s.Server, s, URing, "", nil
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
