package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"log/syslog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// zfuse mount --background starts zfuse mount again as a child in a new
// session (no controlling terminal, stdio on /dev/null) with a pipe on fd 3,
// and waits: the child says on the pipe when the mount is ready, or why it
// failed, and the parent exits 0 or with that reason. Go cannot fork
// without exec, so this is the daemon(3) of a Go program. The child logs to
// --log-file, else to syslog (the journal, on systemd machines).

// readyEnv names the pipe's fd in the child's environment.
const readyEnv = "ZFUSE_READY_FD"

// backgroundFlags are the flags for running as a daemon.
type backgroundFlags struct {
	background bool
	logFile    string
}

// addLogFileFlag defines --log-file, which every command serving a tree
// takes.
func addLogFileFlag(fl *flag.FlagSet) *backgroundFlags {
	f := &backgroundFlags{}
	fl.StringVar(&f.logFile, "log-file", "", "append the log to this file instead of stderr (or syslog, when in the background)")
	return f
}

// addBackgroundFlags defines --background and -d, zfuse mount's.
func (f *backgroundFlags) addBackgroundFlags(fl *flag.FlagSet) {
	fl.Var((*boolFlag)(&f.background), "background", "mount: return once the mount is ready (exit 0), or with the reason it failed, and serve it from a process in the background; logs go to --log-file, else syslog/the journal")
	fl.Var((*boolFlag)(&f.background), "d", "the same as --background")
}

// A parentPipe is the child's end of the pipe to the parent waiting in
// startBackground. Messages are JSON lines.
type parentPipe struct {
	mu sync.Mutex
	f  *os.File // nil once ready or failed
}

type pipeMsg struct {
	Warn  string `json:"warn,omitempty"`
	Error string `json:"error,omitempty"`
	Ready bool   `json:"ready,omitempty"`
}

// backgroundChild returns the pipe to the parent when this process is the
// child of zfuse mount --background, else nil.
func backgroundChild() *parentPipe {
	fd, err := strconv.Atoi(os.Getenv(readyEnv))
	if err != nil {
		return nil
	}
	os.Unsetenv(readyEnv)
	return &parentPipe{f: os.NewFile(uintptr(fd), "zfuse-ready")}
}

func (p *parentPipe) send(m pipeMsg, last bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f == nil {
		return
	}
	b, _ := json.Marshal(m)
	p.f.Write(append(b, '\n'))
	if last {
		p.f.Close()
		p.f = nil
	}
}

// warn has the parent print msg on its stderr.
func (p *parentPipe) warn(msg string) { p.send(pipeMsg{Warn: msg}, false) }

// ready tells the parent the mount is ready: it exits 0.
func (p *parentPipe) ready() { p.send(pipeMsg{Ready: true}, true) }

// fail tells the parent why the mount failed: it exits 1, saying so. After
// ready it does nothing.
func (p *parentPipe) fail(err error) { p.send(pipeMsg{Error: err.Error()}, true) }

// startBackground runs zfuse with args (a mount command line, including
// --background) as a background child and waits until the child's mount
// is ready (nil) or failed (its error). If ctx ends first, the child is
// stopped. The child's stderr (where a crash would be told) goes to
// logFile, if not "", else nowhere.
func startBackground(ctx context.Context, args []string, logFile string, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--background: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("--background: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(exe, args...)
	if logFile != "" {
		lf, err := os.OpenFile(logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("--log-file: %w", err)
		}
		defer lf.Close()
		cmd.Stderr = lf
	}
	cmd.Env = append(os.Environ(), readyEnv+"=3")
	cmd.ExtraFiles = []*os.File{w}                       // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // leave the terminal's session
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("--background: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	msgs := make(chan pipeMsg)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m pipeMsg
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				msgs <- m
			}
		}
	}()
	for {
		select {
		case m, ok := <-msgs:
			switch {
			case !ok: // the child closed the pipe without a word: it died
				err := <-exited
				return fmt.Errorf("the background mount exited before it was ready: %v", err)
			case m.Ready:
				return nil
			case m.Error != "":
				<-exited
				return errors.New(m.Error)
			case m.Warn != "":
				fmt.Fprintln(stderr, "zfuse:", m.Warn)
			}
		case <-ctx.Done():
			cmd.Process.Signal(syscall.SIGTERM)
			<-exited
			return fmt.Errorf("interrupted before the mount was ready: %w", ctx.Err())
		}
	}
}

// openLog returns the logger of a command: to --log-file if given; else,
// in a background child, to syslog (or nowhere, with a warning to the
// parent, if there is no syslog); else to stderr. close closes the file.
func openLog(stderr io.Writer, level slog.Level, f *backgroundFlags, child *parentPipe) (log *slog.Logger, close func(), err error) {
	opts := &slog.HandlerOptions{Level: level}
	switch {
	case f.logFile != "":
		lf, err := os.OpenFile(f.logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		return slog.New(slog.NewTextHandler(lf, opts)), func() { lf.Close() }, nil
	case child != nil:
		w, err := syslog.New(syslog.LOG_DAEMON|syslog.LOG_INFO, "zfuse")
		if err != nil {
			child.warn(fmt.Sprintf("no syslog to log to (%v): the background mount logs nothing; give it --log-file", err))
			return slog.New(slog.DiscardHandler), func() {}, nil
		}
		return slog.New(newSyslogHandler(w, opts)), func() { w.Close() }, nil
	}
	return slog.New(slog.NewTextHandler(stderr, opts)), func() {}, nil
}

// A syslogHandler sends each record, formatted as slog's TextHandler does
// (without the time: syslog adds its own), to syslog at the priority of
// its level.
type syslogHandler struct {
	w   *syslog.Writer
	mu  *sync.Mutex   // guards buf; shared by the handlers WithAttrs returns
	buf *bytes.Buffer // h writes here
	h   slog.Handler  // a TextHandler
}

func newSyslogHandler(w *syslog.Writer, opts *slog.HandlerOptions) *syslogHandler {
	buf := &bytes.Buffer{}
	o := *opts
	o.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	return &syslogHandler{w: w, mu: &sync.Mutex{}, buf: buf, h: slog.NewTextHandler(buf, &o)}
}

func (s *syslogHandler) Enabled(ctx context.Context, l slog.Level) bool { return s.h.Enabled(ctx, l) }

func (s *syslogHandler) Handle(ctx context.Context, r slog.Record) error {
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

func (s *syslogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *s
	c.h = s.h.WithAttrs(as)
	return &c
}

func (s *syslogHandler) WithGroup(name string) slog.Handler {
	c := *s
	c.h = s.h.WithGroup(name)
	return &c
}
