package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/zfuse/zfuse/mountlib"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/store/diskcache"
	"github.com/zfuse/zfuse/store/httpstore" // and store.Open opens http(s):// URLs
	_ "github.com/zfuse/zfuse/store/s3store" // store.Open opens s3:// URLs
	"github.com/zfuse/zfuse/tree"
	"github.com/zfuse/zfuse/zarr"
)

// sourceFlags say how to reach a remote SOURCE. mount, cat, info and
// compress take them (addSourceFlags); the disk cache is mount's, cat's
// and info's, --refresh mount's.
type sourceFlags struct {
	s3Endpoint  string
	s3Region    string
	s3PathStyle bool
	maxInflight int
	timeout     time.Duration
	arrays      stringList
	cacheDir    string        // --cache-dir: see withDiskCache
	cacheSize   Size          // --cache-dir-size
	cacheMaxAge time.Duration // --cache-dir-max-age
	refresh     time.Duration // --refresh: 0, the store does not change while mounted
	onRetry     func(error)   // told of each retry of a remote store's request (metrics); not a flag
	hook        store.Hook    // told of each request of the store (metrics); not a flag
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func addSourceFlags(fl *flag.FlagSet) *sourceFlags {
	f := &sourceFlags{}
	fl.StringVar(&f.s3Endpoint, "s3-endpoint", "", "s3:// SOURCE (and compress's DEST): the service URL of an S3-compatible store other than AWS (e.g. http://127.0.0.1:7070); default: AWS, or $AWS_ENDPOINT_URL")
	fl.StringVar(&f.s3Region, "s3-region", "", "s3:// SOURCE (and compress's DEST): the region; default: $AWS_REGION or the shared config, else us-east-1")
	fl.Var((*boolFlag)(&f.s3PathStyle), "s3-path-style", "s3:// SOURCE (and compress's DEST): put the bucket in the URL path, not the host name (most non-AWS servers need this)")
	f.maxInflight, f.timeout = 128, httpstore.DefaultTimeout
	fl.Var((*countFlag)(&f.maxInflight), "http-max-inflight", "http(s):// and s3:// SOURCE (and compress's s3:// DEST): requests in flight at once")
	fl.Var((*durationFlag)(&f.timeout), "http-timeout", "http(s):// and s3:// SOURCE: how long a server may stay silent, before it answers or within a body, before the request is tried again")
	fl.Var(&f.arrays, "array", "http(s):// SOURCE without consolidated metadata: the path of an array or group to serve (repeatable); HTTP cannot list directories")
	f.cacheSize = 10 << 30
	return f
}

// addDiskCacheFlags defines --cache-dir and its limits: mount's, cat's and
// info's (withDiskCache).
func (f *sourceFlags) addDiskCacheFlags(fl *flag.FlagSet) {
	fl.StringVar(&f.cacheDir, "cache-dir", "", "http(s):// and s3:// SOURCE: keep stored (compressed) chunks in this directory across mounts, validated by ETag/Last-Modified; one mount per directory")
	fl.Var(&f.cacheSize, "cache-dir-size", "the most --cache-dir holds; least recently used chunks leave first")
	fl.Var((*durationFlag)(&f.cacheMaxAge), "cache-dir-max-age", "serve chunks in --cache-dir validated less than this long ago (e.g. 24h) with no request, even in a new mount; 0: each mount validates each chunk once (a request without a body)")
}

// addRefreshFlag defines --refresh, zfuse mount's.
func (f *sourceFlags) addRefreshFlag(fl *flag.FlagSet) {
	fl.Var((*durationFlag)(&f.refresh), "refresh", "mount: for a store that changes while mounted, read metadata and listings again, and check each file's stored version (mtime, ETag) when it is next looked up, this long (e.g. 30s) after they were last read; a changed chunk is decoded again and served as a new file. 0: the store does not change while mounted, the fastest")
}

// options are the store.Options of these flags, logging to log.
func (f *sourceFlags) options(log *slog.Logger) store.Options {
	return store.Options{
		Hints: f.arrays, MaxInFlight: f.maxInflight, Timeout: f.timeout,
		S3:      store.S3Options{Endpoint: f.s3Endpoint, Region: f.s3Region, PathStyle: f.s3PathStyle},
		Refresh: f.refresh, Hook: f.hook, OnRetry: f.onRetry, Log: log,
	}
}

// needArrays returns nil when tree holds an array; else an error saying
// what SOURCE holds instead (tree.NeedArray) and, for an HTTP store,
// which cannot list directories, how to name arrays (noArrays).
func needArrays(ctx context.Context, tr *tree.Tree, source string) error {
	return noArrays(tr.NeedArray(ctx), source)
}

// noArrays is err, tree.NeedArray's or NoArray's, as zfuse says it of
// SOURCE.
func noArrays(err error, source string) error {
	if !errors.Is(err, tree.ErrNoArray) {
		return err
	}
	msg := fmt.Sprintf("SOURCE %s %v", mountlib.Display(source), err)
	if store.Backend(source) == "http" {
		msg += "; HTTP cannot list directories, so zfuse finds arrays in consolidated metadata (.zmetadata, or a zarr.json's consolidated_metadata): without it, name them with --array PATH"
	}
	return errors.New(msg)
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// withDiskCache puts a disk cache (--cache-dir) in front of src, a remote
// store: chunks stay on local disk across mounts. Metadata documents are
// not kept there: the remote stores read them once per mount anyway. The
// returned source closes both. Without --cache-dir it returns src.
func withDiskCache(src store.Store, arg string, f *sourceFlags, log *slog.Logger) (store.Store, *diskcache.Store, error) {
	if f.cacheDir == "" {
		return src, nil, nil
	}
	v, ok := src.(store.Versioner)
	if !strings.Contains(arg, "://") || !ok {
		return nil, nil, fmt.Errorf("--cache-dir is for http(s):// and s3:// sources; a local SOURCE is on a disk already")
	}
	if f.refresh > 0 {
		// The disk cache serves a value validated once for the rest of the
		// process: it would keep serving the version --refresh is to replace.
		return nil, nil, fmt.Errorf("--cache-dir and --refresh do not combine yet: the disk cache validates each value once per mount")
	}
	dc, err := diskcache.Open(diskcache.Config{
		Dir: f.cacheDir, MaxBytes: int64(f.cacheSize), MaxAge: f.cacheMaxAge, Source: mountlib.Display(arg), Log: log,
		Keep: func(key string) bool {
			switch path.Base(key) {
			case zarr.ArrayFile, zarr.GroupFile, zarr.AttrsFile, zarr.ConsolidatedFile, zarr.MetadataFile:
				return false
			}
			return true
		},
	}, v)
	if err != nil {
		return nil, nil, fmt.Errorf("--cache-dir: %w", err)
	}
	st := dc.Stats()
	log.Info("disk cache", "dir", f.cacheDir, "entries", st.Entries, "bytes", st.Used, "size", st.Max)
	return cachedSource{dc, src}, dc, nil
}

// A cachedSource reads through its disk cache; Close closes both.
type cachedSource struct {
	*diskcache.Store
	src store.Store
}

func (c cachedSource) Close() error {
	c.Store.Close()
	return c.src.Close()
}
