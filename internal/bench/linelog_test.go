package bench

import (
	"context"
	"errors"
	"testing"
)

// TestLineLog: WaitFor returns once the line is there, or when the
// process exits first.
func TestLineLog(t *testing.T) {
	var l LineLog
	done := make(chan error)
	go func() { done <- l.WaitFor(context.Background(), "msg=mounted", nil) }()
	l.Write([]byte("level=INFO msg=\"serving path\"\n"))
	l.Write([]byte("level=INFO msg=mounted source=x\n"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	close(exited)
	if err := l.WaitFor(context.Background(), "never", exited); !errors.Is(err, ErrExited) {
		t.Errorf("WaitFor after exit: %v, want ErrExited", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.WaitFor(ctx, "never", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitFor after ctx ends: %v", err)
	}
}
