package daemon

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"
)

// TestPipe: the child's warnings, then its last word, reach the parent in
// order; after the last word nothing more is sent, and a nil Pipe (a
// foreground process) sends nothing.
func TestPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := &Pipe{f: w}
	msgs := messages(r)
	p.Warn("no syslog")
	p.Fail(errors.New("no such store"))
	p.Ready() // after Fail: nothing
	var nilPipe *Pipe
	nilPipe.Ready()
	var got []message
	for m := range msgs {
		got = append(got, m)
	}
	if len(got) != 2 || got[0].Warn != "no syslog" || got[1].Error != "no such store" || got[1].Ready {
		t.Errorf("messages %+v", got)
	}
}

// TestChild: the environment says whether this process is a background
// child, and Child clears it, so that the mount's own children are not.
func TestChild(t *testing.T) {
	t.Setenv(ReadyEnv, "")
	if Child() != nil {
		t.Error("a child without a pipe")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	t.Setenv(ReadyEnv, "notanfd")
	if Child() != nil {
		t.Error("a child with a bad fd")
	}
	fd, err := syscall.Dup(int(w.Fd())) // the Pipe's own, which Ready closes
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(ReadyEnv, strconv.Itoa(fd))
	p := Child()
	if p == nil || os.Getenv(ReadyEnv) != "" {
		t.Fatalf("Child: %v, %s=%q", p, ReadyEnv, os.Getenv(ReadyEnv))
	}
	p.Ready()
}
