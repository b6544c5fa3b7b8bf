package testutil

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// zarritaVersion is the zarrita (npm) the tests use: zarrita.js, an
// independent Zarr v3 implementation that writes and reads their stores.
// The Makefile's deps target installs the same version.
const zarritaVersion = "0.7.5"

var zarrita struct {
	sync.Mutex
	dir string // once found or installed
}

// ZarritaDir returns a directory whose node_modules holds zarrita:
// $ZFUSE_ZARRITA, else zfuse/zarrita-zarritaVersion in the user cache
// directory, where `make deps` installs it. When it is missing there it
// installs it with npm (not with -short). Without node, or npm where it
// must install, it skips t (Need).
func ZarritaDir(t testing.TB) string {
	t.Helper()
	zarrita.Lock()
	defer zarrita.Unlock()
	if zarrita.dir != "" {
		return zarrita.dir
	}
	_, err := exec.LookPath("node")
	Need(t, "node (Node.js 20, make deps)", err == nil)
	dir := os.Getenv("ZFUSE_ZARRITA")
	if dir == "" {
		cache, err := os.UserCacheDir()
		Need(t, "a user cache directory", err == nil)
		dir = filepath.Join(cache, "zfuse", "zarrita-"+zarritaVersion)
	}
	var meta struct{ Version string }
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", "zarrita", "package.json"))
	if err != nil || json.Unmarshal(b, &meta) != nil || meta.Version != zarritaVersion {
		Need(t, "zarrita@"+zarritaVersion+" in "+dir+" (make deps; -short does not install it)", !testing.Short())
		_, err := exec.LookPath("npm")
		Need(t, "npm, to install zarrita@"+zarritaVersion+" (make deps)", err == nil)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "zarrita@"+zarritaVersion).CombinedOutput()
		Need(t, "zarrita@"+zarritaVersion+" (npm install: "+string(bytes.TrimSpace(out))+")", err == nil)
	}
	zarrita.dir = dir
	return dir
}

// Node runs src, an ES module that may import zarrita, with node and args,
// and returns what it prints on stdout; it fails t when node fails. The
// module runs as name from a temporary directory whose node_modules is
// zarrita's (ES modules resolve packages from the script's directory).
func Node(t testing.TB, name string, src []byte, args ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(ZarritaDir(t), "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, name)
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", name, err, stderr.Bytes())
	}
	return out
}
