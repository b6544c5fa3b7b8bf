package tree

import (
	"context"
	"errors"
	"io/fs"
	"sync"
	"syscall"
	"time"

	"github.com/zfuse/zfuse/store"
)

// Errno turns an error into the errno a FUSE request returns, and is where
// failed requests are logged. Missing keys are ENOENT, keys outside the
// store EACCES, interrupted requests EINTR; anything else (a corrupt chunk,
// an I/O error) is EIO with an Error line naming the key and the reason,
// once per failure (t.failed).
//
// go-fuse's fs.ToErrno is not used: it does not unwrap %w.
func (t *Tree) Errno(ctx context.Context, op, key string, err error) syscall.Errno {
	var e syscall.Errno
	switch {
	case err == nil:
		return 0
	case errors.Is(err, context.Canceled):
		return syscall.EINTR
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, store.ErrOutside):
		t.log.WarnContext(ctx, "key outside the store", "op", op, "key", key, "err", err)
		return syscall.EACCES
	case errors.As(err, &e):
		return e
	}
	if t.failed.first(key, err, time.Now()) {
		t.log.ErrorContext(ctx, "request failed", "op", op, "key", key, "err", err)
	} else {
		t.log.DebugContext(ctx, "request failed again", "op", op, "key", key, "err", err)
	}
	return syscall.EIO
}

// repeatWindow is how long a failure logged stays the one failure: a
// reader's read(2) of a chunk that fails is two READ requests (the
// kernel's readahead of the page, then, that having failed, a read of the
// same page), and the second fails as the first did.
const repeatWindow = time.Second

// failures are the failed requests logged within repeatWindow, by key
// and error. It is safe for concurrent use; the zero value is ready.
type failures struct {
	mu   sync.Mutex
	seen map[string]time.Time // key and error text -> when logged
}

// first reports whether a failure of key with err at now is not one
// logged within repeatWindow before, and records it.
func (f *failures) first(key string, err error, now time.Time) bool {
	id := key + "\x00" + err.Error()
	f.mu.Lock()
	defer f.mu.Unlock()
	if at, ok := f.seen[id]; ok && now.Sub(at) < repeatWindow {
		return false
	}
	if len(f.seen) >= 1024 { // keep it small: forget what is past the window
		for k, at := range f.seen {
			if now.Sub(at) >= repeatWindow {
				delete(f.seen, k)
			}
		}
	}
	if f.seen == nil {
		f.seen = map[string]time.Time{}
	}
	f.seen[id] = now
	return true
}
