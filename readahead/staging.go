package readahead

import (
	"context"
	"sync"
	"time"
)

// staging holds chunks that readahead decoded (or is decoding) before
// anyone asked for them, until their first read or until they expire. It
// has one byte budget for every array and reader: a chunk's decoded size is
// reserved before its load starts, so the budget bounds the decode buffers
// in flight as well as the chunks waiting.
//
// Staged chunks do not go into the decoded tier until they are read, so
// that prefetching never evicts what readers are using. A staged chunk
// holds one reference (see chunk); whoever takes it from staging takes
// that reference over, and staging releases the chunks that expire.
//
// A chunk placed where its reader finds it without asking (the kernel's
// page cache, see Placer) lets its bytes go but keeps its entry and its
// reservation until the reader is known to have read past it (confirm)
// or its TTL passes: pages pushed and not read count against the budget.
//
// staging is safe for concurrent use.
type staging struct {
	ttl time.Duration // immutable: how long a decoded chunk waits unread

	mu                     sync.Mutex
	max                    int64              // the budget (setMax lowers it under memory pressure)
	used                   int64              // sum of size over entries; used <= max, but for what setMax left
	peak                   int64              // highest used so far
	placedUsed, placedPeak int64              // of used, the placed entries: pages pushed and not yet known read
	entries                map[string]*staged // pending or ready, not yet read
	ready                  []*staged          // filled entries in order of expiry; may hold gone ones
	goneIn                 int                // gone entries in ready: at most half of it (see take)

	// Counters, under mu.
	staged, stagedBytes int64 // entries reserved
	taken, takenBytes   int64 // entries handed to a reader
	wasted, wastedBytes int64 // entries that expired unread
	placed, placedBytes int64 // entries whose chunk was placed (Placer)
	confirmed           int64 // placed entries whose reader read past them
	placedExpired       int64 // placed entries whose TTL passed unconfirmed
	reread              int64 // placed entries a reader asked for after all (the kernel let the pages go)
}

// A staged chunk. The prefetcher that reserved it fills it exactly once;
// readers wait on done.
type staged struct {
	key  string
	size int64         // bytes reserved
	done chan struct{} // closed by fill

	// Set by fill before done is closed; read-only afterwards.
	v         *chunk // with one reference, owned by staging until taken
	err       error
	decodeErr bool // err is the chunk's own fault (corrupt), not the store's

	// Under staging.mu.
	expires   time.Time
	gone      bool // no longer in entries: taken or expired
	abandoned bool // taken, and its taker left before it was filled
	placed    bool // its chunk was placed and let go (v is nil since)
}

func newStaging(max int64, ttl time.Duration) *staging {
	return &staging{max: max, ttl: ttl, entries: map[string]*staged{}}
}

// reserveResult says what reserve did.
type reserveResult int

const (
	reserved reserveResult = iota // a new entry: the caller must fill it
	present                       // key is already staged (pending or ready)
	full                          // no room in the budget
)

// reserve makes room for a chunk of size bytes under key.
func (s *staging) reserve(key string, size int64) (*staged, reserveResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[key]; ok {
		return nil, present
	}
	if s.used+size > s.max {
		gone := s.expireLocked(time.Now())
		if len(gone) > 0 {
			// Release outside the lock: closing a memfd frees its pages.
			s.mu.Unlock()
			releaseAll(gone)
			s.mu.Lock()
			if _, ok := s.entries[key]; ok {
				return nil, present
			}
		}
		if s.used+size > s.max {
			return nil, full
		}
	}
	e := &staged{key: key, size: size, done: make(chan struct{})}
	s.entries[key] = e
	s.used += size
	s.peak = max(s.peak, s.used)
	s.staged++
	s.stagedBytes += size
	return e, reserved
}

