package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// A Fact is what one response said about one key.
type Fact struct {
	Missing bool   // the server said there is no such key (404)
	Size    int64  // length of the value; -1 when the response did not say
	Tag     string // ETag, else Last-Modified; "" when the server sent neither

	seen time.Time // when a response last said this (set by Observe)
}

// Facts remembers the latest Fact about each key, and which keys are being
// fetched right now, so that Stat after (or during) a read costs no request:
// readahead fetches the next chunks before the kernel looks their files up.
// It holds at most a fixed number of keys, forgetting arbitrary ones when
// full (and with them the version pinned for them, see Observe). With a
// refresh interval, a fact is believed for that long after a response last
// said it (see Refresh). It is safe for concurrent use.
type Facts struct {
	max     int           // immutable
	log     *slog.Logger  // immutable
	refresh time.Duration // immutable after Refresh; 0: facts never go stale

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

// NewFacts returns a table of at most max keys (0 means 1<<18). Keys that
// appear during the mount are logged to log at Warn (nil means discard).
func NewFacts(max int, log *slog.Logger) *Facts {
	if max <= 0 {
		max = 1 << 18
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Facts{max: max, log: log, facts: map[string]Fact{}, flights: map[string]*flight{}}
}

// Refresh makes facts go stale d after a response last said them (0, the
// default: never), for a store that may change while mounted: a stale fact
// is not reported (Get, Wait), so the caller asks the server again, and a
// response from another version than a stale fact's is the new version
// (Observe). Call it before the Facts are used.
func (f *Facts) Refresh(d time.Duration) { f.refresh = max(d, 0) }

// Get returns what is known about key, unless it is stale (Refresh).
func (f *Facts) Get(key string) (Fact, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x, ok := f.facts[key]
	if ok && f.stale(x, time.Now()) {
		return Fact{}, false
	}
	return x, ok
}

// stale reports whether x is older than the refresh interval at now.
func (f *Facts) stale(x Fact, now time.Time) bool {
	return f.refresh > 0 && now.Sub(x.seen) >= f.refresh
}

// ErrChanged means a response came from another version of a value than
// the first response about it: another ETag (or Last-Modified) or size, or
// a 404 for a key that was there.
var ErrChanged = errors.New("remote: value changed on the server during the mount")

// Observe records what a response said about key and checks it against
// what was known. The first version of a value seen is the one the mount
// serves: a response from another version is refused, Observe returns an
// error wrapping ErrChanged (marked Retryable) and keeps the first
// version's fact. So bytes of two versions are never combined (a shard's
// index with its chunks, a size with a body), a key that vanishes reads
// as an error rather than as missing (a fill value), and once the server
// serves the first version again, reads succeed again. A key seen missing
// that appears is logged and recorded as present.
//
// With a refresh interval (Refresh), the version pinned is the one last
// seen less than an interval ago: a response from another version, once
// the fact it contradicts is stale, is recorded as the new version (and
// logged at Info), not refused.
func (f *Facts) Observe(ctx context.Context, key string, x Fact) error {
	now := time.Now()
	x.seen = now
	f.mu.Lock()
	old, ok := f.facts[key]
	switch {
	case !ok:
		f.makeRoom()
	case old.Missing:
		if !x.Missing && f.refresh == 0 {
			defer f.log.WarnContext(ctx, "a key missing before appeared on the server during the mount", "key", key, "now", describe(x))
		}
	case changed(old, x) && f.stale(old, now):
		defer f.log.InfoContext(ctx, "a value changed on the server: serving the new version", "key", key, "was", describe(old), "now", describe(x))
	case changed(old, x):
		f.mu.Unlock()
		// The caller's error names the key.
		return Retryable(fmt.Errorf("%w: was %s, now %s", ErrChanged, describe(old), describe(x)))
	default:
		// The same version: learn what was not known (a range's answer
		// may not say the size, a server may omit the tag).
		if old.Size < 0 {
			old.Size = x.Size
		}
		if old.Tag == "" {
			old.Tag = x.Tag
		}
		old.seen = now
		x = old
	}
	f.facts[key] = x
	f.mu.Unlock()
	return nil
}

// Forget drops what is known about key: the caller has just written or
// removed it, so the next response about it is its version, not a change.
func (f *Facts) Forget(key string) {
	f.mu.Lock()
	delete(f.facts, key)
	f.mu.Unlock()
}

// makeRoom forgets an eighth of the keys if the table is full. f.mu is held.
func (f *Facts) makeRoom() {
	if len(f.facts) < f.max {
		return
	}
	n := 0
	for k := range f.facts { // map order is random enough
		delete(f.facts, k)
		if n++; n >= f.max/8+1 {
			return
		}
	}
}

// changed reports whether b contradicts a, a fact about a key that exists.
func changed(a, b Fact) bool {
	switch {
	case b.Missing:
		return true
	case a.Tag != "" && b.Tag != "" && sameTag(a.Tag) != sameTag(b.Tag):
		return true
	}
	return a.Size >= 0 && b.Size >= 0 && a.Size != b.Size
}

// IsETag reports whether a version (Fact.Tag, store.Entry.Version) is an
// ETag, quoted or weak (W/ and quoted), rather than a Last-Modified date:
// which conditional header a request sends for it.
func IsETag(v string) bool { return strings.HasPrefix(v, `"`) || strings.HasPrefix(v, `W/"`) }

// sameTag is a validator as compared: without the weak marker and quotes
// (servers and listings differ in those alone).
func sameTag(t string) string { return strings.Trim(strings.TrimPrefix(t, "W/"), `"`) }

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
