// Package s3store reads a Zarr store from an S3-compatible object store
// (AWS S3, MinIO, versitygw, Ceph, R2, ...) with aws-sdk-go-v2: the store
// is the objects under a prefix of a bucket (s3://bucket/prefix). It also
// writes one (WriteKey, RemoveKey, Walk, AbortUploads: zfuse compress's
// s3:// DEST; see write.go).
//
// The one fact to know: region and credentials come the usual AWS way (the
// AWS_* environment variables, then the shared config and credentials
// files, then the instance role); with none found, requests go unsigned.
// Credentials are never logged and never part of an error.
//
// Listing is ListObjectsV2 with delimiter "/" (paginated), Stat is
// HeadObject (a listing for directories), reads are ranged GetObject. 404
// satisfies errors.Is(err, fs.ErrNotExist) and 401/403 errors.Is(err,
// fs.ErrPermission); 5xx, throttling and 429 (after at least their
// Retry-After), a server silent for Config.Timeout, broken connections and
// bodies, and answers that do not answer the request (another range, a
// body longer or shorter than it) are retried with exponential backoff a
// bounded number of times. An object whose ETag (else Last-Modified) or
// size differs from the first response about it is refused
// (remote.ErrChanged).
package s3store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/store/remote"
)

// DefaultTimeout is Config.Timeout's default.
const DefaultTimeout = 15 * time.Second

// Config configures a Store.
type Config struct {
	Bucket string
	Prefix string // key prefix of the store root ("" for the bucket root)
	// Endpoint is the service URL for providers other than AWS
	// ("http://127.0.0.1:7070"); "" means AWS's endpoint for the region.
	Endpoint  string
	Region    string // "" means from the environment, else us-east-1
	PathStyle bool   // bucket in the path, not the host name (most non-AWS servers)
	// MaxInFlight bounds the requests in flight; 0 means 128. Idle
	// connections kept are at least as many.
	MaxInFlight int
	Backoff     remote.Backoff // retries; the zero value uses its defaults
	// StartBackoff is how patiently the store reads what decides what it
	// is: Open's listing, and the first read of each metadata document
	// at the root (.zmetadata, .zarray, .zgroup, .zattrs, zarr.json):
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
	// Hook, if set, is told of each request that reads (store.Hook): a
	// GetObject or HeadObject with its retries, a page of a listing; not
	// of what the Store answers from what it has seen.
	Hook store.Hook
	// PartSize is the size of the parts of a multipart upload (WriteKey),
	// which values larger than it get; 0 means DefaultPartSize. S3 wants
	// at least 5 MiB.
	PartSize int64
	// Refresh, when positive, is how long what a response said about an
	// object is believed: after it, the object is asked about again, and
	// a new version is served as such (remote.Facts.Refresh). 0: the
	// first version seen of each object is served for the life of the
	// Store.
	Refresh time.Duration
}

// ParseURL splits "s3://bucket/prefix" into bucket and prefix.
func ParseURL(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.User != nil {
		return "", "", fmt.Errorf("s3store: %q is not an s3://bucket/prefix URL", raw)
	}
	return u.Host, strings.Trim(u.Path, "/"), nil
}

// A Store reads the objects under a prefix of a bucket. It is safe for
// concurrent use.
type Store struct {
	// Immutable after Open.
	client   *s3.Client
	bucket   string
	prefix   string // "" or ending in "/"
	limit    remote.Limit
	backoff  remote.Backoff // for bodies that break after the SDK's retries; OnRetry counts every retry
	hook     store.Hook     // Config.Hook
	log      *slog.Logger
	facts    *remote.Facts
	name     string         // s3://bucket/prefix, for logs
	partSize int64          // WriteKey: larger values are uploaded in parts of this size
	start    remote.Backoff // Config.StartBackoff

	answered sync.Map // root metadata documents answered once (rootMeta): read impatiently since
}

var (
	_ store.Store     = (*Store)(nil)
	_ store.Versioner = (*Store)(nil)
)