// fill completes e with its chunk (which carries one reference) or the
// reason there is none. A chunk that failed leaves staging at once (its
// reservation is released); a decoded one waits for its reader until the
// TTL passes.
func (s *staging) fill(e *staged, v *chunk, err error, decodeErr bool) {
	s.mu.Lock()
	e.v, e.err, e.decodeErr = v, err, decodeErr
	drop := false
	switch {
	case e.gone: // a reader took it while it was loading
		drop = e.abandoned
	case err != nil:
		s.removeLocked(e)
	default:
		e.expires = time.Now().Add(s.ttl)
		s.ready = append(s.ready, e)
	}
	s.mu.Unlock()
	close(e.done)
	if drop && v != nil {
		v.release()
	}
}

// abandon tells staging that the reader who took e stopped waiting for
// it: its chunk, once filled, is released instead of handed over.
func (s *staging) abandon(e *staged) {
	s.mu.Lock()
	filled := e.err != nil || e.v != nil
	e.abandoned = !filled
	s.mu.Unlock()
	if filled && e.v != nil {
		e.v.release()
	}
}

// take removes the entry for key and hands it to the caller, who waits for
// it with wait. It returns nil when key is not staged, or was placed (its
// chunk is gone from here: the caller loads it again).
func (s *staging) take(key string) *staged {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		return nil
	}
	s.unstageLocked(e)
	if e.placed {
		s.reread++
		return nil
	}
	s.taken++
	s.takenBytes += e.size
	return e
}

// takeReady removes the entry for key and hands its chunk, with the
// entry's reference, to the caller, if the chunk is decoded and here: the
// take that need not wait. Otherwise it leaves the entry as it is.
func (s *staging) takeReady(key string) (*chunk, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok || e.placed || e.v == nil || e.expires == (time.Time{}) {
		return nil, false
	}
	s.unstageLocked(e)
	s.taken++
	s.takenBytes += e.size
	return e.v, true
}

// place lets the chunk of e go, once it has been placed where its reader
// will find it (Placer): e stays, with its reservation, until confirm or
// its TTL. It does nothing if a reader took e meanwhile.
func (s *staging) place(e *staged) {
	s.mu.Lock()
	v := e.v
	if e.gone || v == nil || e.placed {
		s.mu.Unlock()
		return
	}
	e.v, e.placed = nil, true
	s.placed++
	s.placedBytes += e.size
	s.placedUsed += e.size
	s.placedPeak = max(s.placedPeak, s.placedUsed)
	s.mu.Unlock()
	v.release()
}

// unread reports whether e is still staged: no reader has taken it.
func (s *staging) unread(e *staged) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !e.gone
}

// confirm ends the entry for key if it was placed: its reader has read
// past it. It reports whether it was.
func (s *staging) confirm(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok || !e.placed {
		return false
	}
	s.unstageLocked(e)
	s.confirmed++
	return true
}

// drop removes the entry for key, if any, and releases its chunk (once it
// is filled, if it is still loading): the value it came from changed.
func (s *staging) drop(key string) {
	s.mu.Lock()
	e, ok := s.entries[key]
	if ok {
		s.unstageLocked(e)
	}
	s.mu.Unlock()
	if ok {
		s.abandon(e)
	}
}

// unstageLocked removes e, taken or dropped, and counts it gone from ready
// if it waits there, as expireLocked counts it down.
func (s *staging) unstageLocked(e *staged) {
	s.removeLocked(e)
	if e.expires != (time.Time{}) { // in ready, with its chunk
		// Entries gone from ready would wait there, holding their chunks,
		// until their TTL passed: a TTL's worth of prefetched bytes beyond
		// the budget. Drop them once they are half of it.
		if s.goneIn++; s.goneIn > len(s.ready)/2 {
			live := s.ready[:0]
			for _, r := range s.ready {
				if !r.gone {
					live = append(live, r)
				}
			}
			clear(s.ready[len(live):])
			s.ready, s.goneIn = live, 0
		}
	}
}

