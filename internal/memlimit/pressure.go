package memlimit

import (
	"context"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zfuse/zfuse/internal/bytesize"
)

// The budgets fit the limit when the mount is alone under it, but a
// cgroup is shared: a pod's training job, a Slurm job's other steps grow
// too, and when the cgroup reaches its limit the kernel kills the largest
// process in it, often the mount. So a mount watches the memory in use in
// the cgroup whose limit it found (Usage: what the kernel cannot
// reclaim without swap) and, when it nears the limit, sheds its caches:
// halves its budgets (evicting at once what is above them, and
// prefetching less), and halves them again while the pressure lasts; once
// the memory in use leaves room to grow, it doubles them back. Shedding
// costs decoding again, never a wrong byte.

const (
	shedAt      = 0.85                   // of the limit in use: shed (halve the budgets)
	shedHardAt  = 0.95                   // of the limit in use: shed harder (quarter them)
	growBelow   = 0.75                   // in use, with what growing would add, below this share of the limit: grow back
	minScale    = 1.0 / 16               // the budgets are never shed below this share of their plan
	shedEvery   = 500 * time.Millisecond // at most one shed per half second: the last one must take effect first
	growAfter   = 10 * time.Second       // how long the room to grow must last before growing
	pressureTic = 100 * time.Millisecond // how often the memory in use is read
)

// A shedState is where the pressure watcher stands.
type shedState struct {
	scale   float64   // the share of the planned budgets in force, minScale..1
	changed time.Time // when scale last changed
	roomAt  time.Time // since when there has been room to grow; zero when there is none
}

// step returns the state after reading used bytes in use at now, under
// limit, with planned budgets: scale halves when used is above shedAt of
// the limit, and quarters above shedHardAt (at most once per shedEvery),
// and doubles when used plus what doubling would add has stayed below
// growBelow of it for growAfter.
func (s shedState) step(now time.Time, used, limit, planned int64) shedState {
	l := float64(limit)
	switch {
	case float64(used) > shedAt*l:
		s.roomAt = time.Time{}
		by := 2.0
		if float64(used) > shedHardAt*l {
			by = 4
		}
		if s.scale > minScale && now.Sub(s.changed) >= shedEvery {
			s.scale, s.changed = max(s.scale/by, minScale), now
		}
	case s.scale < 1 && float64(used)+float64(planned)*s.scale < growBelow*l:
		if s.roomAt.IsZero() {
			s.roomAt = now
		}
		if now.Sub(s.roomAt) >= growAfter {
			s.scale, s.changed, s.roomAt = min(s.scale*2, 1), now, time.Time{}
		}
	default:
		s.roomAt = time.Time{}
	}
	return s
}

// A Budgeter is what a Watcher sheds: *readahead.Loader, whose
// SetBudgets frees what is above the new budgets at once.
type Budgeter interface {
	SetBudgets(decoded, compressed, readahead int64)
}

// A Watcher sheds a mount's caches under memory pressure (see above).
// Its Stats are safe to read at any time.
type Watcher struct {
	plan   *Plan
	fsys   fs.FS
	loader Budgeter
	log    *slog.Logger
	memfds bool // decoded chunks are memfds (passthrough), outside the heap; set by start

	ctx    context.Context // ends at stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	used  atomic.Int64  // the memory in use as last read
	scale atomic.Uint64 // math.Float64bits of the scale in force
	sheds atomic.Int64  // times the budgets were lowered
}

// NewWatcher returns the watcher of plan's limit (read in fsys, as for
// Find) for loader. The scale starts at 1. Call Stop when done.
func NewWatcher(plan *Plan, fsys fs.FS, loader Budgeter, log *slog.Logger) *Watcher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{plan: plan, fsys: fsys, loader: loader, log: log}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.scale.Store(math.Float64bits(1))
	return w
}

// Start starts watching, once the mount is up: memfds says whether its
// serving path keeps decoded chunks in memfds, for the soft memory limit.
// Nothing is watched where no limit was found.
func (w *Watcher) Start(memfds bool) {
	if w.plan.Found.Bytes <= 0 {
		return
	}
	w.memfds = memfds
	w.wg.Go(w.run)
}

// Stop stops watching and waits until the watcher has.
func (w *Watcher) Stop() {
	w.cancel()
	w.wg.Wait()
}

// run reads the memory in use every pressureTic and sheds or grows the
// budgets until Stop.
func (w *Watcher) run() {
	ctx, found := w.ctx, w.plan.Found
	w.apply(1, false) // the soft limit for the serving path in use
	s := shedState{scale: 1}
	t := time.NewTicker(pressureTic)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			used, err := Usage(w.fsys, found)
			if err != nil {
				if !warned {
					w.log.Warn("cannot read the memory in use; caches are not shed under pressure", "err", err)
					warned = true
				}
				continue
			}
			w.used.Store(used)
			next := s.step(now, used, found.Bytes, w.plan.Budgets.Sum())
			if next.scale != s.scale {
				w.apply(next.scale, next.scale < s.scale)
				attrs := []any{"in_use", bytesize.Format(used), "limit", bytesize.Format(found.Bytes), "from", found.From(), "scale", next.scale}
				if next.scale < s.scale {
					w.log.Warn("memory pressure: shedding caches", attrs...)
				} else {
					w.log.Info("memory pressure over: caches grow back", attrs...)
				}
			}
			s = next
		}
	}
}

// gomemlimitSet reports whether the environment sets the soft memory
// limit; then zfuse never changes it.
func gomemlimitSet() bool {
	_, ok := os.LookupEnv("GOMEMLIMIT")
	return ok
}

// apply puts the budgets at scale of the plan in force, with the soft
// memory limit for them; shed says they went down, and then the memory the
// caches let go is returned to the kernel now, not at the runtime's pace.
func (w *Watcher) apply(scale float64, shed bool) {
	b := w.plan.Budgets.Scaled(scale)
	w.loader.SetBudgets(b.Decoded, b.Compressed, b.Readahead)
	if !gomemlimitSet() {
		debug.SetMemoryLimit(w.plan.SoftLimit(b, w.memfds))
	}
	w.scale.Store(math.Float64bits(scale))
	if shed {
		w.sheds.Add(1)
		debug.FreeOSMemory()
	}
}

// Stats are a Watcher's counters, for the metrics.
type Stats struct {
	Limit            int64   // the limit the budgets fit; 0: none known
	From             string  // where it comes from (Plan.Kind): "cgroup v1", "cgroup v2", "machine", "flag"
	InUse, SoftLimit int64   // the memory in use under the limit, as last read; GOMEMLIMIT
	Scale            float64 // the share of the planned budgets in force
	Sheds            int64   // times the budgets were lowered
}

// Stats returns the watcher's counters.
func (w *Watcher) Stats() Stats {
	return Stats{Limit: w.plan.Limit, From: w.plan.Kind(), InUse: w.used.Load(), SoftLimit: debug.SetMemoryLimit(-1),
		Scale: math.Float64frombits(w.scale.Load()), Sheds: w.sheds.Load()}
}
