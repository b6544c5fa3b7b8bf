package fuseuring

import (
	"errors"
	"log/slog"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Dev answers, through ps, what the kernel sends a connection served over
// io_uring through /dev/fuse itself: FORGET and BATCH_FORGET, INTERRUPT
// (for requests of the rings too: ps knows every request in flight), and
// NOTIFY_REPLY. It reads fd until the connection ends (ENODEV), and
// returns then. Those requests are small and never wait, so one reader
// serves them; but the kernel takes only reads with room for its largest
// request, maxWrite (the connection's max_write) and a WRITE's headers.
func Dev(fd int, ps *fuse.ProtocolServer, maxWrite int, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	in := make([]byte, max(maxWrite, 8192)+4096)
	out := make([]byte, 1<<16)
	for {
		n, err := unix.Read(fd, in)
		switch {
		case err == nil:
		case errors.Is(err, syscall.EINTR), errors.Is(err, syscall.ENOENT): // ENOENT: the request was interrupted before it was read
			continue
		case errors.Is(err, syscall.ENODEV): // unmounted
			return
		default:
			log.Error("FUSE over io_uring: reading /dev/fuse", "err", err)
			return
		}
		m, _ := ps.HandleRequest([][]byte{in[:n]}, [][]byte{out})
		if m == 0 {
			continue // FORGET, or an INTERRUPT that found its request
		}
		// ENOENT: the request an answer is for has ended (an INTERRUPT
		// for a request answered meanwhile).
		if _, err := unix.Write(fd, out[:m]); err != nil && !errors.Is(err, syscall.ENOENT) {
			log.Debug("FUSE over io_uring: answering through /dev/fuse", "err", err)
		}
	}
}
