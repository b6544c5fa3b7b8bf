package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"log/syslog"
	"strings"
	"sync"
)

// Syslog returns a handler that sends each record to the local syslog
// daemon as zfuse (facility daemon), at the priority of its level, and
// the function that closes the connection.
func Syslog(opts *slog.HandlerOptions) (slog.Handler, func(), error) {
	w, err := syslog.New(syslog.LOG_DAEMON|syslog.LOG_INFO, "zfuse")
	if err != nil {
		return nil, nil, err
	}
	return newHandler(w, opts), func() { w.Close() }, nil
}

// A handler sends each record, formatted as slog's TextHandler does
// (without the time: syslog adds its own), to syslog at the priority of
// its level.
type handler struct {
	w   *syslog.Writer
	mu  *sync.Mutex   // guards buf; shared by the handlers WithAttrs returns
	buf *bytes.Buffer // h writes here
	h   slog.Handler  // a TextHandler
}

func newHandler(w *syslog.Writer, opts *slog.HandlerOptions) *handler {
	buf := &bytes.Buffer{}
	o := *opts
	o.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	return &handler{w: w, mu: &sync.Mutex{}, buf: buf, h: slog.NewTextHandler(buf, &o)}
}

func (s *handler) Enabled(ctx context.Context, l slog.Level) bool { return s.h.Enabled(ctx, l) }

func (s *handler) Handle(ctx context.Context, r slog.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Reset()
	if err := s.h.Handle(ctx, r); err != nil {
		return err
	}
	msg := strings.TrimSuffix(s.buf.String(), "\n")
	switch {
	case r.Level >= slog.LevelError:
		return s.w.Err(msg)
	case r.Level >= slog.LevelWarn:
		return s.w.Warning(msg)
	case r.Level >= slog.LevelInfo:
		return s.w.Info(msg)
	}
	return s.w.Debug(msg)
}

func (s *handler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *s
	c.h = s.h.WithAttrs(as)
	return &c
}

func (s *handler) WithGroup(name string) slog.Handler {
	c := *s
	c.h = s.h.WithGroup(name)
	return &c
}
