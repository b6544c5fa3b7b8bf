package readahead

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zfuse/zfuse/internal/bytesize"
)

// Stats are a Loader's counters since New: plain numbers, so that an
// exporter (Prometheus, expvar) can be hung on them.
type Stats struct {
	Reads          int64 // Chunk calls
	DecodedHits    int64 // reads served by the decoded tier
	DecodedMisses  int64 // reads that were not (served by staging, or loaded)
	CompressedHits int64 // stored values found in the compressed tier, saving a store read
	StoreReads     int64 // values read from the store

	Prefetched, PrefetchedBytes         int64 // chunks staged by readahead
	PrefetchUsed, PrefetchUsedBytes     int64 // staged chunks that a reader took
	PrefetchWaits                       int64 // of those, taken while still loading or decoding
	PrefetchWasted, PrefetchWastedBytes int64 // staged chunks that expired unread
	PrefetchErrors                      int64 // staged chunks that failed to load or decode (missing chunks excluded)
	// Placed chunks (SetPlacer): handed to the kernel's page cache before
	// their first read, so that the read never reached the Loader.
	Placed, PlacedBytes int64
	PlacedRead          int64 // of those, known read (a later read of the same reader reached the Loader)
	PlacedExpired       int64 // of those, whose TTL passed with no such read
	PlacedReread        int64 // of those, read through the Loader after all (the kernel let the pages go first)
	PlaceRefused        int64 // chunks the Placer could not place (the kernel did not know the file yet): they waited in staging
	// Bytes of placed chunks not yet known read, now and at most: pages
	// the mount pushed into the page cache, counted in ReadaheadUsed.
	PlacedHeld, PlacedPeak int64
	ServedDrops            int64 // chunks the decoded tier let go once Read had handed out all of them (the page cache has them)
	HandedLost             int64 // reads of chunks the page cache had been given whole and let go: each forgets what it was given (handed.go)
	StoredOpens            int64 // chunks opened as their stored files (stored uncompressed), not decoded
	BufferReuses           int64 // decodes into a buffer a chunk had left (no fresh memory)
	Forgotten              int64 // Forget calls: chunks whose stored value changed (zfuse --refresh)
	// Arrays with a batch decoder kept, and name orders kept: bounded
	// however often zfuse --refresh reads metadata again.
	ArrayDecoders, NameOrders int64

	Decode map[string]DecodeStats // by codec pipeline (zarr.Array.Codecs)

	// Bytes held now, and the budgets.
	DecodedUsed, DecodedBudget       int64
	CompressedUsed, CompressedBudget int64
	ReadaheadUsed, ReadaheadBudget   int64
	ReadaheadPeak                    int64 // the most ReadaheadUsed has been
	// Memfds alive (Config.Files), in the tiers or held open by readers
	// and the kernel after the tiers let them go, and their bytes.
	Memfds, MemfdBytes int64
	// Memfds kept to hold other chunks once nobody holds theirs, their
	// bytes, and how often one was used again.
	MemfdsFree, MemfdFreeBytes, MemfdsReused int64
	MemfdsBusy                               int64 // memfds not used again: the kernel or a reader's map still had them
	MemfdPeak                                int64 // the most MemfdBytes + MemfdFreeBytes has been
}

// DecodeStats describe the decoding done for one codec pipeline.
type DecodeStats struct {
	Batches int64         // DecodeBatch calls
	Chunks  int64         // chunks decoded
	Bytes   int64         // decoded bytes
	Errors  int64         // chunks that failed to decode
	Time    time.Duration // wall time in DecodeBatch
}

// Stats returns the Loader's counters. It is safe to call at any time.
func (l *Loader) Stats() Stats {
	d, c, st := l.decoded.Stats(), l.compressed.Stats(), l.staging.stats()
	s := Stats{
		Reads:               l.reads.Load(),
		DecodedHits:         d.Hits,
		DecodedMisses:       d.Misses,
		CompressedHits:      c.Hits,
		StoreReads:          l.storeReads.Load(),
		Prefetched:          st.staged,
		PrefetchedBytes:     st.stagedBytes,
		PrefetchUsed:        st.taken,
		PrefetchUsedBytes:   st.takenBytes,
		PrefetchWaits:       l.waits.Load(),
		PrefetchWasted:      st.wasted,
		PrefetchWastedBytes: st.wastedBytes,
		PrefetchErrors:      l.prefetchErrors.Load(),
		Placed:              st.placed,
		PlacedBytes:         st.placedBytes,
		PlacedRead:          st.confirmed,
		PlacedExpired:       st.placedExpired,
		PlacedReread:        st.reread,
		PlaceRefused:        l.placeRefused.Load(),
		PlacedHeld:          st.placedUsed,
		PlacedPeak:          st.placedPeak,
		ServedDrops:         l.dropped.Load(),
		HandedLost:          l.handedLost.Load(),
		StoredOpens:         l.storedOpens.Load(),
		BufferReuses:        l.bufs.reuses(),
		Forgotten:           l.forgotten.Load(),
		ArrayDecoders:       l.routes.len(),
		NameOrders:          l.readers.orders.Stats().Items,
		Memfds:              l.memfds.n.Load() - l.memfds.freeN.Load(),
		MemfdBytes:          l.memfds.bytes.Load() - l.memfds.freeBytes.Load(),
		MemfdsFree:          l.memfds.freeN.Load(),
		MemfdFreeBytes:      l.memfds.freeBytes.Load(),
		MemfdsReused:        l.mfiles.reused.Load(),
		MemfdsBusy:          l.mfiles.busy.Load(),
		MemfdPeak:           l.memfds.peak.Load(),
		DecodedUsed:         d.Used,
		DecodedBudget:       d.Max,
		CompressedUsed:      c.Used,
		CompressedBudget:    c.Max,
		ReadaheadUsed:       st.used,
		ReadaheadBudget:     st.max,
		ReadaheadPeak:       st.peak,
	}
	s.Decode = l.decodes.snapshot()
	return s
}

