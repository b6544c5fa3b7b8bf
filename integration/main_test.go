// Package integration runs the zfuse binary as a user would: it builds
// cmd/zfuse once with -race, mounts stores written at test time by
// zarr-python (testdata/generate.py) and the shared conformance data, reads
// them with zarr-python, xarray and plain file reads, and stops each mount
// with SIGTERM, checking that the binary exits 0 and leaves nothing mounted.
//
// It imports nothing of zfuse but internal/testutil, the helpers every
// package's tests share.
package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
)

var (
	zfuse string // the binary built by TestMain; "" in -short mode
	tmp   string // removed after the tests
	repo  string // the directory holding go.mod
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	if repo, err = testutil.Repo(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if tmp, err = os.MkdirTemp("", "zfuse-integration-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if !testing.Short() {
		// zfuse and, beside it, the CSI plugin zfuse csi runs.
		zfuse = filepath.Join(tmp, "zfuse")
		cmd := exec.Command(testutil.GoTool(), "build", "-race", "-o", tmp, "./cmd/zfuse", "./cmd/zfuse-csi")
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building zfuse: %v\n%s", err, out)
			return 1
		}
	}
	// The tests open directories to other users (openToAll); the
	// temporary directory itself must come out as it went in (1777 on
	// most machines), or the machine's other users can no longer use it.
	before, err := os.Stat(os.TempDir())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	after, err := os.Stat(os.TempDir())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if after.Mode() != before.Mode() {
		fmt.Fprintf(os.Stderr, "the tests changed %s: mode %v, now %v\n", os.TempDir(), before.Mode(), after.Mode())
		return 1
	}
	return code
}

// needMount skips in -short mode and checks for FUSE.
func needMount(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration tests mount for real; skipped with -short")
	}
	testutil.NeedFUSE(t)
}

// needPython checks for /usr/bin/python3 with zarr, numcodecs and xarray.
func needPython(t testing.TB) {
	t.Helper()
	testutil.NeedPython(t, "zarr", "numcodecs", "xarray")
}

// conformance returns a path in the shared conformance data, skipping (or
// failing in CI) when it is absent.
func conformance(t testing.TB, rel string) string {
	t.Helper()
	needMount(t)
	return testutil.Conformance(t, rel)
}

var generated = written("fixtures", "generate.py")

// written returns a function that, on its first call, runs
// testdata/SCRIPT ARGS... DIR, DIR being tmp/NAME, made for it, and
// returns DIR: the stores a group of tests reads, written once per run.
func written(name, script string, args ...string) func() (string, error) {
	return sync.OnceValues(func() (string, error) {
		out := filepath.Join(tmp, name)
		if err := os.Mkdir(out, 0o755); err != nil {
			return "", err
		}
		cmd := exec.Command(testutil.Python, append(append([]string{filepath.Join(repo, "integration", "testdata", script)}, args...), out)...)
		cmd.Env = append(os.Environ(), "PYTHONUTF8=1")
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s: %v\n%s", strings.Join(append([]string{script}, args...), " "), err, b)
		}
		return out, nil
	})
}

