package fuseuring

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// A Server is a file system mounted and served over io_uring, or, where
// the kernel or this process would not (Ring says why), through go-fuse's
// own /dev/fuse loop. Its go-fuse Server sends notifications (the page
// cache pushes, invalidations) either way.
type Server struct {
	*fuse.Server

	dir  string     // the mount point; "" for a /dev/fd/N one
	fd   int        // the connection, as Mount returned it
	t    *Transport // nil: go-fuse's loop serves
	ring error      // why not io_uring; nil when the rings serve
	dev  chan struct{}
	done sync.Once // closes fd, once served
}

// Serve mounts raw at dir and serves it: over io_uring when the kernel
// agrees to it at FUSE_INIT and every queue registers, else through
// go-fuse's /dev/fuse loop. dir may be /dev/fd/N, a /dev/fuse descriptor
// mounted by someone else. cfg.Payload is set from opts. It returns once
// the file system answers.
func Serve(dir string, raw fuse.RawFileSystem, opts fuse.MountOptions, cfg Config) (*Server, error) {
	if cfg.payload == 0 {
		cfg.Payload = payloadSize(cfg.Payload, opts.MaxWrite)
	} else {
		cfg.Payload = cfg.payload
	}
	t, ringErr := Prepare(cfg)
	if ringErr == nil {
		opts.ExtraCapabilities |= fuse.CAP_OVER_IO_URING
	}
	s := &Server{fd: -1, dev: make(chan struct{})}
	if n, ok := passedFd(dir); ok {
		s.fd = n
	} else {
		fd, err := Mount(dir, &opts)
		if err != nil {
			if t != nil {
				t.Close()
			}
			return nil, err
		}
		s.dir, s.fd = dir, fd
	}
	// go-fuse's server gets a descriptor of its own, which it may
	// close, on the same connection: it answers FUSE_INIT, and sends
	// the notifications.
	m, err := unix.FcntlInt(uintptr(s.fd), unix.F_DUPFD_CLOEXEC, 3)
	if err == nil {
		s.Server, err = fuse.NewServer(raw, "/dev/fd/"+strconv.Itoa(m), &opts)
	}
	if err != nil {
		s.abandon(t)
		return nil, err
	}
	switch {
	case ringErr != nil:
	case s.KernelSettings().Flags64()&fuse.CAP_OVER_IO_URING == 0:
		ringErr = fmt.Errorf("%w: the kernel does not offer it (as root: echo Y > /sys/module/fuse/parameters/enable_uring)", ErrUnavailable)
	default:
		ps, err := protocol(raw, &opts, s.KernelSettings())
		if err != nil {
			t.Reset(s.fd)
		} else {
			err = t.Start(s.fd, ps)
		}
		if err == nil {
			s.t = t
			go func() {
				defer close(s.dev)
				Dev(s.fd, ps, cfg.Payload, cfg.Log)
			}()
			s.pollHack()
			return s, nil
		}
		ringErr = err
	}
	if t != nil {
		t.Close()
		t.Wait()
	}
	s.ring = ringErr
	close(s.dev)
	go s.Server.Serve()
	s.pollHack()
	return s, nil
}

// pollHack makes the kernel learn, before anyone polls a file of the
// mount, that the file system does not implement POLL, as go-fuse's
// Server.WaitMount does for the mounts it makes itself: it opens go-fuse's
// hack file and polls it, and go-fuse answers POLL for it with ENOSYS,
// after which the kernel answers every poll itself. Otherwise this
// process's own epoll of a file of the mount (Go's os.Open registers every
// file with the runtime's poller, holding its P while the kernel asks the
// daemon) could take every P that the answering threads need.
func (s *Server) pollHack() {
	if s.dir == "" {
		return // a /dev/fd mount's mountpoint is unknown here
	}
	fd, err := unix.Open(filepath.Join(s.dir, ".go-fuse-epoll-hack"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLPRI | unix.POLLOUT}}, 0)
	unix.Close(fd)
}

// payloadSize is the size of an entry's payload for a connection whose
// largest request is maxWrite (0: go-fuse's default): what the kernel
// checks it against, max(FUSE_MIN_READ_BUFFER, max_write, max_pages *
// PAGE_SIZE), with max_pages as go-fuse rounds maxWrite up to pages.
func payloadSize(atLeast, maxWrite int) int {
	if maxWrite <= 0 {
		maxWrite = 128 << 10
	}
	page := unix.Getpagesize()
	n := max(atLeast, maxWrite, 8192)
	return (n + page - 1) / page * page
}

// abandon undoes what Serve did before it failed.
func (s *Server) abandon(t *Transport) {
	if t != nil {
		t.Close()
	}
	if s.dir != "" {
		Unmount(s.dir)
		unix.Close(s.fd)
	}
}

// Ring returns why the server does not serve over io_uring; nil when it
// does.
func (s *Server) Ring() error { return s.ring }

// Unmount unmounts the file system. A /dev/fd/N mount cannot be
// unmounted by its server: whoever mounted it unmounts it.
func (s *Server) Unmount() error {
	if s.dir == "" {
		return errors.New("fuseuring: a /dev/fd mount is unmounted by whoever mounted it")
	}
	return Unmount(s.dir)
}

// Wait waits until the file system is unmounted and served no more.
func (s *Server) Wait() {
	if s.t == nil {
		s.Server.Wait()
	} else {
		s.t.Wait()
		<-s.dev
	}
	s.done.Do(func() {
		if s.dir != "" {
			unix.Close(s.fd)
		}
	})
}

// protocol returns a ProtocolServer over raw that parses requests as the
// connection's FUSE_INIT (in, which go-fuse's server answered) agreed.
func protocol(raw fuse.RawFileSystem, opts *fuse.MountOptions, in *fuse.InitIn) (*fuse.ProtocolServer, error) {
	ps := fuse.NewProtocolServer(raw, opts)
	b := make([]byte, unsafe.Sizeof(fuse.InitIn{}))
	init := (*fuse.InitIn)(unsafe.Pointer(&b[0]))
	*init = *in
	init.InHeader = fuse.InHeader{Length: uint32(len(b)), Opcode: opInit, Unique: 1}
	out := make([]byte, 1024)
	if _, st := ps.HandleRequest([][]byte{b}, [][]byte{out}); !st.Ok() {
		return nil, fmt.Errorf("fuseuring: FUSE_INIT: %v", st)
	}
	if h := (*fuse.OutHeader)(unsafe.Pointer(&out[0])); h.Status != 0 {
		return nil, fmt.Errorf("fuseuring: FUSE_INIT: %v", unix.Errno(-h.Status))
	}
	return ps, nil
}

const opInit = 26 // FUSE_INIT

// passedFd reports whether dir is /dev/fd/N, a descriptor mounted by
// someone else, and N.
func passedFd(dir string) (int, bool) {
	s, ok := strings.CutPrefix(dir, "/dev/fd/")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}
