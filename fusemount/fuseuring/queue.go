package fuseuring

import (
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/zfuse/zfuse/internal/uring"
)

// The kernel's io_uring command for FUSE (include/uapi/linux/fuse.h).
const (
	cmdRegister       = 1 // FUSE_IO_URING_CMD_REGISTER
	cmdCommitAndFetch = 2 // FUSE_IO_URING_CMD_COMMIT_AND_FETCH

	// struct fuse_uring_req_header: the in or out header (128 bytes),
	// the opcode's own header (128), then struct fuse_uring_ent_in_out
	// (flags, commit_id, payload_sz, padding, reserved).
	hdrInOut   = 0
	hdrOpIn    = 128
	hdrEntry   = 256
	headerSize = 288
	entCommit  = hdrEntry + 8
	entPayload = hdrEntry + 16

	inHeaderSize  = int(unsafe.Sizeof(fuse.InHeader{}))
	outHeaderSize = int(unsafe.Sizeof(fuse.OutHeader{}))

	opIoctl = 39 // FUSE_IOCTL

	// User data of the ring's completions.
	udEntry   = 1
	udControl = 2
)

// start is what Start gives a thread to serve; or, with reset, to turn
// io_uring off for the connection fd (see Transport.Reset).
type start struct {
	fd    int
	ps    *fuse.ProtocolServer
	reset bool
}

// A thread is one ring entry, served by one thread pinned to its queue's
// CPU: it registers the entry, then answers one request at a time, each
// answer submitted with the fetch of the next.
type thread struct {
	t   *Transport
	qid int

	start chan start // Start's connection; closed: end without serving
	once  sync.Once  // sends on start, or closes it

	mu         sync.Mutex // guards closed, and control against its close
	closed     bool       // the thread has freed what it set up
	registered chan error // the result of registering, once Start began
	ready      chan error // the result of setting up, for Prepare

	// Set up by the thread itself, and used by it alone from then on.
	ring     *uring.Ring
	mem      []byte // the entry: header, then payload
	iov      [2]unix.Iovec
	control  int     // an eventfd: written, the thread ends (Close)
	ctlBuf   [8]byte // where the ring reads it into
	fd       int     // the connection
	ps       *fuse.ProtocolServer
	in, out  [][]byte
	commitID uint64
	early    []uring.CQE // completions reaped by register, for serve
}

// startThread starts queue qid's next thread and waits for its setup.
func (t *Transport) startThread(qid int) (*thread, error) {
	th := &thread{t: t, qid: qid, control: -1, start: make(chan start), registered: make(chan error, 1), ready: make(chan error, 1)}
	t.wg.Add(1)
	go th.run()
	if err := <-th.ready; err != nil {
		return nil, err
	}
	return th, nil
}

func (th *thread) run() {
	defer th.t.wg.Done()
	lockThread()
	pin(th.qid)
	if err := th.setup(); err != nil {
		th.free()
		th.ready <- err
		return
	}
	th.ready <- nil
	defer th.free()
	s, ok := <-th.start
	if !ok {
		return
	}
	th.fd, th.ps = s.fd, s.ps
	if s.reset {
		th.registered <- th.register(th.t.cfg.Queues)
		return
	}
	if err := th.register(th.qid); err != nil {
		// A registration with a queue the ring does not have fails in
		// the kernel's fuse_uring_register, which then turns io_uring
		// off for the connection and wakes the requests it holds (it
		// holds every request until each queue has an entry).
		th.register(th.t.cfg.Queues)
		th.registered <- err
		return
	}
	th.registered <- nil
	th.serve()
}

// setup makes the ring, the entry's memory and the control eventfd.
func (th *thread) setup() error {
	r, err := uring.New(4)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	th.ring = r
	size := headerSize + th.t.cfg.Payload
	th.mem, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return fmt.Errorf("fuseuring: entry of %d bytes: %w", size, err)
	}
	th.iov[0].Base, th.iov[1].Base = &th.mem[0], &th.mem[headerSize]
	th.iov[0].SetLen(headerSize)
	th.iov[1].SetLen(th.t.cfg.Payload)
	if th.control, err = unix.Eventfd(0, unix.EFD_CLOEXEC); err != nil {
		th.control = -1
		return fmt.Errorf("fuseuring: eventfd: %w", err)
	}
	s, _ := r.Prepare()
	s.Opcode, s.Fd, s.UserData = uring.OpRead, int32(th.control), udControl
	s.Addr, s.Len = uint64(uintptr(unsafe.Pointer(&th.ctlBuf[0]))), 8
	th.in, th.out = make([][]byte, 3), make([][]byte, 2)
	return r.Enter(0)
}

// free closes the ring (the kernel cancels the entry's command) and then
// unmaps the entry.
func (th *thread) free() {
	th.mu.Lock()
	defer th.mu.Unlock()
	th.closed = true
	if th.ring != nil {
		th.ring.Close()
	}
	if th.control >= 0 {
		unix.Close(th.control)
	}
	if th.mem != nil {
		unix.Munmap(th.mem)
	}
}

// stop wakes the thread out of its wait, to end.
func (th *thread) stop() {
	th.mu.Lock()
	defer th.mu.Unlock()
	if th.closed || th.control < 0 {
		return
	}
	one := [8]byte{1}
	unix.Write(th.control, one[:])
}

