package diskcache

import (
	"bytes"
	"errors"
	"testing"
)

func entryFile(id, version string, data []byte) []byte {
	return append(appendHeader(nil, id, version, data), data...)
}

// TestParseEntry: an entry reads back as written; any cut or flipped byte
// is errBadEntry.
func TestParseEntry(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 30)
	b := entryFile("src\nkey\n0\n-1", `"etag"`, data)
	id, v, got, err := parseEntry(b)
	if err != nil || id != "src\nkey\n0\n-1" || v != `"etag"` || !bytes.Equal(got, data) {
		t.Fatalf("parse: %q %q %d bytes, %v", id, v, len(got), err)
	}
	for i := range b {
		bad := bytes.Clone(b)
		bad[i] ^= 0x10
		if _, _, _, err := parseEntry(bad); !errors.Is(err, errBadEntry) {
			t.Errorf("byte %d flipped: %v", i, err)
		}
		if _, _, _, err := parseEntry(b[:i]); !errors.Is(err, errBadEntry) {
			t.Errorf("cut at %d: %v", i, err)
		}
	}
	if _, _, _, err := parseEntry(append(bytes.Clone(b), 0)); !errors.Is(err, errBadEntry) {
		t.Errorf("a byte too many: %v", err)
	}
}

// FuzzParseEntry: parseEntry never panics, and what it accepts is exactly
// an entry file of what it returned.
func FuzzParseEntry(f *testing.F) {
	f.Add(entryFile("s\nk\n0\n-1", `"x"`, []byte("data")))
	f.Add(entryFile("", "", nil))
	f.Add(entryFile("s\nc/0\n16\n32", "Tue, 01 Dec 2026 09:04:21 GMT", bytes.Repeat([]byte{7}, 100)))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, v, data, err := parseEntry(b)
		if err != nil {
			if !errors.Is(err, errBadEntry) {
				t.Fatalf("error %v is not errBadEntry", err)
			}
			return
		}
		if again := entryFile(id, v, data); !bytes.Equal(again, b) {
			t.Fatalf("accepted %q, which is not the entry of what it returned", b)
		}
	})
}
