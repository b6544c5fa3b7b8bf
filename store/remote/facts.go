package remote

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// A Fact is what one response said about one key.
type Fact struct {
	Missing bool   // the server said there is no such key (404)
	Size    int64  // length of the value; -1 when the response did not say
	Tag     string // ETag, else Last-Modified; "" when the server sent neither
}

// Facts remembers the latest Fact about each key, and which keys are being
// fetched right now, so that Stat after (or during) a read costs no request:
// readahead fetches the next chunks before the kernel looks their files up.
// It holds at most a fixed number of keys, forgetting arbitrary ones when
// full. It is safe for concurrent use.
type Facts struct {
	max int          // immutable
	log *slog.Logger // immutable

	mu      sync.Mutex // guards the fields below
	facts   map[string]Fact
	flights map[string]*flight // keys with a whole-value fetch in flight
}

// A flight is one or more fetches of a key in flight; done closes when the
// last one ends.
type flight struct {
	done chan struct{}
	n    int
}

// NewFacts returns a table of at most max keys (0 means 1<<18). Changes it
// notices are logged to log at Warn (nil means discard).
func NewFacts(max int, log *slog.Logger) *Facts {
	if max <= 0 {
		max = 1 << 18
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Facts{max: max, log: log, facts: map[string]Fact{}, flights: map[string]*flight{}}
}

// Get returns what is known about key.
func (f *Facts) Get(key string) (Fact, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x, ok := f.facts[key]
	return x, ok
}

// Observe records what a response said about key. If it contradicts what
// an earlier response said (another ETag or size, or a key that appeared or
// vanished), the value changed on the server during the mount: that is
// logged at Warn, as what is served may now mix old and new data.
func (f *Facts) Observe(ctx context.Context, key string, x Fact) {
	f.mu.Lock()
	old, ok := f.facts[key]
	if ok && x.Size < 0 && !x.Missing {
		x.Size = old.Size // a response without a size says nothing new about it
	}
	if !ok && len(f.facts) >= f.max {
		n := 0
		for k := range f.facts { // map order is random enough
			delete(f.facts, k)
			if n++; n >= f.max/8+1 {
				break
			}
		}
	}
	f.facts[key] = x
	f.mu.Unlock()
	if ok && changed(old, x) {
		f.log.WarnContext(ctx, "value changed on the server during the mount; reads may mix old and new data",
			"key", key, "was", describe(old), "now", describe(x))
	}
}

func changed(a, b Fact) bool {
	switch {
	case a.Missing || b.Missing:
		return a.Missing != b.Missing
	case a.Tag != "" && b.Tag != "" && a.Tag != b.Tag:
		return true
	}
	return a.Size >= 0 && b.Size >= 0 && a.Size != b.Size
}

func describe(x Fact) string {
	if x.Missing {
		return "missing"
	}
	return fmt.Sprintf("%d bytes, tag %q", x.Size, x.Tag)
}

// Begin records that a fetch of key's whole value started; call end when it
// has ended (after Observe).
func (f *Facts) Begin(key string) (end func()) {
	f.mu.Lock()
	fl := f.flights[key]
	if fl == nil {
		fl = &flight{done: make(chan struct{})}
		f.flights[key] = fl
	}
	fl.n++
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if fl.n--; fl.n == 0 {
			close(fl.done)
			delete(f.flights, key)
		}
	}
}

// Wait returns what is known about key, first waiting for fetches of key in
// flight (if any) to end, or for ctx to end.
func (f *Facts) Wait(ctx context.Context, key string) (Fact, bool) {
	f.mu.Lock()
	fl := f.flights[key]
	f.mu.Unlock()
	if fl != nil {
		select {
		case <-fl.done:
		case <-ctx.Done():
			return Fact{}, false
		}
	}
	return f.Get(key)
}
