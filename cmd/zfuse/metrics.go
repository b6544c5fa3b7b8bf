package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/gpu"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/store/diskcache"
	"github.com/zfuse/zfuse/store/remote"
	"github.com/zfuse/zfuse/tree"
	"github.com/zfuse/zfuse/zarr"
)

// --metrics ADDR serves Prometheus metrics at http://ADDR/metrics. Most of
// them are snapshots of counters the mount keeps anyway (readahead.Stats,
// the GPU decoder's and the disk cache's Stats), read at each scrape by a
// prometheus.Collector; what needs an observation per event (decode
// seconds per batch, store request latency) is reported by hooks: the
// loader's Config.Decoded (the decode time it measures anyway), the store
// backend's (store.Hook: the requests it makes) and a wrapper of the chunk
// source.

// A metrics is the registry of one command; nil when --metrics is not set
// (then every wrapper returns what it was given).
type metrics struct {
	reg  *prometheus.Registry
	snap *snapshots

	decodeSeconds *prometheus.HistogramVec // codec, decoder
	storeRequests *prometheus.CounterVec   // backend, op
	storeErrors   *prometheus.CounterVec   // backend, op
	storeRetries  *prometheus.CounterVec   // backend
	storeSeconds  *prometheus.HistogramVec // backend, op
	storeBytes    *prometheus.CounterVec   // backend
	servedBytes   prometheus.Counter
	chunkErrors   prometheus.Counter
}

// newMetrics returns the registry (nil for addr ""): Go runtime and
// process metrics, and zfuse's.
func newMetrics(addr string) *metrics {
	if addr == "" {
		return nil
	}
	m := &metrics{reg: prometheus.NewRegistry(), snap: &snapshots{}}
	m.decodeSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "zfuse_decode_batch_seconds",
		Help:    "Time to decode one batch of chunks, by codec pipeline and decoder (cpu, gpu).",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 18), // 50µs .. 6.5s
	}, []string{"codec", "decoder"})
	m.storeRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zfuse_store_requests_total",
		Help: "Requests made of the store backend (read, read_range, stat, list, open): for http and s3 each request with its retries (what the backend answers from what it has seen, metadata documents and sizes, is none); for dir each file read, stat, listing or open.",
	}, []string{"backend", "op"})
	m.storeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zfuse_store_errors_total",
		Help: "Store requests that failed (after retries), not counting keys that do not exist.",
	}, []string{"backend", "op"})
	m.storeRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zfuse_store_retries_total",
		Help: "Store requests tried again after a 5xx, a timeout or a broken connection.",
	}, []string{"backend"})
	m.storeSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "zfuse_store_request_seconds",
		Help:    "Latency of store requests, waiting for a free connection and retries included.",
		Buckets: prometheus.ExponentialBuckets(100e-6, 2, 17), // 100µs .. 6.5s
	}, []string{"backend", "op"})
	m.storeBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zfuse_store_read_bytes_total",
		Help: "Bytes read from the store backend (stored, compressed values).",
	}, []string{"backend"})
	m.servedBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zfuse_served_bytes_total",
		Help: "Decoded chunk bytes handed to the serving path (each chunk once per read of it by the kernel; page-cache hits are not seen).",
	})
	m.chunkErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zfuse_chunk_errors_total",
		Help: "Chunk reads that failed (EIO: corrupt chunks, store errors), not counting missing chunks.",
	})
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.snap, m.decodeSeconds, m.storeRequests, m.storeErrors, m.storeRetries, m.storeSeconds, m.storeBytes,
		m.servedBytes, m.chunkErrors)
	return m
}

// serve listens on addr and serves /metrics until ctx ends. It fails at
// once when it cannot listen.
func (m *metrics) serve(ctx context.Context, addr string, log *slog.Logger) (stop func(), err error) {
	if m == nil {
		return func() {}, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics server stopped", "err", err)
		}
	}()
	log.Info("serving metrics", "url", "http://"+l.Addr().String()+"/metrics")
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}, nil
}

// watch has the collector report these snapshots; nil functions are
// left out.
func (m *metrics) watch(loader func() readahead.Stats, g *gpu.Decoder, disk *diskcache.Store) {
	if m == nil {
		return
	}
	m.snap.loader = loader
	if g != nil {
		m.snap.gpu = g.Stats
	}
	if disk != nil {
		m.snap.disk = disk.Stats
	}
}

// snapshots is the prometheus.Collector over the mount's own counters. Its
// functions are set before the mount is served and not changed after.
type snapshots struct {
	loader func() readahead.Stats
	gpu    func() gpu.Stats
	disk   func() diskcache.Stats
	memory func() memoryStats
	// The mount's requests, set once it is mounted (after the metrics
	// are served, hence atomic).
	serve atomic.Pointer[func() fusemount.ServeStats]
}

