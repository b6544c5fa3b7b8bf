package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/zfuse/zfuse/store"
	httpstore "github.com/zfuse/zfuse/store/http"
	s3store "github.com/zfuse/zfuse/store/s3"
)

// sourceFlags say how to reach a remote SOURCE. mount, cat and info take
// them (addSourceFlags).
type sourceFlags struct {
	s3Endpoint  string
	s3Region    string
	s3PathStyle bool
	maxInflight int
	timeout     time.Duration
	arrays      stringList
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func addSourceFlags(fl *flag.FlagSet) *sourceFlags {
	f := &sourceFlags{}
	fl.StringVar(&f.s3Endpoint, "s3-endpoint", "", "s3:// SOURCE: the service URL of an S3-compatible store other than AWS (e.g. http://127.0.0.1:7070); default: AWS, or $AWS_ENDPOINT_URL")
	fl.StringVar(&f.s3Region, "s3-region", "", "s3:// SOURCE: the region; default: $AWS_REGION or the shared config, else us-east-1")
	fl.BoolVar(&f.s3PathStyle, "s3-path-style", false, "s3:// SOURCE: put the bucket in the URL path, not the host name (most non-AWS servers need this)")
	fl.IntVar(&f.maxInflight, "http-max-inflight", 64, "http(s):// and s3:// SOURCE: requests in flight at once")
	fl.DurationVar(&f.timeout, "http-timeout", httpstore.DefaultTimeout, "http(s):// and s3:// SOURCE: how long a server may stay silent, before it answers or within a body, before the request is tried again")
	fl.Var(&f.arrays, "array", "http(s):// SOURCE without consolidated metadata: the path of an array or group to serve (repeatable); HTTP cannot list directories")
	return f
}

// A source is an open store.
type source interface {
	store.Store
	Close() error
}

// openSource opens SOURCE: "http://..." or "https://..." (range requests),
// "s3://bucket/prefix" (an S3-compatible object store; credentials the
// usual AWS way), or else a local directory.
func openSource(ctx context.Context, arg string, f *sourceFlags, log *slog.Logger) (source, error) {
	scheme, _, remote := strings.Cut(arg, "://")
	if !remote {
		return store.Dir(arg)
	}
	switch strings.ToLower(scheme) {
	case "http", "https":
		if host, _, _ := strings.Cut(strings.SplitN(arg, "://", 2)[1], "/"); strings.Contains(host, "@") {
			// The mount table and the logs show SOURCE.
			return nil, fmt.Errorf("SOURCE %s: credentials in the URL would show in the mount table and the logs; put them in a query token or a proxy", redactSource(arg))
		}
		return httpstore.Open(ctx, httpstore.Config{URL: arg, Hints: f.arrays, MaxInFlight: f.maxInflight, Timeout: f.timeout, Log: log})
	case "s3":
		bucket, prefix, err := s3store.ParseURL(arg)
		if err != nil {
			return nil, err
		}
		return s3store.Open(ctx, s3store.Config{
			Bucket: bucket, Prefix: prefix,
			Endpoint: f.s3Endpoint, Region: f.s3Region, PathStyle: f.s3PathStyle,
			MaxInFlight: f.maxInflight, Timeout: f.timeout, Log: log,
		})
	}
	return nil, fmt.Errorf("SOURCE %s: unsupported scheme %q (want a directory, http://, https:// or s3://)", redactSource(arg), scheme)
}

// redactSource hides what may be a credential in a SOURCE URL (user:password@).
func redactSource(arg string) string {
	scheme, rest, ok := strings.Cut(arg, "://")
	if !ok {
		return arg
	}
	host, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = "REDACTED@" + host[i+1:]
	}
	if path != "" {
		path = "/" + path
	}
	return scheme + "://" + host + strings.SplitN(path, "?", 2)[0]
}

// displaySource is SOURCE as the mount table and the logs show it: an
// absolute path for a directory, a URL without credentials or query for a
// remote store.
func displaySource(arg string) string {
	if strings.Contains(arg, "://") {
		return redactSource(arg)
	}
	if abs, err := filepath.Abs(arg); err == nil {
		return abs
	}
	return arg
}
