package s3store_test

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

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
	t.Setenv("AWS_ACCESS_KEY_ID", accessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secretKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	value := make([]byte, 1000)
	for i := range value {
		value[i] = byte(i * 7)
	}
	const off, n = 100, 200
	want := value[off : off+n]
	for _, f := range remotetest.Faults(value, off, n) {
		for _, always := range []bool{false, true} {
			name := f.Name + "/once"
			if always {
				name = f.Name + "/always"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srv := &remotetest.Server{Prefix: bucket + "/", Values: map[string][]byte{"st/.zgroup": []byte(`{"zarr_format":2}`), "st/a/0": value},
						Key: "st/a/0", Fault: f.Respond}
					s, err := s3store.Open(t.Context(), s3store.Config{Bucket: bucket, Prefix: "st", Endpoint: "http://s3.invalid", PathStyle: true,
						Region: "us-east-1", Transport: srv, Timeout: 5 * time.Second, Backoff: remote.Backoff{Attempts: 3, Base: time.Millisecond}})
					if err != nil {
						t.Fatal(err)
					}
					ctx := t.Context()
					if b, err := s.ReadKeyRange(ctx, "a/0", 0, 10); err != nil || !bytes.Equal(b, value[:10]) {
						t.Fatalf("before the fault: %v", err) // sees the version
					}
					srv.SetFaults(1)
					if always {
						srv.SetFaults(1 << 30)
					}
					start := time.Now()
					b, err := s.ReadKeyRange(ctx, "a/0", off, n)
					took := time.Since(start)
					switch {
					case always && (err == nil || errors.Is(err, fs.ErrNotExist)):
						t.Errorf("%d bytes (right: %v), %v; want an error, not ErrNotExist", len(b), bytes.Equal(b, want), err)
					case !always && (err != nil || !bytes.Equal(b, want)):
						t.Errorf("%d bytes (right: %v), %v; want the value's bytes", len(b), bytes.Equal(b, want), err)
					case !always && took < f.Wait:
						t.Errorf("read after %v, want at least %v", took, f.Wait)
					}
					srv.SetFaults(0)
					if b, err := s.ReadKeyRange(ctx, "a/0", off, n); err != nil || !bytes.Equal(b, want) {
						t.Errorf("after the faults: %d bytes, %v", len(b), err)
					}
				})
			})
		}
	}
}
