// Package daemon runs zfuse mount in the background: Start runs this
// binary again as a child in a new session (no controlling terminal,
// stdio on /dev/null) with a pipe on fd 3, and waits; the child (Child)
// says on the pipe when the mount is ready, or why it failed, and the
// parent exits 0 or with that reason. Go cannot fork without exec, so
// this is the daemon(3) of a Go program. The child logs to a file, else
// to syslog (Syslog: the journal, on systemd machines).
//
// The one fact to know: the child is told it is one by its environment
// (ReadyEnv), which Child reads and clears.
package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// ReadyEnv names the pipe's fd in the child's environment.
const ReadyEnv = "ZFUSE_READY_FD"

// A Pipe is the child's end of the pipe to the parent waiting in Start.
// Messages are JSON lines. A nil *Pipe (a process in the foreground)
// sends nothing. It is safe for concurrent use.
type Pipe struct {
	mu sync.Mutex
	f  *os.File // nil once ready or failed
}

type message struct {
	Warn  string `json:"warn,omitempty"`
	Error string `json:"error,omitempty"`
	Ready bool   `json:"ready,omitempty"`
}

// Child returns the pipe to the parent when this process is the
// background child Start started, else nil.
func Child() *Pipe {
	fd, err := strconv.Atoi(os.Getenv(ReadyEnv))
	if err != nil {
		return nil
	}
	os.Unsetenv(ReadyEnv)
	return &Pipe{f: os.NewFile(uintptr(fd), "zfuse-ready")}
}

func (p *Pipe) send(m message, last bool) {
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

// Warn has the parent print msg on its stderr.
func (p *Pipe) Warn(msg string) { p.send(message{Warn: msg}, false) }

// Ready tells the parent the mount is ready: it exits 0.
func (p *Pipe) Ready() { p.send(message{Ready: true}, true) }

// Fail tells the parent why the mount failed: it exits 1, saying so.
// After Ready it does nothing.
func (p *Pipe) Fail(err error) { p.send(message{Error: err.Error()}, true) }

// Start runs this binary with args (a mount command line, including
// --background) as a background child and waits until the child's mount
// is ready (nil) or failed (its error); the child's warnings go to
// stderr. If ctx ends first, the child is stopped. The child's stderr
// (where a crash would be told) goes to logFile, if not "", else nowhere.
func Start(ctx context.Context, args []string, logFile string, stderr io.Writer) error {
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
	cmd.Env = append(os.Environ(), ReadyEnv+"=3")
	cmd.ExtraFiles = []*os.File{w}                       // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // leave the terminal's session
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("--background: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return wait(ctx, cmd, messages(r), exited, stderr)
}

// messages returns the messages the child sends on r, closed when the
// child closes its end.
func messages(r io.Reader) <-chan message {
	msgs := make(chan message)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m message
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				msgs <- m
			}
		}
	}()
	return msgs
}

// wait waits for the child cmd's word on msgs: ready, failed (after it
// exited), or its warnings, printed on stderr; or for ctx to end, then
// stopping the child.
func wait(ctx context.Context, cmd *exec.Cmd, msgs <-chan message, exited <-chan error, stderr io.Writer) error {
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