// Open returns a Store for cfg.Bucket and cfg.Prefix. It lists the store
// root once, so that a wrong endpoint, bucket or credential fails here.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3store: no bucket")
	}
	inflight := cfg.MaxInFlight
	if inflight <= 0 {
		inflight = 128
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := withDefaults(cfg.Backoff)
	awsCfg, err := loadAWSConfig(ctx, cfg.Region, inflight, b, log)
	if err != nil {
		return nil, err
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	s := &Store{
		client:   newClient(awsCfg, cfg),
		bucket:   cfg.Bucket,
		prefix:   prefix,
		limit:    remote.NewLimit(inflight),
		backoff:  b,
		hook:     cfg.Hook,
		log:      log,
		facts:    remote.NewFacts(0, log),
		name:     "s3://" + cfg.Bucket + "/" + strings.TrimSuffix(prefix, "/"),
		partSize: cfg.PartSize,
		start:    cfg.StartBackoff,
	}
	if s.partSize <= 0 {
		s.partSize = DefaultPartSize
	}
	s.facts.Refresh(cfg.Refresh)
	err = remote.Patiently(ctx, cfg.StartBackoff, log, s.name, func(ctx context.Context) error {
		_, err := s.list(ctx, ".", 1)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("s3store: %s: %w", s.name, err)
	}
	log.InfoContext(ctx, "s3 store opened", "url", s.name, "endpoint", redact(cfg.Endpoint), "region", awsCfg.Region, "path_style", cfg.PathStyle)
	return s, nil
}

// withDefaults fills the unset fields of b: 5 attempts, waits from 100 ms
// up to 2 s.
func withDefaults(b remote.Backoff) remote.Backoff {
	if b.Attempts <= 0 {
		b.Attempts = 5
	}
	if b.Base <= 0 {
		b.Base = 100 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 2 * time.Second
	}
	return b
}

// loadAWSConfig loads the SDK's configuration (environment, profiles)
// with our HTTP client and retry policy, in region or the configured one
// (us-east-1 if none), and anonymous credentials if none are found.
func loadAWSConfig(ctx context.Context, region string, inflight int, b remote.Backoff, log *slog.Logger) (aws.Config, error) {
	// A BuildableClient, unlike an http.Client, takes AWS_CA_BUNDLE.
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = 2 * inflight
		t.MaxIdleConnsPerHost = inflight // reuse a connection per request in flight
	})
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(hc),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = b.Attempts
				o.MaxBackoff = b.Max
				o.Backoff = jitter(b)
				o.RateLimiter = ratelimit.None // an outage must not use up a retry budget
				// 429 and 408 are throttling and a timeout for S3-compatible
				// servers that send no S3 error code with them.
				o.Retryables = append(o.Retryables, retry.RetryableHTTPStatusCode{Codes: map[int]struct{}{
					http.StatusTooManyRequests: {}, http.StatusRequestTimeout: {}}})
			})
		}),
		// Ranged reads carry no whole-object checksum to check.
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("s3store: AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	if _, err := awsCfg.Credentials.Retrieve(ctx); err != nil {
		// Public buckets need no credentials. The error is not logged:
		// it may quote configuration.
		log.InfoContext(ctx, "no AWS credentials found: sending unsigned requests")
		awsCfg.Credentials = aws.AnonymousCredentials{}
	}
	return awsCfg, nil
}

// newClient returns the S3 client of cfg's endpoint, path style and
// transport, each attempt bounded by the watchdog's silence timeout.
func newClient(awsCfg aws.Config, cfg Config) *s3.Client {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		if cfg.Transport != nil {
			o.HTTPClient = &http.Client{Transport: cfg.Transport}
		}
		// Around the configured client (which took AWS_CA_BUNDLE), so
		// that a silent server costs an attempt, which the SDK retries.
		o.HTTPClient = remote.Watchdog{Next: o.HTTPClient.Do, Silence: timeout}
	})
}

// jitter is b's exponential backoff with half of each wait random, and at
// least what a Retry-After header in the failed response asks for.
func jitter(b remote.Backoff) retry.BackoffDelayer {
	return retry.BackoffDelayerFunc(func(attempt int, err error) (time.Duration, error) {
		b.Retried(err) // the SDK asks for the delay before each retry
		d := b.Base
		for i := 1; i < attempt && d < b.Max; i++ {
			d *= 2
		}
		d = min(d, b.Max)
		d = d/2 + rand.N(d/2+1)
		var re *awshttp.ResponseError
		if errors.As(err, &re) && re.Response != nil {
			d = max(d, remote.ParseRetryAfter(re.Response.Header.Get("Retry-After"), time.Now()))
		}
		return d, nil
	})
}