// command prepares the entry's next FUSE command for queue qid.
func (th *thread) command(op uint32, qid int) error {
	s, err := th.ring.Prepare()
	if err != nil {
		return err
	}
	s.Opcode, s.Fd, s.UserData = uring.OpURingCmd, int32(th.fd), udEntry
	s.Off = uint64(op) // cmd_op
	s.Addr, s.Len = uint64(uintptr(unsafe.Pointer(&th.iov[0]))), 2
	// struct fuse_uring_cmd_req in the command area: flags, commit_id, qid.
	*(*uint64)(unsafe.Pointer(&s.Cmd[8])) = th.commitID
	*(*uint16)(unsafe.Pointer(&s.Cmd[16])) = uint16(qid)
	return nil
}

// register registers the entry with queue qid. The kernel answers a
// registration only with the entry's first request (which serve reaps),
// or with an error at once.
func (th *thread) register(qid int) error {
	if err := th.command(cmdRegister, qid); err != nil {
		return err
	}
	if err := th.ring.Enter(0); err != nil {
		return err
	}
	var err error
	th.early = th.early[:0]
	th.ring.Reap(func(c uring.CQE) {
		if c.UserData == udEntry && c.Res < 0 {
			err = fmt.Errorf("FUSE_IO_URING_CMD_REGISTER: %w", syscall.Errno(-c.Res))
			return
		}
		th.early = append(th.early, c)
	})
	return err
}

// serve answers requests until the connection ends or Close stops it.
func (th *thread) serve() {
	for end := th.handle(th.early); !end; {
		if err := th.ring.Enter(1); err != nil {
			th.t.cfg.Log.Error("FUSE over io_uring: queue thread ends", "queue", th.qid, "err", err)
			return
		}
		th.early = th.early[:0]
		th.ring.Reap(func(c uring.CQE) { th.early = append(th.early, c) })
		end = th.handle(th.early)
	}
}

// handle handles completions; it reports whether the thread is to end.
func (th *thread) handle(cs []uring.CQE) (end bool) {
	for _, c := range cs {
		switch {
		case c.UserData == udControl:
			return true
		case c.Res == -int32(syscall.ENOTCONN) || c.Res == -int32(syscall.ECONNABORTED) || c.Res == -int32(syscall.ECANCELED):
			return true // the connection is gone
		case c.Res < 0:
			th.t.cfg.Log.Error("FUSE over io_uring: command failed", "queue", th.qid, "err", syscall.Errno(-c.Res))
			return true
		}
		th.answer()
		if err := th.command(cmdCommitAndFetch, th.qid); err != nil {
			th.t.cfg.Log.Error("FUSE over io_uring: queue thread ends", "queue", th.qid, "err", err)
			return true
		}
	}
	return false
}

// answer answers the request the entry holds, in place: the out header in
// the header's first bytes, the rest in the payload, as the kernel reads
// them at the commit.
func (th *thread) answer() {
	hdr, payload := th.mem[:headerSize], th.mem[headerSize:]
	h := *(*fuse.InHeader)(unsafe.Pointer(&hdr[hdrInOut]))
	th.commitID = *(*uint64)(unsafe.Pointer(&hdr[entCommit]))
	psz := int(*(*uint32)(unsafe.Pointer(&hdr[entPayload])))
	opIn := int(h.Length) - inHeaderSize - psz
	var n int
	if h.Opcode == opIoctl {
		// Every ioctl is ENOTTY, as go-fuse's bridge answers for nodes
		// without one, and it needs nothing of the request: Python's
		// open() asks isatty of every file, so this is the request a
		// warm read makes most.
		n = reply(hdr, h.Unique, syscall.ENOTTY)
		if th.t.cfg.Count != nil {
			th.t.cfg.Count(h.Opcode)
		}
	} else if opIn < 0 || opIn > hdrEntry-hdrOpIn || psz > len(payload) {
		n = reply(hdr, h.Unique, syscall.EIO)
	} else {
		th.in[0], th.in[1], th.in[2] = hdr[hdrInOut:inHeaderSize], hdr[hdrOpIn:hdrOpIn+opIn], payload[:psz]
		th.out[0], th.out[1] = hdr[hdrInOut:outHeaderSize], payload
		var st fuse.Status
		if n, st = th.ps.HandleRequest(th.in, th.out); n == 0 {
			// No answer (a request that wants none, or one the
			// server could not parse): the entry needs a commit all
			// the same, to be given the next request.
			if st.Ok() {
				st = fuse.EIO
			}
			n = reply(hdr, h.Unique, syscall.Errno(st))
		}
	}
	*(*uint32)(unsafe.Pointer(&hdr[entPayload])) = uint32(n - outHeaderSize)
}

// reply writes an out header with errno e and no payload; it returns the
// answer's length.
func reply(hdr []byte, unique uint64, e syscall.Errno) int {
	*(*fuse.OutHeader)(unsafe.Pointer(&hdr[hdrInOut])) = fuse.OutHeader{Length: uint32(outHeaderSize), Status: -int32(e), Unique: unique}
	return outHeaderSize
}