// served hooks the mount's request counts and serving path into the
// metrics, once it is mounted.
func (m *metrics) served(srv *fusemount.Server) {
	if m == nil {
		return
	}
	f := srv.Stats
	m.snap.serve.Store(&f)
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	dChunkReads      = desc("zfuse_chunk_reads_total", "Chunk reads by the serving path (first reads of a chunk by the kernel).")
	dHits            = desc("zfuse_cache_hits_total", "Reads served by a tier: decoded (chunks read before), readahead (prefetched, read for the first time), compressed (stored values kept in memory), disk (--cache-dir).", "tier")
	dMisses          = desc("zfuse_cache_misses_total", "Reads a tier did not serve (decoded: not in the decoded tier; disk: read from the remote store).", "tier")
	dStoreReads      = desc("zfuse_stored_value_reads_total", "Stored values (chunks, shard ranges) the loader read from the store, or from the disk cache in front of it.")
	dPrefetched      = desc("zfuse_prefetched_chunks_total", "Chunks decoded ahead of readers.")
	dPrefetchedB     = desc("zfuse_prefetched_bytes_total", "Decoded bytes of the chunks decoded ahead of readers.")
	dPrefetchUsed    = desc("zfuse_prefetch_used_chunks_total", "Prefetched chunks a reader took.")
	dPrefetchUsedB   = desc("zfuse_prefetch_used_bytes_total", "Decoded bytes of the prefetched chunks a reader took.")
	dPrefetchWasted  = desc("zfuse_prefetch_wasted_chunks_total", "Prefetched chunks that expired unread.")
	dPrefetchWastedB = desc("zfuse_prefetch_wasted_bytes_total", "Decoded bytes of the prefetched chunks that expired unread.")
	dPrefetchWaits   = desc("zfuse_prefetch_waits_total", "Reads that found their prefetched chunk still loading or decoding.")
	dPrefetchErrors  = desc("zfuse_prefetch_errors_total", "Prefetched chunks that failed to load or decode.")
	dDecodedChunks   = desc("zfuse_decoded_chunks_total", "Chunks decoded, by codec pipeline.", "codec")
	dDecodedBytes    = desc("zfuse_decoded_bytes_total", "Decoded bytes, by codec pipeline.", "codec")
	dDecodeErrors    = desc("zfuse_decode_errors_total", "Chunks that failed to decode, by codec pipeline.", "codec")
	dDecodeSeconds   = desc("zfuse_decode_seconds_total", "Wall time spent decoding, by codec pipeline.", "codec")
	dHeld            = desc("zfuse_cache_bytes", "Bytes held now, by tier (decoded, compressed, readahead, disk).", "tier")
	dBudget          = desc("zfuse_cache_budget_bytes", "The budget of each tier.", "tier")
	dPeak            = desc("zfuse_readahead_peak_bytes", "The most bytes the readahead tier has held.")
	dArrays          = desc("zfuse_readahead_arrays", "Per-array state the loader keeps, by table: decoders (arrays with a batch decoder), name_orders (chunk orders for readers in listing order). Bounded under --refresh.", "table")
	dDiskEntries     = desc("zfuse_disk_cache_entries", "Values held in the disk cache.")
	dDiskValidations = desc("zfuse_disk_cache_validations_total", "Values on disk validated against the store by a conditional request, by result (unchanged, changed).", "result")
	dDiskDropped     = desc("zfuse_disk_cache_dropped_total", "Disk cache files that failed validation (torn, corrupt) and were removed.")
	dDiskEvicted     = desc("zfuse_disk_cache_evictions_total", "Values removed from the disk cache to stay within its size.")
	dDiskWriteErrors = desc("zfuse_disk_cache_write_errors_total", "Values that could not be written to the disk cache.")
	dGPUBatches      = desc("zfuse_gpu_batches_total", "Batches decoded with the GPU.")
	dGPUChunks       = desc("zfuse_gpu_chunks_total", "Chunks of GPU batches, by where they were decoded (gpu; cpu: too large for a GPU slice, or after a device failure).", "decoder")
	dGPUBytes        = desc("zfuse_gpu_decoded_bytes_total", "Decoded bytes written by the GPU.")
	dGPUKernel       = desc("zfuse_gpu_kernel_seconds_total", "Device time in GPU kernels.")
	dGPUDevice       = desc("zfuse_gpu_device_seconds_total", "Device time from the first upload to the last download of each slice.")
	dServing         = desc("zfuse_serving_path_info", "The serving path the mount uses (--serving): 1 for it.", "path")
	dRequests        = desc("zfuse_fuse_requests_total", "FUSE requests that reached the daemon, by op (lookup, open, read, release; lookups include READDIRPLUS entries).", "op")
	dReadBytes       = desc("zfuse_fuse_read_bytes_total", "Bytes the daemon returned to READ requests (passthrough and the page cache serve the rest).")
	dOpenFiles       = desc("zfuse_open_chunk_files", "Chunk files open with a handle of the daemon's (passthrough: each holds its memfd).")
	dMemfds          = desc("zfuse_memfds", "Memfds holding decoded chunks (passthrough), in the tiers or held open.")
	dMemfdBytes      = desc("zfuse_memfd_bytes", "Bytes of those memfds: memory outside the heap.")
	dMemfdsFree      = desc("zfuse_memfds_free_bytes", "Bytes of chunk files (passthrough) kept to hold other chunks once nobody holds theirs.")
	dMemfdsReused    = desc("zfuse_memfds_reused_total", "Chunk files (passthrough) used again for another chunk: no new pages.")
	dPushedHeld      = desc("zfuse_pushed_unread_bytes", "Bytes pushed into the page cache whose reads are not known yet; counted in the readahead budget.")
	dChunkReadSecs   = desc("zfuse_fuse_chunk_read_seconds", "Service time of READ requests for chunk files: from the daemon's handler starting to its reply.")
	dPushed          = desc("zfuse_pushed_chunks_total", "Prefetched chunks pushed into the kernel's page cache before their first read (no-open, open): READ round trips avoided.")
	dPushedB         = desc("zfuse_pushed_bytes_total", "Bytes of the chunks pushed into the page cache.")
	dPushRefused     = desc("zfuse_push_refused_total", "Prefetched chunks not pushed, by why: unknown (the kernel did not know the file yet), kernel (it refused the pages).", "why")
	dPlaced          = desc("zfuse_pushed_chunks_read_total", "Pushed chunks by what became of them: read (the reader read past them), reread (read through the daemon after all: the kernel dropped the pages), expired (no sign of a read within the TTL).", "outcome")
	dMemLimit        = desc("zfuse_memory_limit_bytes", "The memory limit the budgets fit, by where it comes from: cgroup v1, cgroup v2, machine (its memory), flag (--memory-limit).", "from")
	dMemInUse        = desc("zfuse_memory_in_use_bytes", "Memory in use under the limit found (the cgroup's, with every process in it; file pages that can be reclaimed are not counted), as last read.")
	dSoftLimit       = desc("zfuse_memory_soft_limit_bytes", "The Go runtime's soft memory limit (GOMEMLIMIT).")
	dBudgetScale     = desc("zfuse_memory_budget_scale", "The share of the planned budgets in force: 1, or less while memory pressure sheds the caches.")
	dSheds           = desc("zfuse_memory_sheds_total", "Times memory pressure lowered the budgets.")
)