// redact removes credentials and the query from an endpoint URL.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery = nil, ""
	return u.String()
}

// Name returns s3://bucket/prefix.
func (s *Store) Name() string { return s.name }

// Close does nothing; it is there for symmetry with the other stores.
func (s *Store) Close() error { return nil }

// key returns the object key of a store key.
func (s *Store) key(k string) string {
	if k == "." {
		return strings.TrimSuffix(s.prefix, "/")
	}
	return s.prefix + k
}

// call runs one SDK operation (with the SDK's retries) while holding a slot
// of the in-flight limit.
func call[T any](ctx context.Context, s *Store, op func(ctx context.Context) (T, error)) (T, error) {
	if err := s.limit.Acquire(ctx); err != nil {
		var zero T
		return zero, err
	}
	defer s.limit.Release()
	return op(ctx)
}

// ReadKey returns key's value. The caller owns the slice.
func (s *Store) ReadKey(ctx context.Context, key string) ([]byte, error) {
	return s.read(ctx, key, 0, -1)
}

// ReadKeyRange returns the bytes of key's value in [off, off+n), fewer only
// where the value ends, with one ranged GET. The caller owns the slice.
func (s *Store) ReadKeyRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := store.CheckRange(key, off, n); err != nil {
		return nil, err
	}
	if n == 0 {
		if err := remote.CheckKey(ctx, "read", key); err != nil {
			return nil, err
		}
		_, err := s.Stat(ctx, key)
		return []byte{}, err
	}
	return s.read(ctx, key, off, n)
}

func (s *Store) read(ctx context.Context, key string, off, n int64) ([]byte, error) {
	b, _, err := s.readVersion(ctx, key, off, n, "")
	return b, err
}

// ReadKeyVersion returns [off, off+n) of key's value (all of it when n < 0)
// and its version (the ETag, else Last-Modified), with one GET made
// conditional on have (see store.Versioner). The caller owns the slice.
func (s *Store) ReadKeyVersion(ctx context.Context, key string, off, n int64, have string) ([]byte, string, error) {
	if err := store.CheckRange(key, off, max(n, 0)); err != nil { // n < 0: all of it
		return nil, "", err
	}
	if n == 0 {
		b, err := s.ReadKeyRange(ctx, key, off, n)
		x, _ := s.facts.Get(key)
		return b, x.Tag, err
	}
	return s.readVersion(ctx, key, off, n, have)
}

func (s *Store) readVersion(ctx context.Context, key string, off, n int64, have string) ([]byte, string, error) {
	if err := remote.CheckKey(ctx, "read", key); err != nil {
		return nil, "", err
	}
	if _, ok := s.answered.Load(key); ok || !rootMeta(key) {
		return s.fetch(ctx, key, off, n, have)
	}
	// The first read of a document that decides what the store is.
	var b []byte
	var version string
	err := remote.Patiently(ctx, s.start, s.log, s.name+"/"+key, func(ctx context.Context) (err error) {
		b, version, err = s.fetch(ctx, key, off, n, have)
		return err
	})
	if !remote.Transient(err) && ctx.Err() == nil {
		s.answered.Store(key, true)
	}
	return b, version, err
}

// rootMeta reports whether key is a metadata document at the store root.
func rootMeta(key string) bool {
	switch key {
	case ".zmetadata", ".zarray", ".zgroup", ".zattrs", "zarr.json":
		return true
	}
	return false
}

// fetch is readVersion's GetObject, with retries.
func (s *Store) fetch(ctx context.Context, key string, off, n int64, have string) ([]byte, string, error) {
	if x, ok := s.facts.Get(key); ok && x.Missing {
		return nil, "", &fs.PathError{Op: "s3 GET", Path: key, Err: fs.ErrNotExist}
	}
	end := s.facts.Begin(key)
	defer end()
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(key))}
	if n >= 0 {
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	}
	setCondition(in, have)
	start := time.Now()
	var b []byte
	var version string
	// The SDK retries a request until its response headers arrive; a
	// body that breaks or does not answer the request is tried again here.
	err := s.backoff.Do(ctx, func(ctx context.Context) error {
		var err error
		b, version, err = s.getOnce(ctx, key, in, off, n)
		return err
	})
	s.log.DebugContext(ctx, "s3", "op", "GET", "key", key, "off", off, "n", n, "took", time.Since(start), "err", err)
	if err != nil {
		b, version, err = nil, "", &fs.PathError{Op: "s3 GET", Path: key, Err: err}
	}
	s.hook.Done(store.ReadOp(n), key, start, len(b), err)
	if errors.Is(err, store.ErrNotModified) {
		s.facts.Observe(ctx, key, remote.Fact{Size: -1, Tag: have})
		return nil, have, err
	}
	return b, version, err
}

