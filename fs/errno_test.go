package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"syscall"
	"testing"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/store"
)

func TestErrno(t *testing.T) {
	ctx := context.Background()
	var logs logBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	for _, r := range []struct {
		err    error
		want   syscall.Errno
		logged string
	}{
		{nil, 0, ""},
		{fmt.Errorf("read x: %w", context.Canceled), syscall.EINTR, ""},
		{&iofs.PathError{Op: "open", Path: "x", Err: iofs.ErrNotExist}, syscall.ENOENT, ""},
		{fmt.Errorf("x: %w", store.ErrOutside), syscall.EACCES, "WARN"},
		{&iofs.PathError{Op: "read", Path: "x", Err: syscall.ENOTDIR}, syscall.ENOTDIR, ""},
		{fmt.Errorf("decode a/3: %w", codec.ErrCorrupt), syscall.EIO, "ERROR"},
		{errors.New("anything else"), syscall.EIO, "ERROR"},
	} {
		logs.buf.Reset()
		if got := errno(ctx, log, "read", "a/3", r.err); got != r.want {
			t.Errorf("errno(%v) = %v, want %v", r.err, got, r.want)
		}
		l := logs.String()
		if r.logged == "" && l != "" || r.logged != "" && !(bytes.Contains([]byte(l), []byte("level="+r.logged)) && bytes.Contains([]byte(l), []byte("key=a/3"))) {
			t.Errorf("errno(%v) logged %q, want level %q with the key", r.err, l, r.logged)
		}
	}
}
