// Package metrics is zfuse mount --metrics: a Prometheus registry of the
// mount's counters, served at http://ADDR/metrics.
//
// The one fact to know: nothing is read through it. Most metrics are
// snapshots of counters the mount keeps anyway (readahead.Stats,
// fusemount.ServeStats, the GPU decoder's and the disk cache's Stats),
// read at each scrape by a prometheus.Collector (collect.go); what needs
// an observation per event is reported by hooks the Registry hands to the
// places that see the events: the loader's Config.Decoded (the decode
// time it measures anyway) and Config.Served (each chunk read for a
// reader), the store backend's store.Hook (the requests it makes) and
// its backoff's OnRetry.
//
// A nil *Registry is a mount without --metrics: every method does
// nothing, and every hook it returns is nil.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/gpu"
	"github.com/zfuse/zfuse/internal/memlimit"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/store/diskcache"
	"github.com/zfuse/zfuse/zarr"
)

// A Registry holds the metrics of one mount. Its hooks are safe for
// concurrent use; Watch, WatchMemory and Served are called while the mount
// starts.
type Registry struct {
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

// New returns a Registry with the Go runtime's and the process's metrics,
// and zfuse's.
func New() *Registry {
	r := &Registry{reg: prometheus.NewRegistry(), snap: &snapshots{}}
	r.decodeSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "zfuse_decode_batch_seconds",
		Help:    "Time to decode one batch of chunks, by codec pipeline and decoder (cpu, gpu).",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 18), // 50µs .. 6.5s
	}, []string{"codec", "decoder"})
	r.storeRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zfuse_store_requests_total",
		Help: "Requests made of the store backend (read, read_range, stat, list, open): for http and s3 each request with its retries (what the backend answers from what it has seen, metadata documents and sizes, is none); for dir each file read, stat, listing or open.",
	}, []string{"backend", "op"})
	r.storeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zfuse_store_errors_total",
		Help: "Store requests that failed (after retries), not counting keys that do not exist.",
	}, []string{"backend", "op"})
	r.storeRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zfuse_store_retries_total",
		Help: "Store requests tried again after a 5xx, a timeout or a broken connection.",
	}, []string{"backend"})
	r.storeSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "zfuse_store_request_seconds",
		Help:    "Latency of store requests, waiting for a free connection and retries included.",
		Buckets: prometheus.ExponentialBuckets(100e-6, 2, 17), // 100µs .. 6.5s
	}, []string{"backend", "op"})
	r.storeBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zfuse_store_read_bytes_total",
		Help: "Bytes read from the store backend (stored, compressed values).",
	}, []string{"backend"})
	r.servedBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zfuse_served_bytes_total",
		Help: "Decoded chunk bytes handed to the serving path (each chunk once per read of it by the kernel; page-cache hits are not seen).",
	})
	r.chunkErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zfuse_chunk_errors_total",
		Help: "Chunk reads that failed (EIO: corrupt chunks, store errors), not counting missing chunks.",
	})
	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		r.snap, r.decodeSeconds, r.storeRequests, r.storeErrors, r.storeRetries, r.storeSeconds, r.storeBytes,
		r.servedBytes, r.chunkErrors)
	return r
}

// Serve listens on addr and serves /metrics until stop is called, which
// waits up to 5 s for scrapes in flight (ctx's values are kept, not its
// end). It fails at once when it cannot listen.
func (r *Registry) Serve(ctx context.Context, addr string, log *slog.Logger) (stop func(), err error) {
	if r == nil {
		return func() {}, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}))
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

// Watch has the collector report these snapshots at each scrape: the
// loader's counters, and the GPU decoder's and the disk cache's where
// they are not nil.
func (r *Registry) Watch(loader func() readahead.Stats, g *gpu.Decoder, disk *diskcache.Store) {
	if r == nil {
		return
	}
	r.snap.loader = loader
	if g != nil {
		r.snap.gpu = g.Stats
	}
	if disk != nil {
		r.snap.disk = disk.Stats
	}
}

// WatchMemory has the collector report the memory limit, the memory in
// use under it and the shedding of the memory watcher (memlimit.Watcher).
func (r *Registry) WatchMemory(f func() memlimit.Stats) {
	if r != nil {
		r.snap.memory = f
	}
}

// Served has the collector report the mount's requests and serving path,
// once it is mounted (the metrics are served before).
func (r *Registry) Served(srv *fusemount.Server) {
	if r == nil {
		return
	}
	f := srv.Stats
	r.snap.serve.Store(&f)
}

// Decoded returns the loader's Config.Decoded: each batch's decode time
// as zfuse_decode_batch_seconds{codec, decoder}, decoder as the array's
// route says (cpu, gpu).
func (r *Registry) Decoded() func(*zarr.Array, readahead.Route, time.Duration) {
	if r == nil {
		return nil
	}
	return func(a *zarr.Array, rt readahead.Route, took time.Duration) {
		r.decodeSeconds.WithLabelValues(a.Codecs, rt.Decoder).Observe(took.Seconds())
	}
}

// Retried returns the OnRetry of the backoff of backend (http, s3): it
// counts each retry.
func (r *Registry) Retried(backend string) func(error) {
	if r == nil {
		return nil
	}
	c := r.storeRetries.WithLabelValues(backend)
	return func(error) { c.Inc() }
}

// StoreHook returns the hook that counts and times the requests the store
// backend makes (store.Hook), not the calls of it.
func (r *Registry) StoreHook(backend string) store.Hook {
	if r == nil {
		return nil
	}
	bytes := r.storeBytes.WithLabelValues(backend)
	return func(op, key string, n int64, d time.Duration, err error) {
		r.storeRequests.WithLabelValues(backend, op).Inc()
		r.storeSeconds.WithLabelValues(backend, op).Observe(d.Seconds())
		if n > 0 {
			bytes.Add(float64(n))
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, store.ErrNotModified) && !errors.Is(err, context.Canceled) {
			r.storeErrors.WithLabelValues(backend, op).Inc()
		}
	}
}

// ChunkRead returns the loader's Config.Served: it counts the bytes the
// mount serves (reads for the page cache, and files opened for the kernel
// to read itself, passthrough, counted whole) and the reads that fail,
// missing chunks and interrupted reads aside.
func (r *Registry) ChunkRead() func(n int64, err error) {
	if r == nil {
		return nil
	}
	return func(n int64, err error) {
		switch {
		case err == nil || errors.Is(err, io.EOF):
			r.servedBytes.Add(float64(n))
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, context.Canceled):
			r.chunkErrors.Inc()
		}
	}
}
