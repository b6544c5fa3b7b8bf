package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/store/remote"
	"github.com/zfuse/zfuse/store/s3store"
)

const (
	accessKey = "AKIDZFUSETEST"
	secretKey = "zfuse-s3-secret-never-logged"
	bucket    = "zarr"
)

// A gateway is versitygw's posix backend on 127.0.0.1, serving root/<bucket>/<key>.
type gateway struct {
	root     string
	endpoint string
	log      *bytes.Buffer // its stdout and stderr; read after stop
	stop     func()
}

// startGateway copies the stores named by rel (conformance paths) into
// bucket/<name>, the name of the directory above each plus ".zarr"
// (fixtures/v2/data.zarr: v2.zarr), and serves them.
func startGateway(t *testing.T, rel ...string) *gateway {
	t.Helper()
	return startGatewayArgs(t, []string{"--nometa"}, rel...)
}

// startGatewayArgs is startGateway with other arguments to versitygw's
// posix backend.
func startGatewayArgs(t *testing.T, args []string, rel ...string) *gateway {
	t.Helper()
	bin := testutil.Versitygw(t)
	g := &gateway{root: t.TempDir(), log: &bytes.Buffer{}}
	for _, r := range rel {
		dst := filepath.Join(g.root, bucket, storeName(r))
		if err := os.CopyFS(dst, os.DirFS(testutil.Conformance(t, r))); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(g.root, bucket), 0o755)
	addr := testutil.FreeAddr(t)
	cmd := exec.Command(bin, append(append([]string{"--port", addr, "posix"}, args...), g.root)...)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+accessKey, "ROOT_SECRET_ACCESS_KEY="+secretKey)
	cmd.Stdout, cmd.Stderr = g.log, g.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	g.stop = func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	t.Cleanup(g.stop)
	if err := testutil.WaitListening(addr, nil, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	g.endpoint = "http://" + addr
	t.Setenv("AWS_ACCESS_KEY_ID", accessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secretKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // never ask 169.254.169.254
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(g.root, "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(g.root, "none"))
	return g
}

func storeName(rel string) string { return path.Base(path.Dir(rel)) + ".zarr" }

func (g *gateway) open(t *testing.T, prefix string, log *slog.Logger) *s3store.Store {
	t.Helper()
	s, err := s3store.Open(t.Context(), s3store.Config{Bucket: bucket, Prefix: prefix, Endpoint: g.endpoint, PathStyle: true, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestAgainstDir: every key and directory of stores served by versitygw
// reads, ranges, stats and lists as the same directory does locally.
func TestAgainstDir(t *testing.T) {
	stores := []string{"zarrita.js/fixtures/v2/data.zarr", "zarrita.js/fixtures/v3/data.zarr"}
	g := startGateway(t, stores...)
	ctx := t.Context()
	for _, rel := range stores {
		t.Run(storeName(rel), func(t *testing.T) {
			local, err := store.Dir(testutil.Conformance(t, rel))
			if err != nil {
				t.Fatal(err)
			}
			defer local.Close()
			s := g.open(t, "/"+storeName(rel)+"/", nil)
			var walk func(dir string)
			walk = func(dir string) {
				want, _ := local.List(ctx, dir)
				got, err := s.List(ctx, dir)
				want, got = noVersions(want), noVersions(got) // each backend has its own
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("List(%s) = %v, %v; want %v", dir, got, err, want)
				}
				for _, e := range want {
					k := path.Join(dir, e.Name)
					st, err := s.Stat(ctx, k)
					if st.Version == "" && !e.Dir {
						t.Errorf("Stat(%s): no version", k)
					}
					if st.Version = ""; err != nil || st != e {
						t.Errorf("Stat(%s) = %+v, %v; want %+v", k, st, err, e)
					}
					if e.Dir {
						walk(k)
						continue
					}
					w, _ := local.ReadKey(ctx, k)
					if g, err := s.ReadKey(ctx, k); err != nil || !bytes.Equal(g, w) {
						t.Errorf("ReadKey(%s) = %d bytes, %v; want %d", k, len(g), err, len(w))
					}
					for _, r := range [][2]int64{{0, 1}, {1, 3}, {e.Size - 1, 10}, {e.Size, 4}, {e.Size + 10, 4}} {
						if r[0] < 0 {
							continue
						}
						w, _ := local.ReadKeyRange(ctx, k, r[0], r[1])
						g, err := s.ReadKeyRange(ctx, k, r[0], r[1])
						if err != nil || !bytes.Equal(g, w) {
							t.Errorf("ReadKeyRange(%s, %d, %d) = %q, %v; want %q", k, r[0], r[1], g, err, w)
						}
					}
				}
			}
			walk(".")
		})
	}
}

// TestPagination: a directory of more keys than one ListObjectsV2 page.
func TestPagination(t *testing.T) {
	g := startGateway(t)
	dir := filepath.Join(g.root, bucket, "many", "arr")
	os.MkdirAll(dir, 0o755)
	const n = 1234
	for i := range n {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("0.%d", i)), []byte{byte(i)}, 0o644)
	}
	s := g.open(t, "many", nil)
	es, err := s.List(t.Context(), "arr")
	if err != nil || len(es) != n {
		t.Fatalf("List: %d entries, %v; want %d", len(es), err, n)
	}
	for i := 1; i < n; i++ {
		if es[i-1].Name >= es[i].Name {
			t.Fatalf("not sorted at %d: %s, %s", i, es[i-1].Name, es[i].Name)
		}
	}
}

// TestErrors: missing keys are ErrNotExist, a wrong secret ErrPermission,
// a stopped server neither; and no secret appears in any error or log.
func TestErrors(t *testing.T) {
	g := startGateway(t, "zarrita.js/fixtures/v2/data.zarr")
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := g.open(t, "v2.zarr", log)
	ctx := t.Context()
	var errs []error
	note := func(err error) error { errs = append(errs, err); return err }
	for _, k := range []string{"1d.chunked.i2/7", "nothing/here"} {
		if _, err := s.ReadKey(ctx, k); !errors.Is(note(err), fs.ErrNotExist) {
			t.Errorf("ReadKey(%s) = %v, want ErrNotExist", k, err)
		}
		if _, err := s.Stat(ctx, k); !errors.Is(note(err), fs.ErrNotExist) {
			t.Errorf("Stat(%s) = %v, want ErrNotExist", k, err)
		}
	}
	if _, err := s.List(ctx, "nothing"); !errors.Is(note(err), fs.ErrNotExist) {
		t.Errorf("List(nothing) = %v, want ErrNotExist", err)
	}
	if _, err := s.ReadKey(ctx, "../x"); !errors.Is(err, store.ErrOutside) {
		t.Errorf("ReadKey(../x) = %v, want ErrOutside", err)
	}
	_, err := s3store.Open(ctx, s3store.Config{Bucket: "nosuchbucket", Endpoint: g.endpoint, PathStyle: true, Log: log})
	if note(err) == nil {
		t.Error("Open of a missing bucket succeeded")
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", secretKey+"-wrong")
	_, err = s3store.Open(ctx, s3store.Config{Bucket: bucket, Endpoint: g.endpoint, PathStyle: true, Log: log})
	if !errors.Is(note(err), fs.ErrPermission) {
		t.Errorf("Open with a wrong secret: %v, want ErrPermission", err)
	}
	// No credentials at all: unsigned requests, which this gateway refuses.
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	_, err = s3store.Open(ctx, s3store.Config{Bucket: bucket, Endpoint: g.endpoint, PathStyle: true, Log: log})
	if !errors.Is(note(err), fs.ErrPermission) {
		t.Errorf("Open without credentials: %v, want ErrPermission", err)
	}
	mu.Lock()
	if !strings.Contains(logs.String(), "unsigned") {
		t.Errorf("no line saying requests go unsigned:\n%s", logs.String())
	}
	mu.Unlock()
	b, err := s.ReadKey(ctx, "1d.chunked.i2/0")
	if err != nil {
		t.Fatal(err)
	}
	g.stop()
	start := time.Now()
	_, err = s.ReadKey(ctx, "1d.chunked.i2/1")
	var errno syscall.Errno
	if !errors.Is(note(err), remote.ErrUnavailable) || errors.Is(err, fs.ErrNotExist) || errors.As(err, &errno) {
		t.Errorf("server stopped: %v, want ErrUnavailable and no syscall.Errno", err)
	}
	t.Logf("server stopped: failed after %v: %v", time.Since(start), err)
	if e, err := s.Stat(ctx, "1d.chunked.i2/0"); err != nil || e.Size != int64(len(b)) {
		t.Errorf("Stat of a key read before the server stopped: %+v, %v", e, err)
	}
	mu.Lock()
	defer mu.Unlock()
	all := logs.String() + g.log.String()
	for _, err := range errs {
		if err != nil {
			all += err.Error()
		}
	}
	if strings.Contains(all, secretKey) || strings.Contains(all, accessKey) {
		t.Errorf("a credential appears in logs or errors:\n%s", all)
	}
	if !strings.Contains(logs.String(), "op=GET") {
		t.Errorf("debug log has no requests:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		in             string
		bucket, prefix string
		ok             bool
	}{
		{"s3://b", "b", "", true},
		{"s3://b/", "b", "", true},
		{"s3://b/a/c.zarr/", "b", "a/c.zarr", true},
		{"s3://user:pw@b/x", "", "", false},
		{"http://b/x", "", "", false},
		{"s3:///x", "", "", false},
	} {
		b, p, err := s3store.ParseURL(tc.in)
		if (err == nil) != tc.ok || b != tc.bucket || p != tc.prefix {
			t.Errorf("ParseURL(%q) = %q, %q, %v", tc.in, b, p, err)
		}
	}
	_ = context.Background
}

// noVersions clears the Version of each entry: backends version values
// each their own way (a local file's mtime, the server's ETag).
func noVersions(es []store.Entry) []store.Entry {
	for i := range es {
		es[i].Version = ""
	}
	return es
}
