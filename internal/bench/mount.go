package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/internal/bytesize"
	"github.com/zfuse/zfuse/mountlib"
)

// This file runs zfuse bench's mounts: each a `zfuse mount` process of this
// binary (a Process), ready when it logs "mounted" (as the
// integration tests wait for it), and measured from /proc and its stats
// file when it stops.

// A benchMount is one zfuse mount process, or one zfuse bench floor.
type benchMount struct {
	dir       string
	statsFile string // "" for the floor, which writes none
	proc      *Process
}

// mountStats is what a mount used.
type mountStats struct {
	serving   string // the serving path it chose
	transport string // the FUSE transport it got
	// epochRequests are the requests that reached the mount in each
	// epoch, by opcode (the stats file's, between epochs).
	epochRequests []map[string]int64
	hwm           int64             // peak RSS (VmHWM)
	memfdPeak     int64             // the most bytes held outside the heap: memfds (passthrough), and pages pushed into the page cache not yet read (no-open)
	cpu           time.Duration     // user + system
	reads         fusemount.Latency // service times of its chunk READs
	pushed        int64             // chunks it pushed into the page cache
	storeReads    int64             // stored values read (readahead.Stats.StoreReads)
}

// mount starts zfuse mount of store on a new mountpoint, with the bench's
// loader flags, serving path and the flags view gives (--as-npy), and
// returns once it is ready.
func (b *bencher) mount(ctx context.Context, store, serving, transport string, view ...string) (*benchMount, error) {
	m, err := b.newMount()
	if err != nil {
		return nil, err
	}
	m.statsFile = filepath.Join(b.work, fmt.Sprintf("stats%d.json", b.mounts))
	args := append([]string{"mount", "--log-level", "info", "--stats-file", m.statsFile}, b.lf.Args...)
	args = append(append(args, view...), "--serving", serving, "--transport", transport, store, m.dir)
	return m, m.start(ctx, b.exe, args)
}

// floor starts zfuse bench floor (floor.go) serving the files of the
// uncompressed store at store on a new mountpoint, with the mounts' kernel
// readahead, and returns once it is ready.
func (b *bencher) floor(ctx context.Context, store string) (*benchMount, error) {
	m, err := b.newMount()
	if err != nil {
		return nil, err
	}
	return m, m.start(ctx, b.exe, []string{"bench", "floor", "--kernel-readahead", bytesize.Exact(b.lf.KernelReadahead), "--transport", b.transports[0], store, m.dir})
}

// newMount makes a new mountpoint.
func (b *bencher) newMount() (*benchMount, error) {
	b.mounts++
	m := &benchMount{dir: filepath.Join(b.work, fmt.Sprintf("mnt%d", b.mounts))}
	return m, os.Mkdir(m.dir, 0o755)
}

// start runs exe with args, which mounts m.dir, and waits until it logs
// "mounted".
func (m *benchMount) start(ctx context.Context, exe string, args []string) error {
	p, err := Start(ctx, "zfuse "+args[0], exec.Command(exe, args...), "msg=mounted")
	m.proc = p
	return err
}

// stop measures the mount, stops it with SIGTERM and reads its stats
// file.
func (m *benchMount) stop() (mountStats, error) {
	var st mountStats
	u, err := m.proc.Stop()
	st.hwm, st.cpu = u.HWM, u.CPU
	if err != nil {
		return st, err
	}
	if m.statsFile == "" { // the floor: its log says how it served
		st.serving, st.transport = logValue(m.proc.Log(), "serving"), logValue(m.proc.Log(), "transport")
		return st, nil
	}
	doc, err := m.readStats()
	if err != nil {
		return st, err
	}
	st.serving, st.transport, st.memfdPeak = doc.Serve.Serving, doc.Serve.Transport, doc.Stats.MemfdPeak+doc.Stats.PlacedPeak
	st.reads, st.pushed, st.storeReads = doc.Serve.ChunkReadTimes, doc.Serve.Pushed, doc.Stats.StoreReads
	return st, nil
}

// logValue returns the value of key in the first log line (slog's text
// format) that has it.
func logValue(log, key string) string {
	_, v, ok := strings.Cut(log, " "+key+"=")
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, "\n")
	v, _, _ = strings.Cut(v, " ")
	return v
}

// readStats reads the mount's stats file.
func (m *benchMount) readStats() (mountlib.StatsDoc, error) {
	var doc mountlib.StatsDoc
	b, err := os.ReadFile(m.statsFile)
	if err != nil {
		return doc, fmt.Errorf("bench: the mount's stats: %w", err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return doc, fmt.Errorf("bench: the mount's stats: %w", err)
	}
	return doc, nil
}

// requests returns the requests that reached the mount so far, by opcode:
// it asks the mount for its stats file (SIGUSR1) and waits until the file
// is newer than the signal.
func (m *benchMount) requests() (map[string]int64, error) {
	sent := time.Now()
	if err := m.proc.Signal(syscall.SIGUSR1); err != nil {
		return nil, err
	}
	for deadline := sent.Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		doc, err := m.readStats()
		if err == nil && !doc.Time.Before(sent) {
			return doc.Serve.Requests, nil
		}
	}
	return nil, fmt.Errorf("bench: %s wrote no stats file within 10 s of SIGUSR1", m.statsFile)
}
