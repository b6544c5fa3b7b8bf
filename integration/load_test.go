package integration

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// procSample is what /proc says of a process at one moment.
type procSample struct {
	RSS     int64 // VmRSS, bytes
	Memfd   int64 // the sizes of its chunk files (memfds, or tmpfs files: decoded chunks held for FUSE passthrough)
	Threads int64
	FDs     int // open descriptors other than memfds
}

// sampleProc reads /proc/PID: RSS, threads, and its descriptors, the
// chunk files (memfds, or the mount's unnamed files on a tmpfs: its own,
// "/#N (deleted)", or /dev/shm's) by size apart.
func sampleProc(pid int) (procSample, error) {
	var s procSample
	var err error
	if s.RSS, err = procStatus(pid, "VmRSS"); err != nil {
		return s, err
	}
	th, err := procStatus(pid, "Threads")
	if err != nil {
		return s, err
	}
	s.Threads = th >> 10 // procStatus reads kB
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	des, err := os.ReadDir(dir)
	if err != nil {
		return s, err
	}
	for _, de := range des {
		p := filepath.Join(dir, de.Name())
		link, err := os.Readlink(p)
		if err != nil {
			continue // closed meanwhile
		}
		var fs unix.Statfs_t
		if !strings.HasPrefix(link, "/memfd:") && (unix.Statfs(p, &fs) != nil || fs.Type != unix.TMPFS_MAGIC) {
			s.FDs++
			continue
		}
		if fi, err := os.Stat(p); err == nil {
			s.Memfd += fi.Size()
		}
	}
	return s, nil
}

// A sampler records the peak of RSS plus memfd bytes of a process, every
// few milliseconds until stopped.
type sampler struct {
	stop chan struct{}
	wg   sync.WaitGroup

	mu   sync.Mutex
	peak procSample // the sample with the largest RSS+Memfd
	n    int
}

func startSampler(pid int) *sampler {
	s := &sampler{stop: make(chan struct{})}
	s.wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond) // a measurement, not a wait
		defer tick.Stop()
		for {
			if x, err := sampleProc(pid); err == nil {
				s.mu.Lock()
				if x.RSS+x.Memfd > s.peak.RSS+s.peak.Memfd {
					s.peak = x
				}
				s.n++
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	})
	return s
}

// end stops the sampler and returns the peak sample and the samples taken.
func (s *sampler) end() (procSample, int) {
	close(s.stop)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.n
}

// goroutines asks the mount for its counters (askStats) and returns its
// goroutine count.
func goroutines(t testing.TB, m *mounted, stats string) int {
	t.Helper()
	var doc struct{ Goroutines int }
	b := askStats(t, m, stats)
	if err := json.Unmarshal(b, &doc); err != nil || doc.Goroutines == 0 {
		t.Fatalf("stats file: %v\n%s", err, b)
	}
	return doc.Goroutines
}

// askStats asks the mount for its counters (SIGUSR1 to write
// --stats-file) and returns the file, waiting for it to be replaced
// (inotify, no polling).
func askStats(t testing.TB, m *mounted, stats string) []byte {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if _, err := syscall.InotifyAddWatch(fd, filepath.Dir(stats), syscall.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := syscall.Read(fd, buf)
			if err != nil {
				done <- err
				return
			}
			// Events: a syscall.InotifyEvent, then its NUL-padded name.
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				l := int(binary.NativeEndian.Uint32(buf[off+12:])) // InotifyEvent.Len
				name := strings.TrimRight(string(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+l]), "\x00")
				if name == filepath.Base(stats) {
					done <- nil
					return
				}
				off += syscall.SizeofInotifyEvent + l
			}
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no stats file 30 s after SIGUSR1:\n%s", m.Stderr)
	}
	b, err := os.ReadFile(stats)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loadReaders are TestLoad's and the soak's reader processes: 8 of 4
// threads each over 4 arrays (Zstd and Blosc chunks of 256 and 128 KiB,
// zlib chunks of 4 KiB, a sharded Zstd array's 32 KiB inner chunks), two
// each reading sequentially, with a stride, in random order and random
// small ranges, dropping the page cache before each read; extra are more
// arguments for each.
func loadReaders(extra ...string) [][]string {
	var procs [][]string
	for i := range 8 {
		order := []string{"seq", "stride", "random", "sub"}[i%4]
		procs = append(procs, append([]string{"files", "--arrays", "v2.zarr/zstd,v2.zarr/blosc,v2.zarr/small,v3.zarr/szstd",
			"--threads", "4", "--order", order, "--drop", "--seed", fmt.Sprint(i + 1)}, extra...))
	}
	return procs
}

