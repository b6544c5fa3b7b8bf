package store

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Options say how Open reaches a store and what it tells of its requests.
// Each backend takes the options that concern it; the zero value of each
// is the backend's default.
type Options struct {
	// Hints are paths (relative to the URL) of arrays or groups to look
	// for metadata at: an HTTP store without consolidated metadata cannot
	// list its directories.
	Hints []string
	// MaxInFlight bounds the requests in flight (http, s3).
	MaxInFlight int
	// Timeout is how long a server may stay silent, before it answers or
	// within a body, before the attempt is given up and retried (http, s3).
	Timeout time.Duration
	// S3 are the options of s3:// URLs.
	S3 S3Options
	// Refresh, when positive, is how long what the store said of a key
	// (a metadata document, a version) is believed before it is asked
	// again: the store changes while it is read. 0: it does not.
	Refresh time.Duration
	// Hook, if set, is told of each request the store makes (metrics).
	Hook Hook
	// OnRetry, if set, is called before each retry of a request, with the
	// error that caused it (http, s3; a retries counter).
	OnRetry func(err error)
	Log     *slog.Logger // nil means discard
}

// S3Options are the options of s3:// URLs.
type S3Options struct {
	Endpoint  string // the service URL of an S3-compatible store other than AWS; "": AWS (or $AWS_ENDPOINT_URL)
	Region    string // "": $AWS_REGION or the shared configuration, else us-east-1
	PathStyle bool   // the bucket in the URL path, not the host name
}

// An Opener opens the store at a URL of the scheme it is registered for.
type Opener func(ctx context.Context, url string, o Options) (Store, error)

var (
	openersMu sync.Mutex
	openers   = map[string]Opener{} // by scheme, lower case
)

// Register makes open the Opener of URLs of scheme ("http", "s3"). The
// remote backends register themselves in their init functions, as
// image/png does its format: import one (for its side effects, if need
// be) to have Open open its URLs. It panics if scheme has an Opener.
func Register(scheme string, open Opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	scheme = strings.ToLower(scheme)
	if _, dup := openers[scheme]; dup {
		panic("store: Register called twice for scheme " + scheme)
	}
	openers[scheme] = open
}

// Open opens the store at source: a URL ("https://host/a.zarr",
// "s3://bucket/prefix") with the Opener registered for its scheme, or
// else a local directory (Dir). Close it when done.
func Open(ctx context.Context, source string, o Options) (Store, error) {
	scheme, _, remote := strings.Cut(source, "://")
	if !remote {
		d, err := Dir(source)
		if err != nil {
			return nil, err
		}
		d.SetHook(o.Hook)
		return d, nil
	}
	openersMu.Lock()
	open := openers[strings.ToLower(scheme)]
	openersMu.Unlock()
	if open == nil {
		return nil, fmt.Errorf("SOURCE %s: unsupported scheme %q (want a directory, http://, https:// or s3://)", Redact(source), scheme)
	}
	return open(ctx, source, o)
}

// Backend names the kind of store source is, as metrics label it: "dir"
// for a directory, "http" for http:// and https://, else the URL's scheme.
func Backend(source string) string {
	scheme, _, remote := strings.Cut(source, "://")
	switch s := strings.ToLower(scheme); {
	case !remote:
		return "dir"
	case s == "https":
		return "http"
	default:
		return s
	}
}

// Redact is source as logs, errors and the mount table show it: a URL
// without what may hold a credential (its query and fragment, which carry
// presigned signatures and tokens; user information becomes REDACTED),
// a path as it is.
func Redact(source string) string {
	scheme, _, remote := strings.Cut(source, "://")
	if !remote {
		return source
	}
	u, err := url.Parse(source)
	if err != nil {
		return scheme + "://(unparsable URL)"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
	return u.String()
}
