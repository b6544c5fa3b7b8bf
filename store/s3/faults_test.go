package s3store_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/store/remote"
	"github.com/zfuse/zfuse/store/remote/remotetest"
	s3store "github.com/zfuse/zfuse/store/s3"
)

// TestFaults: every kind of bad answer an S3 server or a proxy in between
// may give to a ranged GetObject is refused, never served as bytes: given
// once, a later attempt (the SDK's or the store's) reads the right bytes,
// after the wait the server asked for; given every time, the read fails
// with an error that is not ErrNotExist; once the faults stop, the same
// read succeeds.
func TestFaults(t *testing.T) {
	fakeCredentials(t)
	remotetest.Run(t, func(t *testing.T, srv *remotetest.Server, value []byte) func(context.Context, int64, int64) ([]byte, error) {
		srv.Prefix, srv.Key = bucket+"/", "st/a/0"
		srv.Values = map[string][]byte{"st/.zgroup": []byte(`{"zarr_format":2}`), "st/a/0": value}
		s, err := s3store.Open(t.Context(), s3store.Config{Bucket: bucket, Prefix: "st", Endpoint: "http://s3.invalid", PathStyle: true,
			Region: "us-east-1", Transport: srv, Timeout: 5 * time.Second, Backoff: remote.Backoff{Attempts: 3, Base: time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		return func(ctx context.Context, off, n int64) ([]byte, error) { return s.ReadKeyRange(ctx, "a/0", off, n) }
	})
}

// listing answers S3 listings with body while it is set, else as next
// does; the first cut of them with half of it.
type listing struct {
	next http.RoundTripper
	mu   sync.Mutex
	body []byte
	cut  int
}

func (l *listing) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	body := l.body
	if l.cut > 0 && body != nil {
		l.cut--
		body = body[:len(body)/2]
	}
	l.mu.Unlock()
	if body == nil || r.URL.Query().Get("list-type") != "2" {
		return l.next.RoundTrip(r)
	}
	return remotetest.Answer(r, http.StatusOK, body, int64(len(body)), "Content-Type", "application/xml"), nil
}

// TestListing: names a listing cannot mean are left out, a key that is
// also a prefix is the directory, and what is listed twice shows once.
func TestListing(t *testing.T) {
	s, l := listingStore(t)
	const head = `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>zarr</Name><Prefix>st/a/</Prefix><IsTruncated>false</IsTruncated>`
	for _, tc := range []struct{ body, want string }{
		{`<Contents><Key>st/a/0.0</Key><Size>10</Size></Contents><CommonPrefixes><Prefix>st/a/b/</Prefix></CommonPrefixes>`, "0.0 b/"},
		{`<Contents><Key>st/a/..</Key></Contents><Contents><Key>st/a/.</Key></Contents><Contents><Key>st/a/</Key></Contents><Contents><Key>st/a/k</Key></Contents>`, "k"},
		{`<Contents><Key>st/a/x</Key></Contents><CommonPrefixes><Prefix>st/a/x/</Prefix></CommonPrefixes><CommonPrefixes><Prefix>st/a//</Prefix></CommonPrefixes>`, "x/"},
		{`<Contents><Key>elsewhere</Key></Contents><Contents><Key>st/a/x</Key></Contents><Contents><Key>st/a/x</Key></Contents><CommonPrefixes><Prefix>st/b/</Prefix></CommonPrefixes>`, "x"},
	} {
		l.mu.Lock()
		l.body = []byte(head + tc.body + `</ListBucketResult>`)
		l.mu.Unlock()
		es, err := s.List(t.Context(), "a")
		var got []string
		for _, e := range es {
			if e.Dir {
				e.Name += "/"
			}
			got = append(got, e.Name)
		}
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("listing %s: %q, %v; want %q", tc.body, got, err, tc.want)
		}
	}
}

// TestListingLoops: a listing that says there is more under a
// continuation token it gave before fails, rather than list forever.
func TestListingLoops(t *testing.T) {
	s, l := listingStore(t)
	l.mu.Lock()
	l.body = []byte(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>zarr</Name><Prefix>st/a/</Prefix><IsTruncated>true</IsTruncated>` +
		`<NextContinuationToken>t1</NextContinuationToken><Contents><Key>st/a/0.0</Key><Size>10</Size></Contents></ListBucketResult>`)
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	es, err := s.List(ctx, "a")
	if err == nil || ctx.Err() != nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "t1") {
		t.Errorf("List of a listing that repeats its token: %v, %v; want an error naming the token, at once", es, err)
	}
}

// fakeCredentials gives the SDK the test credentials, and nothing from
// this machine's AWS setup.
func fakeCredentials(t testing.TB) {
	t.Setenv("AWS_ACCESS_KEY_ID", accessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secretKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
}

// TestListingCut: a listing whose body ends early (XML that does not
// parse) is tried again, not an error for the directory (EIO on a lookup,
// which zarr-python takes for a missing array).
func TestListingCut(t *testing.T) {
	s, l := listingStore(t)
	l.mu.Lock()
	l.body = []byte(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>zarr</Name><Prefix>st/a/</Prefix><IsTruncated>false</IsTruncated>` +
		`<Contents><Key>st/a/0.0</Key><Size>10</Size></Contents><Contents><Key>st/a/0.1</Key><Size>10</Size></Contents></ListBucketResult>`)
	l.cut = 2
	l.mu.Unlock()
	es, err := s.List(t.Context(), "a")
	if err != nil || len(es) != 2 {
		t.Errorf("List after two listings cut short: %v, %v; want 2 entries", es, err)
	}
}

// listingStore opens an S3 store whose listings l answers.
func listingStore(t testing.TB) (*s3store.Store, *listing) {
	fakeCredentials(t)
	l := &listing{next: &remotetest.Server{Prefix: bucket + "/", Values: map[string][]byte{"st/.zgroup": []byte(`{"zarr_format":2}`)}}}
	s, err := s3store.Open(t.Context(), s3store.Config{Bucket: bucket, Prefix: "st", Endpoint: "http://s3.invalid", PathStyle: true,
		Region: "us-east-1", Transport: l, Backoff: remote.Backoff{Attempts: 3, Base: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return s, l
}

// FuzzListing answers ListObjectsV2 with arbitrary XML: List never
// panics, and every entry it returns is one valid name, sorted and unique,
// whatever keys and prefixes the listing holds ("..", "", "a//b", a key
// and a prefix of the same name, keys outside the prefix).
func FuzzListing(f *testing.F) {
	s, l := listingStore(f)
	const head = `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>zarr</Name><Prefix>st/a/</Prefix><IsTruncated>false</IsTruncated>`
	for _, body := range []string{
		head + `<Contents><Key>st/a/0.0</Key><Size>10</Size><ETag>"x"</ETag></Contents><CommonPrefixes><Prefix>st/a/b/</Prefix></CommonPrefixes></ListBucketResult>`,
		head + `<Contents><Key>st/a/..</Key><Size>1</Size></Contents><Contents><Key>st/a/.</Key></Contents><Contents><Key>st/a/</Key></Contents></ListBucketResult>`,
		head + `<Contents><Key>st/a/x</Key></Contents><CommonPrefixes><Prefix>st/a/x/</Prefix></CommonPrefixes><CommonPrefixes><Prefix>st/a//</Prefix></CommonPrefixes></ListBucketResult>`,
		head + `<Contents><Key>elsewhere/k</Key></Contents><Contents><Key>st/a/x</Key></Contents><Contents><Key>st/a/x</Key></Contents></ListBucketResult>`,
		head + `<IsTruncated>true</IsTruncated></ListBucketResult>`,
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		l.mu.Lock()
		l.body = body
		l.mu.Unlock()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		es, err := s.List(ctx, "a")
		if err != nil {
			return
		}
		for i, e := range es {
			if e.Name == "" || e.Name == "." || e.Name == ".." || strings.Contains(e.Name, "/") || !fs.ValidPath(e.Name) {
				t.Fatalf("entry %q of %v", e.Name, es)
			}
			if i > 0 && es[i-1].Name >= e.Name {
				t.Fatalf("entries not sorted and unique: %q then %q", es[i-1].Name, e.Name)
			}
		}
	})
}

// TestHook: the hook is told of each request, with the SDK's retries, and
// not of what the store answers from what it has seen.
func TestHook(t *testing.T) {
	fakeCredentials(t)
	remotetest.CheckHook(t, "a/0", func(t *testing.T, srv *remotetest.Server, value []byte, hook store.Hook) remotetest.Hooked {
		srv.Prefix, srv.Key = bucket+"/", "st/a/0"
		srv.Values = map[string][]byte{"st/.zgroup": []byte(`{"zarr_format":2}`), "st/a/0": value}
		s, err := s3store.Open(t.Context(), s3store.Config{Bucket: bucket, Prefix: "st", Endpoint: "http://s3.invalid", PathStyle: true,
			Region: "us-east-1", Transport: srv, Timeout: 5 * time.Second, Backoff: remote.Backoff{Attempts: 3, Base: time.Millisecond}, Hook: hook})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestRootPatient: the first read of a metadata document at the root
// outlasts a server failing it (503) for longer than one read's tries:
// it is read again in rounds, each logged; a chunk is not, and later
// reads of that document are not either.
func TestRootPatient(t *testing.T) {
	fakeCredentials(t)
	synctest.Test(t, func(t *testing.T) {
		srv := &remotetest.Server{Prefix: bucket + "/", Key: "st/.zmetadata",
			Values: map[string][]byte{"st/.zmetadata": []byte(`{"metadata": {}}`), "st/a/0": []byte("chunk")},
			Fault: func(r *http.Request) *http.Response {
				return remotetest.Answer(r, http.StatusServiceUnavailable, nil, 0)
			}}
		log, logs := testutil.Logger()
		s, err := s3store.Open(t.Context(), s3store.Config{Bucket: bucket, Prefix: "st", Endpoint: "http://s3.invalid", PathStyle: true,
			Region: "us-east-1", Transport: srv, Log: log, Backoff: remote.Backoff{Attempts: 3, Base: time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		srv.SetFaults(8)
		if _, err := s.ReadKey(t.Context(), ".zmetadata"); err != nil {
			t.Fatalf(".zmetadata failing 8 times, 3 tries a read: %v", err)
		}
		if !strings.Contains(logs.String(), "trying again") {
			t.Errorf("no Warn line for the rounds:\n%s", logs)
		}
		srv.SetFaults(8)
		if _, err := s.ReadKey(t.Context(), ".zmetadata"); err == nil {
			t.Errorf("a later read of .zmetadata failing 8 times: no error, want it impatient")
		}
		srv.Key = "st/a/0"
		srv.SetFaults(8)
		if _, err := s.ReadKey(t.Context(), "a/0"); err == nil {
			t.Errorf("a chunk failing 8 times: no error, want it impatient")
		}
	})
}
