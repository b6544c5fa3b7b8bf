package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// soakDuration is how long TestSoak reads: $ZFUSE_SOAK (a Go duration;
// make soak sets 10m), else a short run that keeps the test itself working.
func soakDuration(t *testing.T) time.Duration {
	s := os.Getenv("ZFUSE_SOAK")
	if s == "" {
		return 20 * time.Second
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("ZFUSE_SOAK=%q: want a duration such as 10m", s)
	}
	return d
}

// TestSoak: a mixed workload, for soakDuration, on two mounts of the
// reliability stores: the local directory and the same served by nginx
// over HTTP, each mount with small budgets (8 MiB decoded, 8 MiB
// readahead): per mount, four plain readers of 4 threads (sequential,
// strided, random, small ranges; page cache dropped before each read) and
// a zarr-python reader, round after round, every read compared with the
// uncompressed twin. It logs a summary (reads, bytes, errors per mount;
// RSS over time) and fails on any wrong byte or error. make soak runs it
// for 10 minutes with the plain build, as users run zfuse.
func TestSoak(t *testing.T) {
	d := soakDuration(t)
	dir := stores(t, "load")
	bin, err := plainZfuse()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "want")
	flags := []string{"--as-v2", "--cache-decoded", "8MiB", "--readahead", "8MiB"}
	_, base := startNginx(t, filepath.Join(dir, "src"))
	mounts := map[string]*mounted{
		"local": startMount(t, bin, filepath.Join(dir, "src"), flags...),
		"http":  startMount(t, bin, base, append(flags, reliabilityHints...)...),
	}
	secs := fmt.Sprint(d.Seconds())
	procs := append(loadReaders("--seconds", secs)[:4], append([]string{"zarr", "--seconds", secs}, reliabilityArrays...))

	// RSS of each mount over time: a line every tenth of the run.
	var rss []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		began := time.Now()
		tick := time.NewTicker(max(d/10, time.Second)) // a measurement, not a wait
		defer tick.Stop()
		for {
			line := fmt.Sprintf("%7s", time.Since(began).Round(time.Second))
			for _, name := range []string{"local", "http"} {
				s, _ := sampleProc(mounts[name].cmd.Process.Pid)
				line += fmt.Sprintf("  %s %4d MiB", name, (s.RSS+s.Memfd)>>20)
			}
			rss = append(rss, line)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	results := map[string]tally{}
	var mu sync.Mutex
	var rg sync.WaitGroup
	for name, m := range mounts {
		rg.Go(func() {
			r := checkedReaders(t, m, want, d+3*time.Minute, procs...) // the watchdog: a round may end a little late
			mu.Lock()
			results[name] = r
			mu.Unlock()
		})
	}
	rg.Wait()
	close(stop)
	wg.Wait()
	var total tally
	var lines []string
	for _, name := range []string{"local", "http"} {
		r := results[name]
		hwm, _ := procStatus(mounts[name].cmd.Process.Pid, "VmHWM")
		lines = append(lines, fmt.Sprintf("%-5s %v, %.0f MB/s, peak RSS %d MiB", name, r, float64(r.Bytes)/d.Seconds()/1e6, hwm>>20))
		total.add(r)
		mounts[name].stop(t, syscall.SIGTERM)
	}
	t.Logf("soak, %v, %s:\n%s\nRSS (+memfd) over time:\n%s", d, time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		strings.Join(lines, "\n"), strings.Join(rss, "\n"))
	if total.Wrong > 0 || total.EIO > 0 || len(total.Errors) > 0 || total.Reads == 0 {
		t.Errorf("soak: %v; want every read right", total)
	}
}