// wait returns e's chunk once it is filled.
func (e *staged) wait(ctx context.Context) (*chunk, error) {
	select {
	case <-e.done:
		return e.v, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// isReady reports whether key is staged and decoded: reading it now will
// not wait.
func (s *staging) isReady(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	return ok && e.expires != time.Time{}
}

func (s *staging) removeLocked(e *staged) {
	delete(s.entries, e.key)
	s.used -= e.size
	if e.placed {
		s.placedUsed -= e.size
	}
	e.gone = true
}

// expire drops the chunks whose TTL has passed; they count as waste.
func (s *staging) expire(now time.Time) {
	s.mu.Lock()
	gone := s.expireLocked(now)
	s.mu.Unlock()
	releaseAll(gone)
}

// expireLocked removes the expired entries and returns their chunks, for
// the caller to release once it has let go of s.mu.
func (s *staging) expireLocked(now time.Time) []*chunk {
	var gone []*chunk
	n := 0
	for _, e := range s.ready {
		if e.expires.After(now) {
			break
		}
		n++
		switch {
		case e.gone:
			s.goneIn--
		case e.placed:
			s.removeLocked(e)
			s.placedExpired++
		default:
			s.removeLocked(e)
			s.wasted++
			s.wastedBytes += e.size
			gone = append(gone, e.v)
		}
	}
	clear(s.ready[:n]) // let the collector have them
	s.ready = s.ready[n:]
	return gone
}

// clear releases every chunk still staged, at Close, once no prefetch
// runs.
func (s *staging) clear() {
	s.mu.Lock()
	var gone []*chunk
	for _, e := range s.ready {
		if !e.gone {
			s.removeLocked(e)
			if e.v != nil {
				gone = append(gone, e.v)
			}
		}
	}
	s.ready = nil
	s.mu.Unlock()
	releaseAll(gone)
}

func releaseAll(cs []*chunk) {
	for _, c := range cs {
		c.release()
	}
}

// budget returns the budget: setMax changes it while readers plan.
func (s *staging) budget() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}

// setMax changes the budget to max. Lowering it stops new reservations
// until what is staged fits, and releases decoded chunks waiting unread,
// the oldest first, until it does: they count as waste. Chunks still
// loading keep their reservations (their readers wait for them), and so
// do placed ones (their bytes are the kernel's already, and go with its
// page cache).
func (s *staging) setMax(max int64) {
	s.mu.Lock()
	s.max = max
	var gone []*chunk
	live := s.ready[:0]
	for _, e := range s.ready {
		switch {
		case e.gone:
			continue // taken or dropped: off the list now
		case s.used > s.max && !e.placed && e.v != nil:
			s.removeLocked(e)
			s.wasted++
			s.wastedBytes += e.size
			gone = append(gone, e.v)
			continue
		}
		live = append(live, e)
	}
	clear(s.ready[len(live):])
	s.ready, s.goneIn = live, 0
	s.mu.Unlock()
	releaseAll(gone)
}

// run expires chunks every half TTL until ctx ends.
func (s *staging) run(ctx context.Context) {
	t := time.NewTicker(max(s.ttl/2, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.expire(now)
		}
	}
}

// stagingStats is a snapshot of staging's counters.
type stagingStats struct {
	used, peak, max                        int64
	staged, stagedBytes, taken, takenBytes int64
	wasted, wastedBytes                    int64
	placed, placedBytes, confirmed         int64
	placedExpired, reread                  int64
	placedUsed, placedPeak                 int64
}

func (s *staging) stats() stagingStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return stagingStats{
		used: s.used, peak: s.peak, max: s.max,
		staged: s.staged, stagedBytes: s.stagedBytes,
		taken: s.taken, takenBytes: s.takenBytes,
		wasted: s.wasted, wastedBytes: s.wastedBytes,
		placed: s.placed, placedBytes: s.placedBytes, confirmed: s.confirmed,
		placedExpired: s.placedExpired, reread: s.reread,
		placedUsed: s.placedUsed, placedPeak: s.placedPeak,
	}
}
