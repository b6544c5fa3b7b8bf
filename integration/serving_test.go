package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
)

// This file checks the serving paths of zfuse mount (--serving): that each
// is what it says, that a mount falls back when passthrough is refused, and
// that a scan of an array larger than the budgets stays within them.

// serveStats is the part of --stats-file these tests read.
type serveStats struct {
	Stats struct {
		MemfdPeak, MemfdBytes, Memfds int64
	} `json:"stats"`
	Serve struct {
		Serving                        string
		Opens, PassthroughOpens, Reads int64
		ChunkReads, Pushed             int64
	} `json:"serve"`
}

func readServeStats(t testing.TB, path string) serveStats {
	t.Helper()
	var s serveStats
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		t.Fatalf("stats file: %v", err)
	}
	return s
}

// servingStore writes a small Blosc store with zarr-python and the same
// array uncompressed, and returns their directories.
var servingStore = sync.OnceValues(func() (string, error) {
	dir := filepath.Join(tmp, "serving")
	script := `
import sys, numpy as np, zarr, numcodecs
out = sys.argv[1]
x = (np.arange(16 * 64 * 64, dtype="<f4").reshape(16, 64, 64) * 0.25) % 1000
for name, c in [("blosc", numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1)), ("raw", None)]:
    a = zarr.open(f"{out}/{name}.zarr", mode="w", shape=x.shape, chunks=(1, 32, 32), dtype="<f4", compressor=c)
    a[...] = x
`
	if out, err := exec.Command(testutil.Python, "-c", script, dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("writing the store: %v\n%s", err, out)
	}
	return dir, nil
})

// checkChunks reads every chunk file of blosc.zarr through mnt and
// compares it with raw.zarr's.
func checkChunks(t *testing.T, dir, mnt string) int {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(dir, "raw.zarr"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		want, err := os.ReadFile(filepath.Join(dir, "raw.zarr", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(mnt, "blosc.zarr", e.Name()))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes, %v; want the uncompressed chunk", e.Name(), len(got), err)
		}
		n++
	}
	return n
}

// TestServingPaths mounts on each serving path and reads every chunk
// twice: passthrough answers no READ for a chunk (the kernel reads the
// memfd); no-open sees one OPEN (answered ENOSYS), and each chunk is
// either pushed into the page cache ahead of its read or READ once, the
// second reading coming from the page cache; open sees every OPEN.
func TestServingPaths(t *testing.T) {
	needMount(t)
	needPython(t)
	dir, err := servingStore()
	if err != nil {
		t.Fatal(err)
	}
	for _, serving := range []string{"passthrough", "no-open", "open"} {
		t.Run(serving, func(t *testing.T) {
			if serving == "passthrough" {
				testutil.Need(t, "root, for FUSE passthrough", os.Geteuid() == 0)
			}
			stats := filepath.Join(t.TempDir(), "stats.json")
			m := mount(t, dir, "--serving", serving, "--stats-file", stats)
			if !m.Stderr.waitFor(time.Minute, holding("serving="+serving)) {
				t.Fatalf("the log does not say serving=%s:\n%s", serving, m.Stderr)
			}
			n := checkChunks(t, dir, m.Dir)
			checkChunks(t, dir, m.Dir)
			m.stop(t, syscall.SIGTERM)
			s := readServeStats(t, stats).Serve
			t.Logf("%d chunks twice: %+v", n, s)
			if s.Serving != serving {
				t.Errorf("stats say serving %q", s.Serving)
			}
			switch serving {
			case "passthrough":
				if s.ChunkReads != 0 || s.PassthroughOpens < int64(2*n) {
					t.Errorf("passthrough: %d chunk READs reached the daemon, %d of %d opens passed through", s.ChunkReads, s.PassthroughOpens, 2*n)
				}
			case "no-open":
				if s.Opens != 1 {
					t.Errorf("no-open: %d OPENs, want 1", s.Opens)
				}
			case "open":
				if s.Opens < int64(2*n) {
					t.Errorf("open: %d OPENs, want at least %d", s.Opens, 2*n)
				}
			}
			if serving != "passthrough" && (s.ChunkReads > int64(n) || s.ChunkReads+s.Pushed < int64(n) || s.Pushed == 0) {
				t.Errorf("%s: %d chunk READs, %d chunks pushed: want each of the %d chunks pushed or READ once, and some pushed", serving, s.ChunkReads, s.Pushed, n)
			}
		})
	}
}