// setCondition makes a GET conditional on the object not being version
// have: If-None-Match for an ETag (quoted), else If-Modified-Since for a
// Last-Modified date (servers without ETags, as versitygw --nometa). ""
// sets nothing.
func setCondition(in *s3.GetObjectInput, have string) {
	if have == "" {
		return
	}
	if remote.IsETag(have) {
		in.IfNoneMatch = aws.String(have)
		return
	}
	if t, err := http.ParseTime(have); err == nil {
		in.IfModifiedSince = aws.Time(t)
	}
}

// getOnce is one GetObject and the reading of its body, and the object's
// version. Its answer is used only when it answers the request (a ranged
// answer's Content-Range is the range asked for, its body that long) and
// comes from the version of the object seen first (remote.Facts).
func (s *Store) getOnce(ctx context.Context, key string, in *s3.GetObjectInput, off, n int64) ([]byte, string, error) {
	out, err := call(ctx, s, func(ctx context.Context) (*s3.GetObjectOutput, error) {
		return s.client.GetObject(ctx, in)
	})
	if err != nil {
		if isInvalidRange(err) {
			b, err := s.pastEnd(ctx, key, off)
			return b, "", err
		}
		return nil, "", s.mapErr(ctx, key, err)
	}
	defer out.Body.Close()
	l := int64(-1) // length unknown
	if out.ContentLength != nil {
		l = *out.ContentLength
	}
	t := tag(out.ETag, out.LastModified)
	var b []byte
	if n < 0 || status(out.ResultMetadata) == http.StatusOK { // the whole object
		b, err = s.facts.Whole(ctx, key, out.Body, l, t, off, n)
	} else {
		b, err = s.facts.Partial(ctx, key, out.Body, l, aws.ToString(out.ContentRange), t, off, n)
	}
	return b, t, err
}

// pastEnd answers a ranged read that the server says starts at or past the
// end of the value (InvalidRange): with no bytes, once the value's size
// confirms it. An empty answer where the value goes on would cut it short.
func (s *Store) pastEnd(ctx context.Context, key string, off int64) ([]byte, error) {
	x, ok := s.facts.Get(key)
	if !ok || x.Size < 0 {
		e, err := s.head(ctx, key)
		if err != nil {
			return nil, err
		}
		x.Size = e.Size
	}
	if off < x.Size {
		return nil, remote.Retryable(fmt.Errorf("%w: InvalidRange for bytes from %d of %d", remote.ErrBadResponse, off, x.Size))
	}
	return []byte{}, nil
}

// tag returns the validator of an object: its ETag, else (servers that
// keep none, as versitygw's posix backend without xattrs) its
// Last-Modified time as an HTTP date, to the second (a listing has
// milliseconds), which a conditional GET's If-Modified-Since takes back.
func tag(etag *string, modified *time.Time) string {
	if e := aws.ToString(etag); e != "" {
		return e
	}
	if modified == nil {
		return ""
	}
	return modified.UTC().Truncate(time.Second).Format(http.TimeFormat)
}

// status returns the HTTP status of the response an SDK result came from,
// 0 if unknown.
func status(md middleware.Metadata) int {
	if r, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok {
		return r.StatusCode
	}
	return 0
}

