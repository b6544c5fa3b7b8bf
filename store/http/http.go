// Package httpstore reads a Zarr store from an HTTP(S) server with range
// requests: each key is a URL under a base URL.
//
// The one fact to know: HTTP cannot list directories. The tree comes from
// metadata: consolidated metadata (.zmetadata for v2, a consolidated
// zarr.json for v3) at the base URL, metadata documents found there and at
// the paths of Config.Hints, and directories that servers reveal by
// redirecting "dir" to "dir/" (nginx, Apache and Go's FileServer do). So:
//
//   - List returns directories and metadata documents, never chunk keys:
//     ls of an array directory shows its .zarray (or zarr.json) and no
//     chunks. Chunk files are found by name: Stat asks the server (HEAD),
//     and readers open chunk files by name, which is all zarr-python and
//     xarray do.
//   - Stat of a directory of chunk keys ("c", "c/0" of a v3 array, "0" of a
//     v2 array with dimension_separator "/") needs no request.
//   - Every response is remembered (size, missing, ETag): a Stat after a
//     read, or during one (readahead fetches the next chunks before the
//     kernel looks their files up), costs no request. See remote.Facts.
//
// Errors: 404 and 410 satisfy errors.Is(err, fs.ErrNotExist); 401 and 403
// satisfy errors.Is(err, fs.ErrPermission); 5xx, 408, 429 (after at least
// its Retry-After), a server silent for Config.Timeout, broken connections
// and bodies, and answers that do not answer the request
// (remote.ErrBadResponse: another range, a missing Content-Range, a body
// longer or shorter than the range) are retried with exponential backoff a
// bounded number of times, then returned. A value whose ETag (else
// Last-Modified) or size differs from the first response about it is
// refused (remote.ErrChanged), so bytes of two versions are never mixed;
// with Config.Refresh, for one interval only (remote.Facts.Refresh).
package httpstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/store/remote"
)

// DefaultTimeout is Config.Timeout's default: servers answer in well under
// a second, or are gone.
const DefaultTimeout = 15 * time.Second

// Config configures a Store.
type Config struct {
	URL string // base URL: the store root; http or https
	// Hints are paths (relative to URL) of arrays or groups to look for
	// metadata at, for servers without consolidated metadata.
	Hints []string
	// MaxInFlight bounds the requests in flight; 0 means 128. Idle
	// connections kept per host are at least as many.
	MaxInFlight int
	Backoff     remote.Backoff // retries; the zero value uses its defaults
	// StartBackoff is how patiently Open reads the metadata documents
	// at the root and at each hint, which decide what the store is:
	// rounds of reads (each retried as Backoff says) while they fail
	// with a remote.Transient error, each logged; zero fields take
	// remote.Start's values.
	StartBackoff remote.Backoff
	// Timeout is how long a server may stay silent, before its response
	// headers or within a body, before the attempt is given up (and
	// retried); 0 means 15s. See remote.Watchdog.
	Timeout time.Duration
	// Transport, if set, replaces the default one (tests).
	Transport http.RoundTripper
	Log       *slog.Logger // nil means discard
	// Hook, if set, is told of each request (store.Hook): each GET and
	// HEAD with its retries, Open's too; not of what the Store answers
	// from what it has seen.
	Hook store.Hook
	// Refresh, when positive, is how long a metadata document read, and
	// what a response said about a key, are believed: after it they are
	// read (or asked about) again, and a new version is served as such
	// (remote.Facts.Refresh). 0: everything is read once, and the first
	// version seen of each value is served for the life of the Store.
	Refresh time.Duration
}

// A Store reads keys from an HTTP server. It is safe for concurrent use.
type Store struct {
	// Immutable after Open.
	base    *url.URL
	client  *http.Client
	limit   remote.Limit
	backoff remote.Backoff
	hook    store.Hook // Config.Hook
	log     *slog.Logger
	cat     *catalog
	facts   *remote.Facts
	refresh time.Duration // Config.Refresh

	noRange sync.Once // warns once that the server ignores Range

	mu   sync.Mutex     // guards docs
	docs map[string]doc // metadata documents read
}

// A doc is a metadata document as read.
type doc struct {
	b  []byte    // shared, never modified
	at time.Time // when it was read
}

var (
	_ store.Store     = (*Store)(nil)
	_ store.Versioner = (*Store)(nil)
)

