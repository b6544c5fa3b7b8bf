package httpstore_test

import (
	"bytes"
	"errors"
	"io/fs"
	"testing"
	"testing/synctest"
	"time"

	httpstore "github.com/zfuse/zfuse/store/http"
	"github.com/zfuse/zfuse/store/remote"
	"github.com/zfuse/zfuse/store/remote/remotetest"
)

// TestFaults: every kind of bad answer a server or a proxy in between may
// give to a range request is refused, never served as bytes: given once,
// the next attempt reads the right bytes (after the wait the server asked
// for); given every time, the read fails with an error that is not
// ErrNotExist (which would read as a fill value); once the faults stop,
// the same read succeeds.
func TestFaults(t *testing.T) {
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
					srv := &remotetest.Server{Values: map[string][]byte{".zgroup": []byte(`{"zarr_format":2}`), "a/0": value}, Key: "a/0", Fault: f.Respond}
					hs, err := httpstore.Open(t.Context(), httpstore.Config{URL: "http://store.invalid", Transport: srv,
						Timeout: 5 * time.Second, Backoff: remote.Backoff{Attempts: 3, Base: time.Millisecond}})
					if err != nil {
						t.Fatal(err)
					}
					defer hs.Close()
					ctx := t.Context()
					if b, err := hs.ReadKeyRange(ctx, "a/0", 0, 10); err != nil || !bytes.Equal(b, value[:10]) {
						t.Fatalf("before the fault: %v", err) // sees the version
					}
					srv.SetFaults(1)
					if always {
						srv.SetFaults(1 << 30)
					}
					start := time.Now()
					b, err := hs.ReadKeyRange(ctx, "a/0", off, n)
					took := time.Since(start)
					switch {
					case always && (err == nil || errors.Is(err, fs.ErrNotExist)):
						t.Errorf("%d bytes (right: %v), %v; want an error, not ErrNotExist", len(b), bytes.Equal(b, want), err)
					case !always && (err != nil || !bytes.Equal(b, want)):
						t.Errorf("%d bytes (right: %v), %v; want the value's bytes", len(b), bytes.Equal(b, want), err)
					case !always && took < f.Wait:
						t.Errorf("read after %v, want at least %v", took, f.Wait)
					case !always && srv.Tries() != 3:
						t.Errorf("%d requests, want 3 (the first, the fault, its retry)", srv.Tries())
					}
					srv.SetFaults(0)
					if b, err := hs.ReadKeyRange(ctx, "a/0", off, n); err != nil || !bytes.Equal(b, want) {
						t.Errorf("after the faults: %d bytes, %v", len(b), err)
					}
				})
			})
		}
	}
}