func (s *snapshots) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dChunkReads, dHits, dMisses, dStoreReads, dPrefetched, dPrefetchedB,
		dPrefetchUsed, dPrefetchUsedB, dPrefetchWasted, dPrefetchWastedB, dPrefetchWaits, dPrefetchErrors,
		dDecodedChunks, dDecodedBytes, dDecodeErrors, dDecodeSeconds, dHeld, dBudget, dPeak, dArrays,
		dDiskEntries, dDiskValidations, dDiskDropped, dDiskEvicted, dDiskWriteErrors,
		dGPUBatches, dGPUChunks, dGPUBytes, dGPUKernel, dGPUDevice,
		dServing, dRequests, dReadBytes, dOpenFiles, dMemfds, dMemfdBytes, dPushed, dPushedB, dPushRefused, dPlaced, dChunkReadSecs, dMemfdsFree, dMemfdsReused, dPushedHeld,
		dMemLimit, dMemInUse, dSoftLimit, dBudgetScale, dSheds} {
		ch <- d
	}
}

func (s *snapshots) Collect(ch chan<- prometheus.Metric) {
	e := emitter{ch}
	if s.loader != nil {
		collectLoader(e, s.loader())
	}
	if f := s.serve.Load(); f != nil {
		collectServe(e, (*f)())
	}
	if s.disk != nil {
		collectDisk(e, s.disk())
	}
	if s.memory != nil {
		collectMemory(e, s.memory())
	}
	if s.gpu != nil {
		collectGPU(e, s.gpu())
	}
}

// emitter sends constant metrics on a Collect channel.
type emitter struct{ ch chan<- prometheus.Metric }

