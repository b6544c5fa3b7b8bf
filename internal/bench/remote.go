package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"
)

// This file is zfuse bench's remote reader, zarr-http: zarr-python reads
// the compressed stores plane by plane from an HTTP server of the bench's
// own that waits --latency before answering each request, as a store
// across a network does. It reads them over HTTP itself (zarr-python's
// FSStore: fsspec's HTTPFileSystem on aiohttp, the chunks of a plane
// fetched concurrently, then decoded by numcodecs), and through a fresh
// zfuse mount of the URL per serving path.

// A benchHTTP serves the directory of the stores over HTTP on 127.0.0.1:
// files with byte ranges (net/http's FileServer), each answer after the
// latency. It is safe for concurrent use.
type benchHTTP struct {
	url      string // http://127.0.0.1:PORT: the directory at its root
	srv      *http.Server
	served   chan struct{} // closed when Serve returns
	requests atomic.Int64  // answered (or given up) so far
}

// startHTTP serves dir with latency before each answer.
func startHTTP(dir string, latency time.Duration) (*benchHTTP, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: the HTTP server for %s: %w", readRemote, err)
	}
	h := &benchHTTP{url: "http://" + ln.Addr().String(), served: make(chan struct{})}
	h.srv = &http.Server{Handler: withLatency(latency, http.FileServer(http.Dir(dir)), &h.requests)}
	go func() { h.srv.Serve(ln); close(h.served) }()
	return h, nil
}

// withLatency answers each request with next after waiting d, and counts
// the requests in n once answered (or given up by the client).
func withLatency(d time.Duration, next http.Handler, n *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer n.Add(1)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			next.ServeHTTP(w, r)
		case <-r.Context().Done(): // the client went away
		}
	})
}

// close stops the server.
func (h *benchHTTP) close() error {
	err := h.srv.Close()
	<-h.served
	return err
}

// storeURL is the URL of the store of codec in set.
func (h *benchHTTP) storeURL(set *storeSet, codec string) string {
	return h.url + "/" + set.name + "/" + codec + ".zarr"
}

// remote reads set's compressed stores over HTTP with zarr-python, then
// through a mount of each store's URL per serving path.
func (b *bencher) remote(ctx context.Context, set *storeSet) error {
	if b.http == nil {
		return errors.New("bench: no HTTP server") // not reached: run starts it
	}
	for _, codec := range b.codecs {
		if err := WarmDir(filepath.Join(set.dir, codec+".zarr")); err != nil {
			return err
		}
		before := b.http.requests.Load()
		epochs, err := b.python3(ctx, nil, "zarr", b.http.storeURL(set, codec), strconv.Itoa(b.epochs))
		if err != nil {
			return err
		}
		b.res.Add(cell{set.name, codec, readRemote, viaHTTP, "", ""}, epochs)
		b.say("%s %s http %s: %s; %d requests", set.name, readRemote, codec, epochString(epochs), b.http.requests.Load()-before)
		for _, serving := range b.servings {
			for _, transport := range b.transports {
				if err := b.viaMount(ctx, set, readRemote, codec, serving, transport); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