// fixtures returns the directory generate.py wrote (once per run).
func fixtures(t testing.TB) string {
	t.Helper()
	needMount(t)
	needPython(t)
	dir, err := generated()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// manifest is what generate.py says about each array.
type manifest struct {
	Arrays map[string]struct {
		Object bool `json:"object"`
		Lossy  bool `json:"lossy"`
	} `json:"arrays"`
}

func readManifest(t testing.TB, dir string) manifest {
	t.Helper()
	var m manifest
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// syncBuffer collects a process's stderr; safe for concurrent use.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed (and replaced) by every Write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

// waitFor reports whether the buffer's contents satisfy ok within d. A line
// the mount logs before it answers a request can reach the buffer after the
// reader has its answer: os/exec copies the pipe on its own goroutine. It
// waits for writes, not for time.
func (s *syncBuffer) waitFor(d time.Duration, ok func(log string) bool) bool {
	deadline := time.After(d)
	for {
		s.mu.Lock()
		if ok(s.b.String()) {
			s.mu.Unlock()
			return true
		}
		if s.written == nil {
			s.written = make(chan struct{})
		}
		written := s.written
		s.mu.Unlock()
		select {
		case <-written:
		case <-deadline:
			return false
		}
	}
}

// holding returns a waitFor condition: the log contains substr.
func holding(substr string) func(string) bool {
	return func(log string) bool { return strings.Contains(log, substr) }
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A mounted is one running zfuse mount.
type mounted struct {
	Dir    string
	Stderr *syncBuffer
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	err    error         // cmd.Wait's result, once exited is closed
}

// mount starts zfuse mount [flags] src DIR and waits until DIR is mounted.
// When the test ends it stops zfuse with SIGTERM and checks that it exited
// 0, reported no data race, and left nothing mounted.
func mount(t testing.TB, src string, flags ...string) *mounted {
	t.Helper()
	needMount(t)
	return startMount(t, zfuse, src, flags...)
}

// startMount starts bin mount [flags] src DIR, waits until DIR is mounted,
// and has the test's end stop it with SIGTERM.
func startMount(t testing.TB, bin, src string, flags ...string) *mounted {
	t.Helper()
	return startMountAt(t, bin, src, t.TempDir(), flags...)
}

// startMountAt is startMount on the mountpoint dir.
func startMountAt(t testing.TB, bin, src, dir string, flags ...string) *mounted {
	t.Helper()
	return startMountCmd(t, dir, exec.Command(bin, mountArgs(src, dir, flags...)...))
}

// mountArgs are the arguments of zfuse mount [flags] src dir.
func mountArgs(src, dir string, flags ...string) []string {
	return append(append([]string{"mount"}, flags...), src, dir)
}

// startMountCmd starts cmd, a zfuse mount at dir (or a wrapper that execs
// one), and handles it as startMount does.
func startMountCmd(t testing.TB, dir string, cmd *exec.Cmd) *mounted {
	t.Helper()
	m := &mounted{Dir: dir, Stderr: &syncBuffer{}, exited: make(chan struct{}), cmd: cmd}
	m.cmd.Stderr = m.Stderr
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { m.err = m.cmd.Wait(); close(m.exited) }()
	t.Cleanup(func() { m.stop(t, syscall.SIGTERM) })
	m.waitMounted(t)
	return m
}

// waitMounted waits until the kernel lists m.Dir as mounted and zfuse has
// logged "mounted". The log line matters: go-fuse opens a file on the new
// mount once it is listed (its poll hack), and a zfuse killed while that
// file is open hangs for ever in its own FLUSH; after "mounted" it is closed.
func (m *mounted) waitMounted(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !isMounted(t, m.Dir) {
		select {
		case <-m.exited:
			t.Fatalf("zfuse mount exited before mounting: %v\n%s", m.err, m.Stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("zfuse did not mount %s within a minute:\n%s", m.Dir, m.Stderr)
		}
		time.Sleep(20 * time.Millisecond) // polling the kernel's mount table
	}
	if !m.Stderr.waitFor(time.Until(deadline), holding("msg=mounted")) {
		t.Fatalf("zfuse mounted %s but did not log it:\n%s", m.Dir, m.Stderr)
	}
}

// stop sends sig and checks the clean exit. It runs once per mount.
func (m *mounted) stop(t testing.TB, sig syscall.Signal) {
	t.Helper()
	select {
	case <-m.exited:
		return // stopped already
	default:
	}
	if err := m.cmd.Process.Signal(sig); err != nil {
		t.Errorf("signal zfuse: %v", err)
	}
	select {
	case <-m.exited:
	case <-time.After(60 * time.Second):
		t.Errorf("zfuse did not exit within a minute of %v", sig)
		m.cmd.Process.Kill()
		<-m.exited
	}
	if m.err != nil {
		t.Errorf("zfuse exited with %v after %v; stderr:\n%s", m.err, sig, m.Stderr)
	}
	if strings.Contains(m.Stderr.String(), "DATA RACE") {
		t.Errorf("the race detector fired:\n%s", m.Stderr)
	}
	if isMounted(t, m.Dir) {
		t.Errorf("%s is still mounted after zfuse exited", m.Dir)
		exec.Command("fusermount3", "-u", "-z", m.Dir).Run()
	}
}

// isMounted reports whether dir is a mount point, from /proc/self/mountinfo.
func isMounted(t testing.TB, dir string) bool {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Field 5 is the mount point (spaces escaped as \040; ours have none).
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && fields[4] == dir {
			return true
		}
	}
	return false
}

// checkPy runs testdata/check.py with args and turns each line it prints
// into a subtest of t that fails with the check's error.
func checkPy(t *testing.T, args ...string) {
	t.Helper()
	pyChecks(t, "check.py", args...)
}

// pyChecks runs the Python script testdata/SCRIPT with args. It prints one
// JSON object per line: {"name", "err"} for a check, which becomes a
// subtest of t that fails with err unless it is empty, or {"name", "log"}
// for what is only worth knowing, which t logs.
func pyChecks(t *testing.T, script string, args ...string) {
	t.Helper()
	needPython(t)
	cmd := exec.Command(testutil.Python, append([]string{filepath.Join(repo, "integration", "testdata", script)}, args...)...)
	cmd.Env = append(os.Environ(), "PYTHONUTF8=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", script, args, err, stderr.String())
	}
	n := 0
	for line := range bytes.Lines(out) {
		var r struct {
			Name, Err string
			Log       *string
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("%s printed %q: %v", script, line, err)
		}
		if r.Log != nil {
			t.Logf("%s: %s", r.Name, *r.Log)
			continue
		}
		n++
		t.Run(r.Name, func(t *testing.T) {
			if r.Err != "" {
				t.Error(r.Err)
			}
		})
	}
	if n == 0 {
		t.Fatalf("%s %v checked nothing\n%s", script, args, stderr.String())
	}
}

// run runs the zfuse binary to completion.
func run(args ...string) (stdout, stderr []byte, err error) {
	var o, e bytes.Buffer
	cmd := exec.Command(zfuse, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.Bytes(), e.Bytes(), err
}

// infoLines runs zfuse info args and returns the lines of its table by
// their first column (PATH), each with its columns joined by one space.
// The table ends at the first blank line (the serving path follows).
func infoLines(t testing.TB, args ...string) map[string]string {
	t.Helper()
	out, stderr, err := run(append([]string{"info"}, args...)...)
	if err != nil {
		t.Fatalf("zfuse info %v: %v\n%s", args, err, stderr)
	}
	table, _, _ := strings.Cut(string(out), "\n\n")
	lines := map[string]string{}
	for l := range strings.Lines(table) {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = strings.Join(f, " ")
		}
	}
	return lines
}

// chunkFiles lists the non-metadata files under dir/array, relative to dir.
func chunkFiles(t testing.TB, dir, array string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(dir, array), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		out = append(out, filepath.ToSlash(testutil.Must(filepath.Rel(dir, p))))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// copyTree copies the directory src to dst.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}
