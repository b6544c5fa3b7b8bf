package bench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
)

// ErrExited is WaitFor's error when the process exits before the line.
var ErrExited = errors.New("it exited")

// A LineLog collects a process's output and lets a reader wait for a
// line. Its zero value is ready to use; it is safe for concurrent use.
type LineLog struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	wake chan struct{} // closed and replaced on every write
}

func (l *LineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
	return l.buf.Write(p)
}

// String returns the output so far.
func (l *LineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// WaitFor waits until the output holds s, exited is closed (ErrExited),
// or ctx ends.
func (l *LineLog) WaitFor(ctx context.Context, s string, exited <-chan struct{}) error {
	for {
		l.mu.Lock()
		if strings.Contains(l.buf.String(), s) {
			l.mu.Unlock()
			return nil
		}
		if l.wake == nil {
			l.wake = make(chan struct{})
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-wake:
		case <-exited:
			return ErrExited
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
