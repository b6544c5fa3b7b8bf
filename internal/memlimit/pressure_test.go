package memlimit

import (
	"fmt"
	"io/fs"
	"runtime/debug"
	"sync"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"
)

func TestShedStep(t *testing.T) {
	const limit, planned = 1000, 600
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	for _, r := range []struct {
		name string
		s    shedState
		now  time.Time
		used int64
		want shedState
	}{
		{"calm", shedState{scale: 1}, at(0), 700, shedState{scale: 1}},
		{"at the mark: no shed", shedState{scale: 1}, at(0), 850, shedState{scale: 1}},
		{"over it: halve", shedState{scale: 1}, at(0), 851, shedState{scale: 0.5, changed: at(0)}},
		{"again too soon", shedState{scale: 0.5, changed: at(0)}, at(shedEvery - 1), 900, shedState{scale: 0.5, changed: at(0)}},
		{"again after shedEvery", shedState{scale: 0.5, changed: at(0)}, at(shedEvery), 900, shedState{scale: 0.25, changed: at(shedEvery)}},
		{"far over: quarter", shedState{scale: 1}, at(0), 951, shedState{scale: 0.25, changed: at(0)}},
		{"never below minScale", shedState{scale: minScale}, at(time.Hour), 999, shedState{scale: minScale}},
		{"pressure ends the room to grow", shedState{scale: 0.5, roomAt: at(0)}, at(time.Second), 900, shedState{scale: 0.25, changed: at(time.Second)}},
		// 400 + 600*0.5 = 700 < 750: room, but not for growAfter yet.
		{"room: start counting", shedState{scale: 0.5}, at(0), 400, shedState{scale: 0.5, roomAt: at(0)}},
		{"room, not long enough", shedState{scale: 0.5, roomAt: at(0)}, at(growAfter - 1), 400, shedState{scale: 0.5, roomAt: at(0)}},
		{"room for growAfter: double", shedState{scale: 0.5, roomAt: at(0)}, at(growAfter), 400, shedState{scale: 1, changed: at(growAfter)}},
		// 500 + 300 = 800: doubling would take it over growBelow.
		{"no room to double", shedState{scale: 0.5, roomAt: at(0)}, at(growAfter), 500, shedState{scale: 0.5}},
		{"at 1 there is nothing to grow", shedState{scale: 1}, at(0), 0, shedState{scale: 1}},
	} {
		if got := r.s.step(r.now, r.used, limit, planned); got != r.want {
			t.Errorf("%s: %+v, want %+v", r.name, got, r.want)
		}
	}
}

// usageFS is a cgroup v2 directory "cg" whose memory in use the test sets.
type usageFS struct {
	mu   sync.Mutex
	used int64
}

func (u *usageFS) set(n int64) { u.mu.Lock(); u.used = n; u.mu.Unlock() }

func (u *usageFS) Open(name string) (fs.File, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return fstest.MapFS{
		"cg/memory.current": {Data: []byte(fmt.Sprintf("%d\n", u.used+100))},
		"cg/memory.stat":    {Data: []byte("anon 1\nactive_file 60\ninactive_file 40\n")},
	}.Open(name)
}

// budgetLog records the budgets a watcher sets.
type budgetLog struct {
	mu  sync.Mutex
	set []Budgets
}

func (b *budgetLog) SetBudgets(decoded, compressed, readahead int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.set = append(b.set, Budgets{decoded, compressed, readahead})
}

func (b *budgetLog) last() Budgets {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.set[len(b.set)-1]
}

// TestWatcher: the watcher reads the cgroup's memory in use (less
// file pages), halves the loader's budgets when it goes over shedAt of the
// limit, and grows them back once there has been room for growAfter; the
// soft memory limit follows.
func TestWatcher(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	synctest.Test(t, func(t *testing.T) {
		const limit = 1000 * mib
		plan := &Plan{Found: Limit{Bytes: limit, Cgroup: Cgroup{Version: 2, Dir: "cg", Mount: "."}},
			Limit: limit, Budgets: Budgets{Decoded: 400 * mib, Readahead: 200 * mib}, FreeFiles: freeFiles}
		fsys := &usageFS{used: 500 * mib}
		loader := &budgetLog{}
		w := NewWatcher(plan, fsys, loader, nil)
		w.Start(false)
		defer w.Stop()
		synctest.Wait()
		if got := loader.last(); got != plan.Budgets || gomemlimitSet() || debug.SetMemoryLimit(-1) != 640*mib {
			t.Errorf("at start: budgets %+v, soft limit %d MiB; want the plan's and 640 MiB", got, debug.SetMemoryLimit(-1)/mib)
		}
		fsys.set(900 * mib)
		time.Sleep(pressureTic)
		synctest.Wait()
		if got, st := loader.last(), w.Stats(); got != (Budgets{Decoded: 200 * mib, Readahead: 100 * mib}) || st.Sheds != 1 || st.Scale != 0.5 || st.InUse != 900*mib {
			t.Errorf("over the mark: budgets %+v, %+v", got, st)
		}
		if debug.SetMemoryLimit(-1) != 340*mib {
			t.Errorf("soft limit %d MiB, want 340", debug.SetMemoryLimit(-1)/mib)
		}
		fsys.set(300 * mib)
		time.Sleep(growAfter + 2*pressureTic)
		synctest.Wait()
		if got, st := loader.last(), w.Stats(); got != plan.Budgets || st.Scale != 1 || st.Sheds != 1 {
			t.Errorf("after growAfter with room: budgets %+v, %+v", got, st)
		}
	})
}