// Stat describes name: HeadObject, and for a name that is no object, a
// one-key listing of name + "/" to see whether it is a directory. A key
// seen in an earlier response (or in one in flight) needs no request.
func (s *Store) Stat(ctx context.Context, name string) (store.Entry, error) {
	if err := remote.CheckKey(ctx, "stat", name); err != nil {
		return store.Entry{}, err
	}
	base := path.Base(name)
	if name == "." {
		return store.Entry{Name: ".", Dir: true}, nil
	}
	x, known := s.facts.Wait(ctx, name)
	if known && !x.Missing && x.Size >= 0 {
		return store.Entry{Name: base, Size: x.Size, Version: x.Tag}, nil
	}
	if !known || !x.Missing {
		if e, err := s.head(ctx, name); !errors.Is(err, fs.ErrNotExist) {
			return e, err
		}
	}
	// No such object; a directory if any key lies below it.
	es, err := s.list(ctx, name, 1)
	switch {
	case err != nil:
		return store.Entry{}, &fs.PathError{Op: "s3 LIST", Path: name, Err: err}
	case len(es) == 0:
		return store.Entry{}, &fs.PathError{Op: "s3", Path: name, Err: fs.ErrNotExist}
	}
	return store.Entry{Name: base, Dir: true}, nil
}

// head describes the object name with HeadObject.
func (s *Store) head(ctx context.Context, name string) (e store.Entry, err error) {
	start := time.Now()
	defer func() { s.hook.Done("stat", name, start, 0, err) }()
	out, err := call(ctx, s, func(ctx context.Context) (*s3.HeadObjectOutput, error) {
		return s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(name))})
	})
	s.log.DebugContext(ctx, "s3", "op", "HEAD", "key", name, "err", err)
	if err == nil {
		size, t := aws.ToInt64(out.ContentLength), tag(out.ETag, out.LastModified)
		if err := s.facts.Observe(ctx, name, remote.Fact{Size: size, Tag: t}); err != nil {
			return store.Entry{}, &fs.PathError{Op: "s3 HEAD", Path: name, Err: err}
		}
		return store.Entry{Name: path.Base(name), Size: size, Version: t}, nil
	}
	return store.Entry{}, &fs.PathError{Op: "s3 HEAD", Path: name, Err: s.mapErr(ctx, name, err)}
}

// List returns the objects and common prefixes directly under dir, sorted
// by name. A dir with nothing under it does not exist (S3 has no empty
// directories), except the root.
func (s *Store) List(ctx context.Context, dir string) ([]store.Entry, error) {
	if err := remote.CheckKey(ctx, "list", dir); err != nil {
		return nil, err
	}
	es, err := s.list(ctx, dir, 0)
	switch {
	case err != nil:
		return nil, &fs.PathError{Op: "s3 LIST", Path: dir, Err: err}
	case len(es) == 0 && dir != ".":
		return nil, &fs.PathError{Op: "s3 LIST", Path: dir, Err: fs.ErrNotExist}
	}
	return es, nil
}

// list lists dir, stopping after most entries if most > 0.
func (s *Store) list(ctx context.Context, dir string, most int32) ([]store.Entry, error) {
	prefix := s.prefix
	if dir != "." {
		prefix += dir + "/"
	}
	in := &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &prefix, Delimiter: aws.String("/")}
	if most > 0 {
		in.MaxKeys = aws.Int32(most)
	}
	var out []store.Entry
	p := s3.NewListObjectsV2Paginator(s.client, in)
	tokens := map[string]bool{} // a server that gives one twice would list forever
	for p.HasMorePages() {
		page, err := s.nextPage(ctx, p, dir)
		if err != nil {
			return nil, err
		}
		if t := aws.ToString(page.NextContinuationToken); aws.ToBool(page.IsTruncated) && t != "" {
			if tokens[t] {
				return nil, fmt.Errorf("s3: list %s: the server gave continuation token %q twice: its listing never ends", dir, t)
			}
			tokens[t] = true
		}
		out = s.appendPage(ctx, out, page, dir, prefix)
		if most > 0 && len(out) >= int(most) {
			break
		}
	}
	return byName(out), nil
}

// nextPage fetches the next page of the listing of dir, trying again when
// its body breaks.
func (s *Store) nextPage(ctx context.Context, p *s3.ListObjectsV2Paginator, dir string) (*s3.ListObjectsV2Output, error) {
	// The SDK retries a request until its headers; a listing whose body
	// breaks (it does not parse) is tried again here. NextPage moves on
	// only after a page parsed.
	start := time.Now()
	var page *s3.ListObjectsV2Output
	err := s.backoff.Do(ctx, func(ctx context.Context) error {
		var err error
		page, err = call(ctx, s, func(ctx context.Context) (*s3.ListObjectsV2Output, error) {
			return p.NextPage(ctx)
		})
		s.log.DebugContext(ctx, "s3", "op", "LIST", "key", dir, "err", err)
		if err != nil {
			return s.mapErr(ctx, dir, err)
		}
		return nil
	})
	s.hook.Done("list", dir, start, 0, err)
	return page, err
}

