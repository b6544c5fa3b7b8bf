package codec

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// bz2Pairs returns numcodecs-written bzip2 fixtures and their arrays (the
// standard library has no bzip2 encoder to make our own).
func bz2Pairs(t testing.TB) (srcs, wants [][]byte) {
	t.Helper()
	dir := filepath.Join(testutil.Conformance(t, "numcodecs"), "fixture", "bz2")
	for _, nn := range []string{"00", "01", "04"} {
		a, err := testutil.ReadNPY(filepath.Join(dir, "array."+nn+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		src, err := os.ReadFile(filepath.Join(dir, "codec.03", "encoded."+nn+".dat"))
		if err != nil {
			t.Fatal(err)
		}
		srcs, wants = append(srcs, src), append(wants, a.Data)
	}
	return srcs, wants
}

func TestBZ2(t *testing.T) {
	srcs, wants := bz2Pairs(t)
	d := compNew(t, `{"id":"bz2"}`)
	for i := range srcs {
		compCheck(t, d, srcs[i], wants[i], true)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name string
		src  []byte
		want []byte
		err  error
	}{
		{"concatenated streams", cat(srcs[0], srcs[1]), cat(wants[0], wants[1]), nil},
		{"empty input (Python decodes it to nothing)", nil, nil, nil},
		{"garbage after the stream", cat(srcs[0], []byte("garbage")), nil, ErrCorrupt},
		{"second stream truncated", cat(srcs[0], srcs[1][:20]), nil, ErrCorrupt},
		{"stream crc", cat(srcs[2][:len(srcs[2])-2], []byte{srcs[2][len(srcs[2])-2] ^ 1}, srcs[2][len(srcs[2])-1:]), nil, ErrChecksum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err != nil {
				if _, err := d.Decode(make([]byte, 0, 1<<16), tt.src); !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			got, err := DecodeFull(d, make([]byte, 0, len(tt.want)), tt.src)
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Fatalf("got %d bytes, %v", len(got), err)
			}
		})
	}
}