// Open returns a Store for the server at cfg.URL. It reads the metadata at
// the root and at each hint (patiently: cfg.StartBackoff), and fails if
// the server cannot be reached or no metadata is found.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	u, err := parseBase(cfg.URL)
	if err != nil {
		return nil, err
	}
	inflight := cfg.MaxInFlight
	if inflight <= 0 {
		inflight = 128
	}
	s := &Store{
		base:    u,
		client:  newClient(cfg, inflight),
		limit:   remote.NewLimit(inflight),
		backoff: cfg.Backoff,
		hook:    cfg.Hook,
		log:     cfg.Log,
		cat:     newCatalog(),
		refresh: max(cfg.Refresh, 0),
		docs:    map[string]doc{},
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.facts = remote.NewFacts(0, s.log)
	s.facts.Refresh(s.refresh)
	var found bool
	err = remote.Patiently(ctx, cfg.StartBackoff, s.log, s.Name(), func(ctx context.Context) (err error) {
		found, err = s.probe(ctx, ".")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("httpstore: %s: %w", s.Name(), err)
	}
	f, err := s.probeHints(ctx, cfg.Hints, cfg.StartBackoff)
	if err != nil {
		return nil, err
	}
	if !found && !f {
		return nil, fmt.Errorf("httpstore: %s: no Zarr metadata at the root (.zmetadata, zarr.json, .zgroup or .zarray); HTTP cannot list directories, so name the arrays or groups to mount with --array PATH", s.Name())
	}
	s.log.InfoContext(ctx, "http store opened", "url", s.Name())
	return s, nil
}

// parseBase parses the base URL raw, refusing anything but an http(s) URL
// with a host, and drops a trailing "/" from its path.
func parseBase(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("httpstore: %q is not an http(s) URL", redact(raw))
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// newClient returns the HTTP client of cfg's transport (by default one that
// keeps a connection per request in flight), each attempt bounded by the
// watchdog's silence timeout.
func newClient(cfg Config, inflight int) *http.Client {
	rt := cfg.Transport
	if rt == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 2 * inflight
		t.MaxIdleConnsPerHost = inflight // reuse a connection per request in flight
		t.DisableCompression = true      // ranges of the stored bytes, not of a gzip stream
		rt = t
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &http.Client{
		Transport: remote.Watchdog{Next: rt.RoundTrip, Silence: timeout},
		// A redirect from "key" to "key/" says key is a directory: stop
		// there. Follow any other.
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			if req.URL.Path == via[len(via)-1].URL.Path+"/" {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
}

// probeHints probes each hint and every directory above it, warning of a
// hint without metadata; it reports whether any of them holds metadata.
func (s *Store) probeHints(ctx context.Context, hints []string, patience remote.Backoff) (bool, error) {
	found := false
	for _, h := range hints {
		h = strings.Trim(path.Clean("/"+h), "/")
		if h == "" {
			continue
		}
		if !fs.ValidPath(h) {
			return false, fmt.Errorf("httpstore: hint %q: %w", h, store.ErrOutside)
		}
		for d := h; d != "."; d = path.Dir(d) {
			var f bool
			err := remote.Patiently(ctx, patience, s.log, s.Name()+"/"+d, func(ctx context.Context) (err error) {
				f, err = s.probe(ctx, d)
				return err
			})
			if err != nil {
				return false, fmt.Errorf("httpstore: %s: %w", s.Name(), err)
			}
			if d == h && !f {
				s.log.WarnContext(ctx, "no metadata found at hint", "key", h)
			}
			found = found || f
		}
	}
	return found, nil
}

// Name returns the base URL without credentials or query (for logs and the
// mount table).
func (s *Store) Name() string {
	u := *s.base
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// redact removes credentials and the query from a URL string.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// Close releases idle connections.
func (s *Store) Close() error {
	s.client.CloseIdleConnections()
	return nil
}

// probe reads the metadata documents of dir and records what it finds; it
// reports whether dir holds any.
func (s *Store) probe(ctx context.Context, dir string) (bool, error) {
	s.cat.addDir(dir)
	docs := make([][]byte, len(metaNames))
	errs := make([]error, len(metaNames))
	var wg sync.WaitGroup
	for i, name := range metaNames {
		wg.Go(func() { docs[i], errs[i] = s.doc(ctx, remote.Join(dir, name)) })
	}
	wg.Wait()
	found := false
	for i, err := range errs {
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, err
		}
		found = true
		key := remote.Join(dir, metaNames[i])
		switch metaNames[i] {
		case ".zmetadata":
			if err := s.cat.consolidatedV2(key, docs[i]); err != nil {
				s.log.WarnContext(ctx, "consolidated metadata not used", "key", key, "err", err)
			}
		case "zarr.json":
			s.cat.consolidatedV3(key, docs[i])
		}
	}
	s.cat.setComplete(dir)
	return found, nil
}

// doc returns the metadata document key: from memory, or read once and
// kept (with Config.Refresh, read again once it is older than that). It
// records what it learns in the catalog. The slice is shared.
func (s *Store) doc(ctx context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	d, ok := s.docs[key]
	s.mu.Unlock()
	if ok && (s.refresh == 0 || time.Since(d.at) < s.refresh) {
		return d.b, nil
	}
	if exists, known := s.cat.meta(key); known && !exists {
		return nil, &fs.PathError{Op: "http", Path: key, Err: fs.ErrNotExist}
	}
	b, err := s.get(ctx, key, 0, -1)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if old, ok := s.docs[key]; ok && old.at.After(d.at) { // read meanwhile
		b = old.b
	} else {
		s.docs[key] = doc{b: b, at: time.Now()}
	}
	s.mu.Unlock()
	s.cat.addFile(key)
	if base := path.Base(key); base == ".zarray" || base == "zarr.json" {
		if l, ok := parseLayout(b); ok {
			s.cat.setArray(path.Dir(key), l)
		}
	}
	return b, nil
}

// ReadKey returns key's value. The caller owns the slice.
func (s *Store) ReadKey(ctx context.Context, key string) ([]byte, error) {
	if err := remote.CheckKey(ctx, "read", key); err != nil {
		return nil, err
	}
	if isMeta(key) {
		b, err := s.doc(ctx, key)
		return bytes.Clone(b), err
	}
	return s.get(ctx, key, 0, -1)
}

// ReadKeyRange returns the bytes of key's value in [off, off+n), fewer only
// where the value ends, with one range request. The caller owns the slice.
func (s *Store) ReadKeyRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := remote.CheckKey(ctx, "read", key); err != nil {
		return nil, err
	}
	if err := store.CheckRange(key, off, n); err != nil {
		return nil, err
	}
	if isMeta(key) {
		b, err := s.doc(ctx, key)
		if err != nil {
			return nil, err
		}
		return bytes.Clone(b[min(off, int64(len(b))):min(off+n, int64(len(b)))]), nil
	}
	if n == 0 {
		_, err := s.Stat(ctx, key)
		return []byte{}, err
	}
	return s.get(ctx, key, off, n)
}

// ReadKeyVersion returns [off, off+n) of key's value (all of it when n < 0)
// and its version (the ETag, else Last-Modified), with one GET made
// conditional on have (see store.Versioner). Metadata documents, read once
// and kept, need no request. The caller owns the slice.
func (s *Store) ReadKeyVersion(ctx context.Context, key string, off, n int64, have string) ([]byte, string, error) {
	if err := remote.CheckKey(ctx, "read", key); err != nil {
		return nil, "", err
	}
	if err := store.CheckRange(key, off, max(n, 0)); err != nil { // n < 0: all of it
		return nil, "", err
	}
	if isMeta(key) || n == 0 {
		var b []byte
		var err error
		if n < 0 {
			b, err = s.ReadKey(ctx, key)
		} else {
			b, err = s.ReadKeyRange(ctx, key, off, n)
		}
		if err != nil {
			return nil, "", err
		}
		x, _ := s.facts.Get(key)
		if have != "" && x.Tag == have {
			return nil, have, &fs.PathError{Op: "http", Path: key, Err: store.ErrNotModified}
		}
		return b, x.Tag, nil
	}
	return s.getVersion(ctx, key, off, n, have)
}

// Stat describes name. Directories the catalog knows and directories of
// chunk keys need no request; keys seen in an earlier response need none;
// anything else is a HEAD request.
func (s *Store) Stat(ctx context.Context, name string) (store.Entry, error) {
	if err := remote.CheckKey(ctx, "stat", name); err != nil {
		return store.Entry{}, err
	}
	base := path.Base(name)
	if s.cat.isDir(name) || s.cat.chunkDir(name) {
		return store.Entry{Name: base, Dir: true}, nil
	}
	if isMeta(name) {
		b, err := s.doc(ctx, name)
		if err != nil {
			return store.Entry{}, err
		}
		return store.Entry{Name: base, Size: int64(len(b))}, nil
	}
	if x, ok := s.facts.Wait(ctx, name); ok && (x.Missing || x.Size >= 0) {
		if x.Missing {
			return store.Entry{}, &fs.PathError{Op: "http", Path: name, Err: fs.ErrNotExist}
		}
		return store.Entry{Name: base, Size: x.Size, Version: x.Tag}, nil
	}
	return s.head(ctx, name)
}

// List returns what the catalog knows directly under dir, sorted by name:
// directories and metadata documents, never chunk keys (see the package
// documentation). A directory the catalog does not know, but the server
// says exists, lists empty.
func (s *Store) List(ctx context.Context, dir string) ([]store.Entry, error) {
	if err := remote.CheckKey(ctx, "list", dir); err != nil {
		return nil, err
	}
	names, ok := s.cat.entries(dir)
	if !ok {
		e, err := s.Stat(ctx, dir)
		if err != nil {
			return nil, err
		}
		if !e.Dir {
			return nil, &fs.PathError{Op: "list", Path: dir, Err: fmt.Errorf("not a directory: %w", fs.ErrNotExist)}
		}
	}
	// A v2 array without dimension_separator may keep its chunks nested
	// ("0/0", NestedDirectoryStore): ask whether "0" is a directory.
	if l, rel, ok := s.cat.array(dir); ok && rel == "" && l.legacy && l.ndim > 1 {
		if e, err := s.Stat(ctx, remote.Join(dir, "0")); err == nil && e.Dir {
			if names == nil {
				names = map[string]bool{}
			}
			names["0"] = true
		}
	}
	out := make([]store.Entry, 0, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	for name, isDir := range names {
		if isDir {
			mu.Lock()
			out = append(out, store.Entry{Name: name, Dir: true})
			mu.Unlock()
			continue
		}
		wg.Go(func() {
			e, err := s.Stat(ctx, remote.Join(dir, name))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				e.Name = name
				out = append(out, e)
			case !errors.Is(err, fs.ErrNotExist) && firstErr == nil:
				firstErr = err
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	slices.SortFunc(out, func(a, b store.Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