func (e emitter) counter(d *prometheus.Desc, v float64, labels ...string) {
	e.ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

func (e emitter) gauge(d *prometheus.Desc, v float64, labels ...string) {
	e.ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

// collectLoader sends the loader's reads, hits, prefetches, decodes, tiers and memfds.
func collectLoader(e emitter, st readahead.Stats) {
	e.counter(dChunkReads, float64(st.Reads))
	e.counter(dHits, float64(st.DecodedHits), "decoded")
	e.counter(dMisses, float64(st.DecodedMisses), "decoded")
	e.counter(dHits, float64(st.PrefetchUsed), "readahead")
	e.counter(dHits, float64(st.CompressedHits), "compressed")
	e.counter(dStoreReads, float64(st.StoreReads))
	e.counter(dPrefetched, float64(st.Prefetched))
	e.counter(dPrefetchedB, float64(st.PrefetchedBytes))
	e.counter(dPrefetchUsed, float64(st.PrefetchUsed))
	e.counter(dPrefetchUsedB, float64(st.PrefetchUsedBytes))
	e.counter(dPrefetchWasted, float64(st.PrefetchWasted))
	e.counter(dPrefetchWastedB, float64(st.PrefetchWastedBytes))
	e.counter(dPrefetchWaits, float64(st.PrefetchWaits))
	e.counter(dPrefetchErrors, float64(st.PrefetchErrors))
	for c, d := range st.Decode {
		e.counter(dDecodedChunks, float64(d.Chunks), c)
		e.counter(dDecodedBytes, float64(d.Bytes), c)
		e.counter(dDecodeErrors, float64(d.Errors), c)
		e.counter(dDecodeSeconds, d.Time.Seconds(), c)
	}
	for _, t := range []struct {
		tier      string
		used, max int64
	}{{"decoded", st.DecodedUsed, st.DecodedBudget}, {"compressed", st.CompressedUsed, st.CompressedBudget}, {"readahead", st.ReadaheadUsed, st.ReadaheadBudget}} {
		e.gauge(dHeld, float64(t.used), t.tier)
		e.gauge(dBudget, float64(t.max), t.tier)
	}
	e.gauge(dPeak, float64(st.ReadaheadPeak))
	e.gauge(dArrays, float64(st.ArrayDecoders), "decoders")
	e.gauge(dArrays, float64(st.NameOrders), "name_orders")
	e.gauge(dMemfds, float64(st.Memfds))
	e.gauge(dMemfdBytes, float64(st.MemfdBytes))
	e.gauge(dMemfdsFree, float64(st.MemfdFreeBytes))
	e.counter(dMemfdsReused, float64(st.MemfdsReused))
	e.gauge(dPushedHeld, float64(st.PlacedHeld))
	e.counter(dPlaced, float64(st.PlacedRead), "read")
	e.counter(dPlaced, float64(st.PlacedReread), "reread")
	e.counter(dPlaced, float64(st.PlacedExpired), "expired")
}

// collectServe sends the FUSE server's requests, read latency and page pushes.
func collectServe(e emitter, st fusemount.ServeStats) {
	e.gauge(dServing, 1, st.Serving)
	e.counter(dRequests, float64(st.Lookups), "lookup")
	e.counter(dRequests, float64(st.Opens), "open")
	e.counter(dRequests, float64(st.Reads), "read")
	e.counter(dRequests, float64(st.Releases), "release")
	e.counter(dReadBytes, float64(st.ReadBytes))
	e.gauge(dOpenFiles, float64(st.OpenFiles))
	lat := st.ChunkReadTimes
	buckets := make(map[float64]uint64, len(lat.Bounds))
	for i, b := range lat.Bounds {
		buckets[b] = lat.Counts[i]
	}
	e.ch <- prometheus.MustNewConstHistogram(dChunkReadSecs, lat.Count, lat.Sum, buckets)
	e.counter(dPushed, float64(st.Pushed))
	e.counter(dPushedB, float64(st.PushedBytes))
	e.counter(dPushRefused, float64(st.PushRefused), "kernel")
	e.counter(dPushRefused, float64(st.PushUnknown), "unknown")
}

// collectDisk sends the disk cache's hits, size and validations.
func collectDisk(e emitter, d diskcache.Stats) {
	e.counter(dHits, float64(d.Hits+d.Revalidated), "disk")
	e.counter(dMisses, float64(d.Misses+d.Changed), "disk")
	e.gauge(dHeld, float64(d.Used), "disk")
	e.gauge(dBudget, float64(d.Max), "disk")
	e.gauge(dDiskEntries, float64(d.Entries))
	e.counter(dDiskValidations, float64(d.Revalidated), "unchanged")
	e.counter(dDiskValidations, float64(d.Changed), "changed")
	e.counter(dDiskDropped, float64(d.Dropped))
	e.counter(dDiskEvicted, float64(d.Evicted))
	e.counter(dDiskWriteErrors, float64(d.WriteErrors))
}

// collectMemory sends the memory limit, use and shedding.
func collectMemory(e emitter, st memoryStats) {
	if st.Limit > 0 {
		e.gauge(dMemLimit, float64(st.Limit), st.From)
	}
	e.gauge(dMemInUse, float64(st.InUse))
	e.gauge(dSoftLimit, float64(st.SoftLimit))
	e.gauge(dBudgetScale, st.Scale)
	e.counter(dSheds, float64(st.Sheds))
}

// collectGPU sends the GPU decoder's batches and times.
func collectGPU(e emitter, g gpu.Stats) {
	e.counter(dGPUBatches, float64(g.Batches))
	e.counter(dGPUChunks, float64(g.GPUJobs), "gpu")
	e.counter(dGPUChunks, float64(g.CPUJobs), "cpu")
	e.counter(dGPUBytes, float64(g.OutBytes))
	e.counter(dGPUKernel, g.Kernel.Seconds())
	e.counter(dGPUDevice, g.Device.Seconds())
}

// decoded returns the loader's Config.Decoded that observes each batch's
// decode time as zfuse_decode_batch_seconds{codec, decoder}, decoder as
// the array's route says (cpu, gpu); nil without --metrics.
func (m *metrics) decoded() func(*zarr.Array, readahead.Route, time.Duration) {
	if m == nil {
		return nil
	}
	return func(a *zarr.Array, r readahead.Route, took time.Duration) {
		m.decodeSeconds.WithLabelValues(a.Codecs, r.Decoder).Observe(took.Seconds())
	}
}

// backoff returns b counting retries for backend.
func (m *metrics) backoff(backend string) remote.Backoff {
	if m == nil {
		return remote.Backoff{}
	}
	c := m.storeRetries.WithLabelValues(backend)
	return remote.Backoff{OnRetry: func(error) { c.Inc() }}
}

// storeHook returns the hook that counts and times the requests of the
// store backend (store.Hook): the requests it makes, not the calls of it.
func (m *metrics) storeHook(backend string) store.Hook {
	if m == nil {
		return nil
	}
	bytes := m.storeBytes.WithLabelValues(backend)
	return func(op, key string, n int64, d time.Duration, err error) {
		m.storeRequests.WithLabelValues(backend, op).Inc()
		m.storeSeconds.WithLabelValues(backend, op).Observe(d.Seconds())
		if n > 0 {
			bytes.Add(float64(n))
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, store.ErrNotModified) && !errors.Is(err, context.Canceled) {
			m.storeErrors.WithLabelValues(backend, op).Inc()
		}
	}
}

// chunks wraps the chunk source of the tree to count bytes served and
// failed reads.
func (m *metrics) chunks(c tree.Chunks) tree.Chunks {
	if m == nil {
		return c
	}
	return countedChunks{c, m}
}

// countedChunks counts the bytes the mount serves and the chunks that fail,
// as the tree asks for them: reads for the page cache, and files opened for the
// kernel to read itself (passthrough), counted whole.
type countedChunks struct {
	tree.Chunks
	m *metrics
}

func (c countedChunks) ReadAt(ctx context.Context, r readahead.Ref, p []byte, off int64) (int, error) {
	n, err := c.Chunks.ReadAt(ctx, r, p, off)
	c.count(int64(n), err)
	return n, err
}

func (c countedChunks) ReadPieces(ctx context.Context, r readahead.Ref, p []byte, ps []zarr.Piece) (int, error) {
	n, err := c.Chunks.ReadPieces(ctx, r, p, ps)
	c.count(int64(n), err)
	return n, err
}

func (c countedChunks) Open(ctx context.Context, r readahead.Ref) (*readahead.File, error) {
	f, err := c.Chunks.Open(ctx, r)
	var n int64
	if err == nil {
		n = f.Size()
	}
	c.count(n, err)
	return f, err
}

func (c countedChunks) count(n int64, err error) {
	switch {
	case err == nil || errors.Is(err, io.EOF):
		c.m.servedBytes.Add(float64(n))
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, context.Canceled):
		c.m.chunkErrors.Inc()
	}
}

// watchMemory has the collector report the memory limit, the memory in
// use under it and the pressure watcher's shedding (pressure.go).
func (m *metrics) watchMemory(f func() memoryStats) {
	if m != nil {
		m.snap.memory = f
	}
}
