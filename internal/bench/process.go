package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// A Process is a server under measurement (a mount): started, ready once
// its output holds a line, measured from /proc and stopped with SIGTERM.
// Start and Stop wait a minute at most. Stop must be called once.
type Process struct {
	name   string // in errors: "zfuse mount"
	cmd    *exec.Cmd
	log    LineLog // its stderr
	exited chan struct{}
	err    error // of Wait, once exited is closed
}

// Usage is what a process used.
type Usage struct {
	HWM int64         // peak RSS (VmHWM)
	CPU time.Duration // user + system
}

// Start starts cmd, named name in errors, with its stderr collected, and
// returns once the output holds ready. When it does not (the process
// exited, a minute passed, ctx ended), it stops the process and returns
// an error that holds the output.
func Start(ctx context.Context, name string, cmd *exec.Cmd, ready string) (*Process, error) {
	p := &Process{name: name, cmd: cmd, exited: make(chan struct{})}
	cmd.Stderr = &p.log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := p.log.WaitFor(ctx, ready, p.exited); err != nil {
		p.Stop()
		return nil, fmt.Errorf("bench: %s did not get ready: %w\n%s", name, err, p.log.String())
	}
	return p, nil
}

// Signal sends the process sig (zfuse mount writes its stats file on
// SIGUSR1).
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Log returns the process's output so far.
func (p *Process) Log() string { return p.log.String() }

// Stop measures the process, then stops it with SIGTERM (killing it after
// a minute). The error says why it did not exit cleanly, or why it could
// not be measured.
func (p *Process) Stop() (Usage, error) {
	var u Usage
	pid := p.cmd.Process.Pid
	var errs []error
	var err error
	if u.HWM, err = VmHWM(pid); err != nil {
		errs = append(errs, err)
	}
	if u.CPU, err = CPUTime(pid); err != nil {
		errs = append(errs, err)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		<-p.exited
		return u, fmt.Errorf("bench: %s did not stop within a minute of SIGTERM\n%s", p.name, p.log.String())
	}
	if p.err != nil {
		return u, fmt.Errorf("bench: %s: %v\n%s", p.name, p.err, p.log.String())
	}
	return u, errors.Join(errs...)
}
