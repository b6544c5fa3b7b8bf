package fs

import (
	"context"
	"errors"
	iofs "io/fs"
	"log/slog"
	"syscall"

	"github.com/zfuse/zfuse/store"
)

// errno turns an error into the errno a FUSE request returns, and is where
// failed requests are logged. Missing keys are ENOENT, keys outside the
// store EACCES, interrupted requests EINTR; anything else (a corrupt chunk,
// an I/O error) is EIO with an Error line naming the key and the reason.
//
// go-fuse's fs.ToErrno is not used: it does not unwrap %w.
func errno(ctx context.Context, log *slog.Logger, op, key string, err error) syscall.Errno {
	var e syscall.Errno
	switch {
	case err == nil:
		return 0
	case errors.Is(err, context.Canceled):
		return syscall.EINTR
	case errors.Is(err, iofs.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, store.ErrOutside):
		log.WarnContext(ctx, "key outside the store", "op", op, "key", key, "err", err)
		return syscall.EACCES
	case errors.As(err, &e):
		return e
	}
	log.ErrorContext(ctx, "request failed", "op", op, "key", key, "err", err)
	return syscall.EIO
}
