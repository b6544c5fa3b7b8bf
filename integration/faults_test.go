package integration

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// faultRate is the share of requests that get each fault (default 0.25):
// hangs and 429s cost a second each, and a 5xx burst takes the next few
// requests too, so they get fewer.
var faultRate = map[string]float64{faultHang: 0.05, fault429: 0.05, fault5xx: 0.1}

// TestFaultInjection: a mount of the reliability stores (v2 and sharded
// v3, compressed and raw) through a fault-injecting proxy in front of the
// real servers, nginx and versitygw. For each kind of fault in turn, on a
// fresh mount: zarr-python and two plain file readers (random and strided
// orders, page cache dropped before each read) read everything while the
// proxy injects it, and every read either returns the source's bytes or
// fails with EIO; then, with the faults stopped and no remount, the same
// reads all succeed. The proxy counts requests, faults and retries; the
// table is logged (go test -v) for docs/reliability.md. To look closer:
// ZFUSE_FAULT_SEED repeats a schedule, ZFUSE_FAULT_ONLY=KIND runs one kind,
// ZFUSE_FAULT_TRACE=1 prints every request and its fault to stderr.
func TestFaultInjection(t *testing.T) {
	dir := stores(t, "small")
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("ZFUSE_FAULT_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("fault schedule seed %d (set ZFUSE_FAULT_SEED to repeat it)", seed)
	// Small budgets and no compressed tier: reads reach the store.
	flags := []string{"--as-v2", "--http-timeout", "1s", "--cache-decoded", "2MiB", "--cache-compressed", "0", "--readahead", "2MiB"}
	var rows []string
	t.Run("http", func(t *testing.T) {
		_, base := startNginx(t, filepath.Join(dir, "src"))
		px := startFaultProxy(t, base, seed)
		rows = append(rows, faultRounds(t, px, px.URL, append(flags, reliabilityHints...), dir)...)
	})
	t.Run("s3", func(t *testing.T) {
		root := t.TempDir()
		copyTree(t, filepath.Join(dir, "src"), filepath.Join(root, "faults", "src"))
		_, endpoint := startVersitygw(t, root)
		s3Setenv(t)
		px := startFaultProxy(t, endpoint, seed)
		rows = append(rows, faultRounds(t, px, "s3://faults/src", append(flags, "--s3-endpoint", px.URL, "--s3-path-style"), dir)...)
	})
	t.Logf("fault injection, seed %d:\n%-5s %-13s %8s %6s %7s %14s %14s\n%s", seed,
		"store", "fault", "requests", "faults", "retries", "reads (EIO)", "after (EIO)", strings.Join(rows, "\n"))
}

// faultRounds runs the readers under each fault in turn, through source
// mounted with flags, and returns a table row for each.
func faultRounds(t *testing.T, px *faultProxy, source string, flags []string, dir string) []string {
	want := filepath.Join(dir, "want")
	readArgs := [][]string{
		append([]string{"zarr"}, reliabilityArrays...),
		{"files", "--threads", "2", "--order", "random", "--drop"},
		{"files", "--threads", "2", "--order", "stride", "--drop"},
	}
	store := path.Base(t.Name())
	var rows []string
	for _, kind := range allFaults {
		if k := os.Getenv("ZFUSE_FAULT_ONLY"); k != "" && k != kind {
			continue
		}
		t.Run(kind, func(t *testing.T) {
			px.inject("", 0)
			m := mount(t, source, flags...)
			rate := faultRate[kind]
			if rate == 0 {
				rate = 0.25
			}
			px.inject(kind, rate)
			under := checkedReaders(t, m, want, 3*time.Minute, readArgs...)
			st := px.counts()
			px.inject("", 0)
			after := checkedReaders(t, m, want, 3*time.Minute, readArgs...)
			m.stop(t, syscall.SIGTERM)
			t.Logf("%s: %d requests, %d faults, %d retries; under the fault %v; after %v", kind, st.Requests, st.Faults, st.Retries, under, after)
			if under.EIO > 0 { // what the mount said of them
				var errs []string
				for l := range strings.Lines(m.Stderr.String()) {
					if strings.Contains(l, "level=ERROR") && len(errs) < 3 {
						errs = append(errs, strings.TrimSpace(l))
					}
				}
				t.Logf("%s: the mount's first errors:\n%s", kind, strings.Join(errs, "\n"))
			}
			switch {
			case under.Wrong > 0 || len(under.Errors) > 0:
				t.Errorf("under %s: %v; want the source's bytes or EIO", kind, under)
			case after.Wrong > 0 || len(after.Errors) > 0 || after.EIO > 0:
				t.Errorf("after %s stopped: %v; want every read right", kind, after)
			case st.Faults == 0:
				t.Errorf("%s: no fault injected in %d requests: the test proves nothing", kind, st.Requests)
			case under.OK < under.Reads/2:
				t.Errorf("under %s: only %d of %d reads succeeded; retries should absorb most faults", kind, under.OK, under.Reads)
			}
			if under.Reads == 0 || after.Reads != under.Reads {
				t.Errorf("%d reads under the fault, %d after", under.Reads, after.Reads)
			}
			rows = append(rows, fmt.Sprintf("%-5s %-13s %8d %6d %7d %9d (%3d) %9d (%3d)",
				store, kind, st.Requests, st.Faults, st.Retries, under.Reads, under.EIO, after.Reads, after.EIO))
		})
	}
	return rows
}
