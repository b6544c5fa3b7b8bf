package tree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/store"
)

func TestErrno(t *testing.T) {
	ctx := context.Background()
	var logs testutil.LogBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	for _, r := range []struct {
		err    error
		want   syscall.Errno
		logged string
	}{
		{nil, 0, ""},
		{fmt.Errorf("read x: %w", context.Canceled), syscall.EINTR, ""},
		{&fs.PathError{Op: "open", Path: "x", Err: fs.ErrNotExist}, syscall.ENOENT, ""},
		{fmt.Errorf("x: %w", store.ErrOutside), syscall.EACCES, "WARN"},
		{&fs.PathError{Op: "read", Path: "x", Err: syscall.ENOTDIR}, syscall.ENOTDIR, ""},
		{fmt.Errorf("decode a/3: %w", codec.ErrCorrupt), syscall.EIO, "ERROR"},
		{errors.New("anything else"), syscall.EIO, "ERROR"},
	} {
		logs.Reset()
		tr := &Tree{log: log}
		if got := tr.Errno(ctx, "read", "a/3", r.err); got != r.want {
			t.Errorf("errno(%v) = %v, want %v", r.err, got, r.want)
		}
		l := logs.String()
		if r.logged == "" && l != "" || r.logged != "" && !(bytes.Contains([]byte(l), []byte("level="+r.logged)) && bytes.Contains([]byte(l), []byte("key=a/3"))) {
			t.Errorf("errno(%v) logged %q, want level %q with the key", r.err, l, r.logged)
		}
	}
}

// TestFailuresOnce: a failure is logged once, however many requests fail
// the same way at once (the kernel reads a page again after its readahead
// of it failed), and again once the window has passed.
func TestFailuresOnce(t *testing.T) {
	var f failures
	t0 := time.Now()
	corrupt := fmt.Errorf("decode a/3: %w", codec.ErrCorrupt)
	for _, r := range []struct {
		key  string
		err  error
		at   time.Duration
		want bool
	}{
		{"a/3", corrupt, 0, true},
		{"a/3", corrupt, 10 * time.Millisecond, false}, // the kernel's second READ
		{"a/4", corrupt, 20 * time.Millisecond, true},  // another key
		{"a/3", errors.New("another reason"), 30 * time.Millisecond, true},
		{"a/3", corrupt, repeatWindow + time.Millisecond, true}, // read again later
	} {
		if got := f.first(r.key, r.err, t0.Add(r.at)); got != r.want {
			t.Errorf("first(%s, %v) at +%v = %v, want %v", r.key, r.err, r.at, got, r.want)
		}
	}
}
