// Package fuseuring serves a FUSE connection over io_uring (FUSE over
// io_uring, Linux 6.14 and later): the kernel hands each request to a
// ring entry of the CPU the request was made on, and the daemon answers
// and takes the next request in one io_uring_enter.
//
// The one fact to know: every queue's threads are pinned to its CPU, so a
// request and its answer stay on the CPU of the process that asked. A
// request costs two context switches on that CPU, where /dev/fuse costs a
// wake-up of a daemon thread wherever it sleeps (an inter-processor
// interrupt, expensive in a VM) and go-fuse's hand-offs between goroutines:
// measured here, Python's isatty on a FUSE file (one FUSE_IOCTL) took 10 µs
// over io_uring against 30-67 µs over /dev/fuse (docs/performance.md).
//
// A Transport serves what the kernel sends through the rings; requests it
// still sends through /dev/fuse (FORGET, INTERRUPT) are Dev's. Both answer
// through one fuse.ProtocolServer, so an INTERRUPT finds the request it is
// for whichever way that came. The kernel offers FUSE over io_uring only
// where root enabled it (/sys/module/fuse/parameters/enable_uring).
package fuseuring

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Config configures a Transport.
type Config struct {
	// Queues is the number of the kernel's queues: one per possible CPU
	// (/sys/devices/system/cpu/possible), every one of which must have an
	// entry before the kernel uses the rings. 0 reads it.
	Queues int
	// PerQueue is how many requests of one CPU are served at once: each
	// is a thread of its own, so that a request that waits (a READ of a
	// chunk being decoded) does not hold up the others. 0 means 2.
	PerQueue int
	// Payload is each entry's buffer for a request's arguments and its
	// answer: at least the connection's max_write and max_pages (the
	// kernel refuses smaller ones). Pages are mapped as they are used.
	Payload int
	// Count, if set, sees the opcode of every request a ring answers
	// without the ProtocolServer (IOCTL, see queue.answer).
	Count func(opcode uint32)
	// Log receives a line per queue thread that fails. Nil discards.
	Log *slog.Logger

	payload int // tests: Serve's payload, however small (the kernel refuses one too small)
}

// A Transport is the ring threads of one connection. Prepare sets them up,
// Start registers them with the kernel, and they end with the connection.
type Transport struct {
	cfg     Config
	threads []*thread

	wg      sync.WaitGroup
	started atomic.Bool
}

// ErrUnavailable means this kernel or process cannot serve FUSE over
// io_uring: no io_uring (or kernel.io_uring_disabled), or no CPU list.
var ErrUnavailable = errors.New("fuseuring: io_uring unavailable")

// Prepare starts the ring threads, each with its ring and its entry's
// buffers, waiting for Start. It runs before the connection's FUSE_INIT,
// so that a mount asks the kernel for io_uring only where rings can be
// set up: once FUSE_INIT has agreed to io_uring, the kernel holds every
// request until each queue has an entry.
func Prepare(cfg Config) (*Transport, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.PerQueue <= 0 {
		cfg.PerQueue = 2
	}
	if cfg.Queues <= 0 {
		n, err := possibleCPUs()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		cfg.Queues = n
	}
	t := &Transport{cfg: cfg}
	// Round by round, so that the first round has one thread per queue
	// (see Start).
	for range cfg.PerQueue {
		for q := range cfg.Queues {
			th, err := t.startThread(q)
			if err != nil {
				t.Close()
				return nil, err
			}
			t.threads = append(t.threads, th)
		}
	}
	return t, nil
}

// Start registers every thread's entry on the connection fd (a /dev/fuse
// descriptor whose FUSE_INIT agreed to io_uring), after which the kernel
// sends requests through the rings, and they are answered through ps.
//
// The kernel uses the rings once every queue has an entry: the first round
// of threads. If one of those fails to register, Start undoes io_uring for
// the connection (the kernel then sends everything through /dev/fuse
// again), ends the threads and returns the error. A thread of a later
// round that fails only leaves its queue one thread short, with a line in
// the log.
func (t *Transport) Start(fd int, ps *fuse.ProtocolServer) error {
	if !t.started.CompareAndSwap(false, true) {
		return errors.New("fuseuring: Start called twice")
	}
	for i, th := range t.threads {
		th.once.Do(func() { th.start <- start{fd: fd, ps: ps} })
		err := <-th.registered
		switch {
		case err == nil:
		case i < t.cfg.Queues:
			t.Close()
			return fmt.Errorf("queue %d: %w", th.qid, err)
		default:
			t.cfg.Log.Warn("FUSE over io_uring: a queue serves with a thread less", "queue", th.qid, "err", err)
		}
	}
	return nil
}

// Reset turns io_uring off for the connection fd, whose FUSE_INIT agreed
// to it, when the Transport is not to serve it after all: the kernel then
// sends every request through /dev/fuse. It ends the threads.
func (t *Transport) Reset(fd int) {
	if t.started.CompareAndSwap(false, true) {
		th := t.threads[0]
		th.once.Do(func() { th.start <- start{fd: fd, reset: true} })
		<-th.registered
	}
	t.Close()
}

// Wait waits until every thread has ended: the connection is gone
// (unmounted or aborted), or Close was called.
func (t *Transport) Wait() { t.wg.Wait() }

// Close ends every thread and frees its ring. It is for a connection that
// is not to be served over io_uring after all: the threads of one that is
// end with it (unmounted or aborted).
func (t *Transport) Close() {
	for _, th := range t.threads {
		th.once.Do(func() { close(th.start) })
		th.stop()
	}
}

// possibleCPUs counts the CPUs of /sys/devices/system/cpu/possible
// ("0-3,8-11"), as the kernel's num_possible_cpus() does: its ring has as
// many queues, one per CPU number (a system with holes in the list has
// CPU numbers past that count, which the kernel maps to queue 0).
func possibleCPUs() (int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return 0, err
	}
	return countCPUs(strings.TrimSpace(string(b)))
}

// countCPUs counts the CPUs of a kernel CPU list.
func countCPUs(s string) (int, error) {
	n := 0
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return 0, fmt.Errorf("CPU list %q", s)
		}
		n += b - a + 1
	}
	return n, nil
}

// pin runs the calling thread on cpu only. Where it may not (a container's
// cpuset without that CPU), the thread runs anywhere: readers there run on
// the CPUs allowed, whose queues are pinned.
func pin(cpu int) {
	var set unix.CPUSet
	set.Set(cpu)
	unix.SchedSetaffinity(0, &set)
}

// lockThread locks the goroutine to its thread for good: a Ring belongs to
// the thread that set it up, and the thread to its CPU.
func lockThread() { runtime.LockOSThread() }