// TestServingFallback runs zfuse mount --serving passthrough as an
// ordinary user, whom the kernel refuses backing files (passthrough needs
// CAP_SYS_ADMIN): the mount says so once, naming the reason, serves in
// no-open mode instead, and reads right. The test mounts /dev/fuse itself,
// as root, and hands zfuse the descriptor as /dev/fd/3 (libfuse's way for
// a privileged parent), so that the user needs no access to /dev/fuse.
func TestServingFallback(t *testing.T) {
	needMount(t)
	needPython(t)
	testutil.Need(t, "root, to mount for another user", os.Geteuid() == 0)
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	dir, err := servingStore()
	if err != nil {
		t.Fatal(err)
	}
	// The user needs the binary, the store and a stats file of its own.
	openToAll(t, filepath.Dir(zfuse))
	own := openToAll(t, t.TempDir())
	if err := os.Chown(own, uid, gid); err != nil {
		t.Fatal(err)
	}
	mnt, stats := t.TempDir(), filepath.Join(own, "stats.json")
	dev, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0", dev.Fd())
	if err := syscall.Mount("zfuse-test", mnt, "fuse.zfuse", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_RDONLY, opts); err != nil {
		t.Fatal(err)
	}
	m := &mounted{Dir: mnt, Stderr: &syncBuffer{}, exited: make(chan struct{})}
	m.cmd = exec.Command(zfuse, "mount", "--serving", "passthrough", "--stats-file", stats, dir, "/dev/fd/3")
	m.cmd.Stderr = m.Stderr
	m.cmd.ExtraFiles = []*os.File{dev}
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	if err := m.cmd.Start(); err != nil {
		syscall.Unmount(mnt, syscall.MNT_DETACH)
		t.Fatal(err)
	}
	go func() { m.err = m.cmd.Wait(); close(m.exited) }()
	stop := func() {
		// The parent unmounts; zfuse then exits by itself.
		if err := syscall.Unmount(mnt, 0); err != nil {
			t.Errorf("unmount: %v", err)
			syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
		select {
		case <-m.exited:
		case <-time.After(time.Minute):
			t.Error("zfuse did not exit within a minute of the unmount")
			m.cmd.Process.Kill()
			<-m.exited
		}
		if m.err != nil {
			t.Errorf("zfuse exited with %v:\n%s", m.err, m.Stderr.String())
		}
	}
	if !m.Stderr.waitFor(time.Minute, holding("msg=mounted")) {
		stop()
		t.Fatalf("zfuse did not get ready:\n%s", m.Stderr.String())
	}
	log := m.Stderr.String()
	if strings.Count(log, "serving path falls back") != 1 || !strings.Contains(log, "serving=no-open") ||
		!strings.Contains(log, "wanted=passthrough") || !strings.Contains(log, "CAP_SYS_ADMIN") {
		t.Errorf("want one Warn line saying passthrough was refused for lack of CAP_SYS_ADMIN and no-open is used:\n%s", log)
	}
	t.Logf("zfuse as %s: %s", nobody.Username, log)
	checkChunks(t, dir, mnt)
	stop()
	if s := readServeStats(t, stats).Serve; s.Serving != "no-open" || s.PassthroughOpens != 0 {
		t.Errorf("stats: %+v; want no-open and no passthrough", s)
	}
}

// TestMemoryBudget scans, twice, a 192 MiB Blosc array through mounts
// whose budgets add up to far less (32 MiB decoded, 32 MiB readahead, no
// compressed tier), on the passthrough and the no-open paths: the mount's
// peak RSS plus the most its memfds held stays within the budgets and 64
// MiB, and every chunk reads right.
func TestMemoryBudget(t *testing.T) {
	needMount(t)
	needPython(t)
	bin, err := plainZfuse()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := `
import sys, numpy as np, zarr, numcodecs
out = sys.argv[1]
rng = np.random.default_rng(7)
a = zarr.open(f"{out}/big.zarr", mode="w", shape=(48, 1024, 1024), chunks=(1, 512, 512), dtype="<f4",
              compressor=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1))
for i in range(48):
    a[i] = (288 + rng.standard_normal((1024, 1024), dtype=np.float32)).astype("<f4")
`
	if out, err := exec.Command(testutil.Python, "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("writing the store: %v\n%s", err, out)
	}
	const budgets = 32<<20 + 32<<20
	for _, serving := range []string{"passthrough", "no-open"} {
		t.Run(serving, func(t *testing.T) {
			if serving == "passthrough" {
				testutil.Need(t, "root, for FUSE passthrough", os.Geteuid() == 0)
			}
			stats := filepath.Join(t.TempDir(), "stats.json")
			m := startMount(t, bin, dir, "--serving", serving, "--stats-file", stats,
				"--cache-decoded", "32MiB", "--readahead", "32MiB", "--cache-compressed", "0")
			es, err := os.ReadDir(filepath.Join(m.Dir, "big.zarr"))
			if err != nil {
				t.Fatal(err)
			}
			var chunks int
			for pass := range 2 {
				for _, e := range es {
					if strings.HasPrefix(e.Name(), ".") {
						continue
					}
					chunks++
					got, err := os.ReadFile(filepath.Join(m.Dir, "big.zarr", e.Name()))
					if err != nil || len(got) != 1<<20 {
						t.Fatalf("pass %d, %s: %d bytes, %v", pass, e.Name(), len(got), err)
					}
				}
			}
			hwm := vmHWMOf(t, m.cmd.Process.Pid)
			m.stop(t, syscall.SIGTERM)
			peak := readServeStats(t, stats).Stats.MemfdPeak
			t.Logf("%s: %d chunk reads of 1 MiB; peak RSS %d MiB, memfds at most %d MiB", serving, chunks, hwm>>20, peak>>20)
			if hwm+peak > budgets+64<<20 {
				t.Errorf("peak RSS %d MiB + memfds %d MiB > budgets %d MiB + 64 MiB", hwm>>20, peak>>20, budgets>>20)
			}
		})
	}
}

// vmHWMOf returns the peak RSS of process pid.
func vmHWMOf(t testing.TB, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}
