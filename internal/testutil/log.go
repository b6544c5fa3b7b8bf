package testutil

import (
	"bytes"
	"log/slog"
	"sync"
)

// A LogBuffer collects log output, for a test to look for the lines it
// expects (slog.NewTextHandler(&buf, nil)). It is safe for concurrent
// use; the zero value is ready.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns what was written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Reset forgets what was written.
func (l *LogBuffer) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Reset()
}

// Logger returns a logger at Debug level whose text lines go to the
// returned buffer.
func Logger() (*slog.Logger, *LogBuffer) {
	logs := &LogBuffer{}
	return slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), logs
}