// decodeCounts sums DecodeStats by codec pipeline (zarr.Array.Codecs).
type decodeCounts struct {
	mu sync.Mutex // guards m
	m  map[string]*DecodeStats
}

// add adds d to the counts of the pipeline codecs.
func (c *decodeCounts) add(codecs string, d DecodeStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*DecodeStats{}
	}
	ds := c.m[codecs]
	if ds == nil {
		ds = &DecodeStats{}
		c.m[codecs] = ds
	}
	ds.Batches += d.Batches
	ds.Chunks += d.Chunks
	ds.Bytes += d.Bytes
	ds.Errors += d.Errors
	ds.Time += d.Time
}

// snapshot returns a copy of the counts.
func (c *decodeCounts) snapshot() map[string]DecodeStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]DecodeStats, len(c.m))
	for k, v := range c.m {
		out[k] = *v
	}
	return out
}

// String summarises s in one line.
func (s Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "reads %d (decoded hits %d, prefetch used %d of %d, waited %d, wasted %d), store reads %d, compressed hits %d; ",
		s.Reads, s.DecodedHits, s.PrefetchUsed, s.Prefetched, s.PrefetchWaits, s.PrefetchWasted, s.StoreReads, s.CompressedHits)
	if s.Placed+s.PlaceRefused > 0 {
		fmt.Fprintf(&b, "placed %d (read %d, reread %d, expired %d, refused %d); ", s.Placed, s.PlacedRead, s.PlacedReread, s.PlacedExpired, s.PlaceRefused)
	}
	fmt.Fprintf(&b, "held: decoded %s/%s, compressed %s/%s, readahead %s/%s, memfds %d (%s)",
		bytesize.Format(s.DecodedUsed), bytesize.Format(s.DecodedBudget),
		bytesize.Format(s.CompressedUsed), bytesize.Format(s.CompressedBudget),
		bytesize.Format(s.ReadaheadUsed), bytesize.Format(s.ReadaheadBudget),
		s.Memfds, bytesize.Format(s.MemfdBytes))
	for _, k := range slices.Sorted(maps.Keys(s.Decode)) {
		d := s.Decode[k]
		fmt.Fprintf(&b, "; %s: %d chunks in %v", k, d.Chunks, d.Time.Round(time.Microsecond))
		if d.Time > 0 {
			fmt.Fprintf(&b, " (%.0f MB/s)", float64(d.Bytes)/d.Time.Seconds()/1e6)
		}
	}
	return b.String()
}

// LogValue lets a Stats be logged as a group of attributes.
func (s Stats) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.Int64("reads", s.Reads),
		slog.Int64("decoded_hits", s.DecodedHits),
		slog.Int64("decoded_misses", s.DecodedMisses),
		slog.Int64("compressed_hits", s.CompressedHits),
		slog.Int64("store_reads", s.StoreReads),
		slog.Int64("prefetched", s.Prefetched),
		slog.Int64("prefetch_used", s.PrefetchUsed),
		slog.Int64("prefetch_waits", s.PrefetchWaits),
		slog.Int64("prefetch_wasted", s.PrefetchWasted),
		slog.Int64("prefetch_wasted_bytes", s.PrefetchWastedBytes),
		slog.Int64("prefetch_errors", s.PrefetchErrors),
		slog.Int64("placed", s.Placed),
		slog.Int64("placed_read", s.PlacedRead),
		slog.Int64("placed_reread", s.PlacedReread),
		slog.Int64("placed_expired", s.PlacedExpired),
		slog.Int64("place_refused", s.PlaceRefused),
		slog.Int64("served_drops", s.ServedDrops),
		slog.Int64("handed_lost", s.HandedLost),
		slog.Int64("stored_opens", s.StoredOpens),
		slog.Int64("buffer_reuses", s.BufferReuses),
		slog.Int64("memfds", s.Memfds),
		slog.Int64("memfd_bytes", s.MemfdBytes),
		slog.Int64("memfds_free", s.MemfdsFree),
		slog.Int64("memfds_reused", s.MemfdsReused),
		slog.Int64("decoded_used", s.DecodedUsed),
		slog.Int64("compressed_used", s.CompressedUsed),
		slog.Int64("readahead_used", s.ReadaheadUsed),
	}
	var decode []any
	for _, k := range slices.Sorted(maps.Keys(s.Decode)) {
		d := s.Decode[k]
		decode = append(decode, slog.Group(k, slog.Int64("chunks", d.Chunks),
			slog.Int64("bytes", d.Bytes), slog.Int64("errors", d.Errors), slog.Duration("time", d.Time)))
	}
	if len(decode) > 0 {
		attrs = append(attrs, slog.Group("decode", decode...))
	}
	return slog.GroupValue(attrs...)
}