// TestLoad: the 8 × 4 readers of loadReaders read at once through one
// mount with small budgets (8 MiB decoded, 8 MiB readahead, no compressed
// tier), every read compared with the uncompressed twin, each round bounded
// by a watchdog (3 minutes: a deadlock fails the test with the mount's
// log). Through the -race build, one round. Through the plain build, as
// users run it (the race detector's shadow memory is several times the
// heap), a warm-up round and two more: the mount's goroutines, threads and
// descriptors must not grow from the end of the warm-up to the end, and
// its peak RSS plus memfd bytes (decoded chunks held for FUSE passthrough)
// must stay within the budgets + 64 MiB.
func TestLoad(t *testing.T) {
	dir := stores(t, "load")
	want := filepath.Join(dir, "want")
	flags := []string{"--as-v2", "--cache-decoded", "8MiB", "--readahead", "8MiB", "--cache-compressed", "0"}
	t.Run("race", func(t *testing.T) {
		m := mount(t, filepath.Join(dir, "src"), flags...)
		r := checkedReaders(t, m, want, 3*time.Minute, loadReaders()...)
		t.Logf("%v", r)
		if r.Wrong > 0 || r.EIO > 0 || len(r.Errors) > 0 || r.OK != r.Reads || r.Reads == 0 {
			t.Errorf("reads: %v; want every one right", r)
		}
	})
	t.Run("plain", func(t *testing.T) {
		bin, err := plainZfuse()
		if err != nil {
			t.Fatal(err)
		}
		const budgets = 8<<20 + 8<<20
		stats := filepath.Join(t.TempDir(), "stats.json")
		m := startMount(t, bin, filepath.Join(dir, "src"), append(flags, "--stats-file", stats)...)
		idle, err := sampleProc(m.cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		idleG := goroutines(t, m, stats)
		s := startSampler(m.cmd.Process.Pid)
		warm := checkedReaders(t, m, want, 3*time.Minute, loadReaders()...)
		start, err := sampleProc(m.cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		startG := goroutines(t, m, stats)
		var load tally
		began := time.Now()
		for range 2 {
			load.add(checkedReaders(t, m, want, 3*time.Minute, loadReaders()...))
		}
		took := time.Since(began)
		end, err := sampleProc(m.cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		endG := goroutines(t, m, stats)
		peak, n := s.end()
		hwm, err := procStatus(m.cmd.Process.Pid, "VmHWM")
		if err != nil {
			t.Fatal(err)
		}
		m.stop(t, syscall.SIGTERM)

		target := int64(budgets + 64<<20)
		t.Logf("warm-up: %v", warm)
		t.Logf("load: %v in %v (%.0f MB/s)", load, took.Round(time.Millisecond), float64(load.Bytes)/took.Seconds()/1e6)
		t.Logf("peak RSS+memfd %d MiB (RSS %d, memfd %d; %d samples), VmHWM %d MiB, idle RSS %d MiB; budgets + 64 MiB = %d MiB",
			(peak.RSS+peak.Memfd)>>20, peak.RSS>>20, peak.Memfd>>20, n, hwm>>20, idle.RSS>>20, target>>20)
		t.Logf("goroutines %d idle, %d after the warm-up, %d at the end; threads %d, %d, %d; descriptors %d, %d, %d",
			idleG, startG, endG, idle.Threads, start.Threads, end.Threads, idle.FDs, start.FDs, end.FDs)
		for _, r := range []tally{warm, load} {
			if r.Wrong > 0 || r.EIO > 0 || len(r.Errors) > 0 || r.OK != r.Reads || r.Reads == 0 {
				t.Errorf("reads: %v; want every one right", r)
			}
		}
		if max(peak.RSS+peak.Memfd, hwm) > target {
			t.Errorf("peak RSS+memfd %d MiB, VmHWM %d MiB; want at most the budgets + 64 MiB (%d MiB)", (peak.RSS+peak.Memfd)>>20, hwm>>20, target>>20)
		}
		// Goroutines come and go with requests; what the mount keeps must
		// not grow with the load. Threads: the Go runtime never ends one,
		// and keeps one for each request blocked at once (a READ, a page
		// pushed waiting for a page lock), which varies with scheduling,
		// but a round of the same load needs few more.
		if endG > startG+8 || end.Threads > start.Threads+8 || end.FDs > start.FDs+2 {
			t.Errorf("growth over the load: goroutines %d -> %d, threads %d -> %d, descriptors %d -> %d",
				startG, endG, start.Threads, end.Threads, start.FDs, end.FDs)
		}
	})
}