// appendPage appends to out the entries of one page of the listing of dir
// (whose keys start with prefix), and records what it says of each object.
func (s *Store) appendPage(ctx context.Context, out []store.Entry, page *s3.ListObjectsV2Output, dir, prefix string) []store.Entry {
	for _, cp := range page.CommonPrefixes {
		if name, ok := entryName(aws.ToString(cp.Prefix), prefix, true); ok {
			out = append(out, store.Entry{Name: name, Dir: true})
		}
	}
	for _, o := range page.Contents {
		name, ok := entryName(aws.ToString(o.Key), prefix, false)
		if !ok {
			continue
		}
		out = append(out, store.Entry{Name: name, Size: aws.ToInt64(o.Size), Version: tag(o.ETag, o.LastModified)})
		// A listing serves no bytes: a changed value is refused when
		// it is read, and the version seen first stays the one served.
		_ = s.facts.Observe(ctx, remote.Join(dir, name), remote.Fact{Size: aws.ToInt64(o.Size), Tag: tag(o.ETag, o.LastModified)})
	}
	return out
}

// byName sorts listed entries by name and keeps one entry per name.
func byName(out []store.Entry) []store.Entry {
	// Sorted by name, one entry per name: a key that is also a prefix of
	// others ("a" and "a/0") is a directory, which is what leads to the
	// rest (a Zarr store has no such key), and a name listed twice once.
	slices.SortFunc(out, func(a, b store.Entry) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		switch {
		case a.Dir == b.Dir:
			return 0
		case a.Dir:
			return -1
		}
		return 1
	})
	return slices.CompactFunc(out, func(a, b store.Entry) bool { return a.Name == b.Name })
}

// entryName returns the name directly under prefix that a listed key (or,
// with dir, a common prefix ending in "/") stands for. It refuses keys
// outside prefix, "directory markers" (prefix itself), and names that are
// not one valid path element ("..", ".", empty, holding "/"), which no
// key of the store may be.
func entryName(key, prefix string, dir bool) (string, bool) {
	name, ok := strings.CutPrefix(key, prefix)
	if dir {
		name, ok = strings.CutSuffix(name, "/")
		ok = ok && strings.HasPrefix(key, prefix)
	}
	if !ok || name == "." || name == ".." || strings.Contains(name, "/") || !fs.ValidPath(name) {
		return "", false
	}
	return name, true
}

// mapErr gives SDK errors the meaning the store promises: not found,
// forbidden, or as they are (after the SDK's own retries).
func (s *Store) mapErr(ctx context.Context, key string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ae smithy.APIError
	code := ""
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	status := 0
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	switch {
	case status == http.StatusNotModified:
		return store.ErrNotModified // a conditional GET of an unchanged object
	case status == http.StatusNotFound || code == "NoSuchKey" || code == "NotFound":
		if err := s.facts.Observe(ctx, key, remote.Fact{Missing: true}); err != nil {
			return err // it was there: an error, not a missing chunk (a fill value)
		}
		return fmt.Errorf("%s: %w", cmp(code, "404"), fs.ErrNotExist)
	case code == "NoSuchBucket":
		return fmt.Errorf("no such bucket %q: %w", s.bucket, fs.ErrNotExist)
	case status == http.StatusForbidden || status == http.StatusUnauthorized:
		return fmt.Errorf("%s: %w", cmp(code, strconv.Itoa(status)), fs.ErrPermission)
	}
	// The SDK retried what was worth it, except a body that broke before
	// it parsed (a listing cut short), which another attempt may cure. Its
	// errors may wrap a syscall.Errno (ECONNREFUSED), which must not reach
	// readers as such.
	var de *smithy.DeserializationError
	if errors.As(err, &de) {
		return remote.Retryable(remote.Unavailable(err))
	}
	return remote.Unavailable(err)
}

func isInvalidRange(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "InvalidRange"
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
