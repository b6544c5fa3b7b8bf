// Package uring is the part of Linux io_uring (io_uring(7)) that a FUSE
// transport needs: a ring with 128-byte submission entries (for
// IORING_OP_URING_CMD), submitting them, and waiting for completions.
//
// The one fact to know: a Ring belongs to one thread. It is set up with
// IORING_SETUP_SINGLE_ISSUER and DEFER_TASKRUN, so only the thread that
// submits to it may submit or wait (callers lock their goroutine to its
// thread, runtime.LockOSThread), and completions are posted only while that
// thread waits in Enter: nothing interrupts it at other times.
//
// It imports nothing else of zfuse.
package uring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Opcodes of submission entries (include/uapi/linux/io_uring.h).
const (
	OpNop      = 0
	OpRead     = 22
	OpURingCmd = 46
)

const (
	setupSQE128       = 1 << 10
	setupSingleIssuer = 1 << 12
	setupDeferTaskrun = 1 << 13

	enterGetEvents = 1 << 0
	featSingleMmap = 1 << 0

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	sqeSize = 128 // with IORING_SETUP_SQE128
	cqeSize = 16
)

// ErrFull means every submission entry is prepared and not yet submitted.
var ErrFull = errors.New("uring: submission queue full")

// An SQE is a 128-byte submission entry, laid out as struct io_uring_sqe
// followed by its 80-byte command area (Cmd), which IORING_OP_URING_CMD
// passes to the driver.
type SQE struct {
	Opcode      uint8
	Flags       uint8
	Ioprio      uint16
	Fd          int32
	Off         uint64 // the offset; for IORING_OP_URING_CMD, the low 32 bits are cmd_op
	Addr        uint64
	Len         uint32
	OpFlags     uint32
	UserData    uint64
	BufIndex    uint16
	Personality uint16
	SpliceFdIn  int32
	Cmd         [80]byte // addr3 and pad2 for other opcodes
}

// A CQE is a completion: the UserData of its submission entry and the
// result, a negative errno on failure.
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

func init() {
	if unsafe.Sizeof(SQE{}) != sqeSize || unsafe.Offsetof(SQE{}.Cmd) != 48 || unsafe.Sizeof(CQE{}) != cqeSize {
		panic("uring: SQE or CQE layout is not the kernel's")
	}
}

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sq                                                                     sqOffsets
	cq                                                                     cqOffsets
}

// A Ring is one io_uring instance. It is not safe for concurrent use, and
// it must be used from the thread that set it up (see the package doc).
type Ring struct {
	fd      int
	rings   []byte // the SQ and CQ rings (one mapping where the kernel shares them)
	cqRings []byte // the CQ ring's mapping where it has one of its own; else nil
	sqeMem  []byte

	sqHead, sqTail *uint32 // shared with the kernel
	sqMask         uint32
	sqArray        []uint32
	sqes           []SQE
	prepared       uint32 // entries prepared since the last Enter

	cqHead, cqTail *uint32 // shared with the kernel
	cqMask         uint32
	cqes           []CQE
}

// New sets up a ring of at least entries submission entries (twice as many
// completion entries) for the calling thread.
func New(entries uint32) (*Ring, error) {
	p := params{flags: setupSQE128 | setupSingleIssuer | setupDeferTaskrun}
	fd, _, e := syscall.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", e)
	}
	r := &Ring{fd: int(fd)}
	if err := r.mmap(&p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Ring) mmap(p *params) error {
	sqSize := int(p.sq.array + p.sqEntries*4)
	cqSize := int(p.cq.cqes + p.cqEntries*cqeSize)
	single := p.features&featSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	prot, flags := unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE
	var err error
	if r.rings, err = unix.Mmap(r.fd, offSQRing, sqSize, prot, flags); err != nil {
		return fmt.Errorf("mmap io_uring SQ: %w", err)
	}
	cq := r.rings
	if !single {
		if r.cqRings, err = unix.Mmap(r.fd, offCQRing, cqSize, prot, flags); err != nil {
			return fmt.Errorf("mmap io_uring CQ: %w", err)
		}
		cq = r.cqRings
	}
	if r.sqeMem, err = unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*sqeSize, prot, flags); err != nil {
		return fmt.Errorf("mmap io_uring SQEs: %w", err)
	}
	u32 := func(b []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }
	r.sqHead, r.sqTail, r.sqMask = u32(r.rings, p.sq.head), u32(r.rings, p.sq.tail), *u32(r.rings, p.sq.ringMask)
	r.sqArray = unsafe.Slice(u32(r.rings, p.sq.array), p.sqEntries)
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.cqHead, r.cqTail, r.cqMask = u32(cq, p.cq.head), u32(cq, p.cq.tail), *u32(cq, p.cq.ringMask)
	r.cqes = unsafe.Slice((*CQE)(unsafe.Pointer(&cq[p.cq.cqes])), p.cqEntries)
	return nil
}

// Close tears the ring down: the kernel cancels what is in flight.
func (r *Ring) Close() error {
	for _, m := range [][]byte{r.sqeMem, r.cqRings, r.rings} {
		if m != nil {
			unix.Munmap(m)
		}
	}
	r.sqeMem, r.cqRings, r.rings = nil, nil, nil
	if r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// Prepare returns the next submission entry, zeroed, to be submitted by
// the next Enter.
func (r *Ring) Prepare() (*SQE, error) {
	tail := *r.sqTail + r.prepared // only this thread writes the tail
	if tail-atomic.LoadUint32(r.sqHead) >= uint32(len(r.sqes)) {
		return nil, ErrFull
	}
	i := tail & r.sqMask
	r.sqArray[i] = i
	s := &r.sqes[i]
	*s = SQE{}
	r.prepared++
	return s, nil
}

// Enter submits the entries prepared and waits until at least wait
// completions are ready (0: it only submits). A signal that interrupts
// the wait is not an error: Enter returns and the caller reaps what is
// there.
func (r *Ring) Enter(wait uint32) error {
	atomic.StoreUint32(r.sqTail, *r.sqTail+r.prepared)
	r.prepared = 0
	flags := uintptr(0)
	if wait > 0 {
		flags = enterGetEvents
	}
	for {
		// Everything past the kernel's head is to be submitted, also
		// what an earlier Enter may have left.
		n := *r.sqTail - atomic.LoadUint32(r.sqHead)
		_, _, e := syscall.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(n), uintptr(wait), flags, 0, 0)
		switch {
		case e == 0:
			return nil
		case e == syscall.EINTR && *r.sqTail == atomic.LoadUint32(r.sqHead):
			return nil // interrupted while waiting
		case e == syscall.EINTR:
			continue
		default:
			return fmt.Errorf("io_uring_enter: %w", e)
		}
	}
}

// Reap calls f for each completion ready, in order, and frees their
// entries. f must not call Enter.
func (r *Ring) Reap(f func(CQE)) {
	head := *r.cqHead // only this thread writes the head
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		f(r.cqes[head&r.cqMask])
	}
	atomic.StoreUint32(r.cqHead, head)
}
