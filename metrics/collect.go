package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/gpu"
	"github.com/zfuse/zfuse/internal/memlimit"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store/diskcache"
)

// snapshots is the prometheus.Collector over the mount's own counters. Its
// functions are set before the mount is served and not changed after.
type snapshots struct {
	loader func() readahead.Stats
	gpu    func() gpu.Stats
	disk   func() diskcache.Stats
	memory func() memlimit.Stats
	// The mount's requests, set once it is mounted (after the metrics
	// are served, hence atomic).
	serve atomic.Pointer[func() fusemount.ServeStats]
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
	dOpRequests      = desc("zfuse_fuse_opcode_requests_total", "FUSE requests that reached the file system, by the opcode the kernel sent (LOOKUP, GETATTR, IOCTL, READ, ...), on either transport: what a reader costs the daemon; INIT and INTERRUPT, which go-fuse answers itself, are not counted.", "op")
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
		dServing, dRequests, dOpRequests, dReadBytes, dOpenFiles, dMemfds, dMemfdBytes, dPushed, dPushedB, dPushRefused, dPlaced, dChunkReadSecs, dMemfdsFree, dMemfdsReused, dPushedHeld,
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
	for op, n := range st.Requests {
		e.counter(dOpRequests, float64(n), op)
	}
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
func collectMemory(e emitter, st memlimit.Stats) {
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
