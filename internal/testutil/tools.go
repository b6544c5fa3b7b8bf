package testutil

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Python is Debian's python3, where `make deps` installs zarr-python 2.13,
// numcodecs 0.11, xarray and the readers' modules (the python3 on PATH may
// lack them).
const Python = "/usr/bin/python3"

// pythonChecks caches, per module list, whether Python imports it.
var pythonChecks sync.Map // "zarr, numcodecs" -> func() error

// NeedPython skips t (Need) unless Python imports every module.
func NeedPython(t testing.TB, modules ...string) {
	t.Helper()
	list := strings.Join(modules, ", ")
	check, _ := pythonChecks.LoadOrStore(list, sync.OnceValue(func() error {
		out, err := exec.Command(Python, "-c", "import "+list).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	}))
	err := check.(func() error)()
	Need(t, fmt.Sprintf("%s with %s (make deps): %v", Python, list, err), err == nil)
}

// NeedFUSE skips t (Need) without /dev/fuse and fusermount3 (Debian's fuse3).
func NeedFUSE(t testing.TB) {
	t.Helper()
	_, err := exec.LookPath("fusermount3")
	_, derr := os.Stat("/dev/fuse")
	Need(t, "FUSE (/dev/fuse and fusermount3 from Debian's fuse3)", err == nil && derr == nil)
}

// GoTool returns the go command: the one on PATH, else the one of the
// toolchain that built the test.
func GoTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// Versitygw returns the versitygw binary (an S3 gateway over a directory):
// $ZFUSE_VERSITYGW, $(go env GOPATH)/bin where `make deps` installs it, or
// PATH; it skips t (Need) when there is none.
func Versitygw(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("ZFUSE_VERSITYGW"); p != "" {
		return p
	}
	if out, err := exec.Command(GoTool(), "env", "GOPATH").Output(); err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
			p := filepath.Join(dir, "bin", "versitygw")
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				return p
			}
		}
	}
	p, err := exec.LookPath("versitygw")
	Need(t, "versitygw (make deps: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)", err == nil)
	return p
}

// FreeAddr returns a 127.0.0.1 address with a port free at the time of the
// call, for a server the test starts.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// WaitListening waits until something accepts TCP connections on addr. It
// gives up with an error when exited is closed (the server's process ended;
// nil: not watched) or after within.
func WaitListening(addr string, exited <-chan struct{}, within time.Duration) error {
	for deadline := time.Now().Add(within); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return errors.New("server for " + addr + " exited")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a port another process opens
	}
}
