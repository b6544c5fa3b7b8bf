package codec

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestConfigAccessors(t *testing.T) {
	var c Config
	if err := json.Unmarshal([]byte(`{"id":"x","n":5.0,"f":2.5,"s":"abc","z":null,"big":1e300}`), &c); err != nil {
		t.Fatal(err)
	}
	if c.ID() != "x" {
		t.Errorf("ID() = %q", c.ID())
	}
	if !c.Has("n") || c.Has("z") || c.Has("missing") {
		t.Errorf("Has: n %v, z (null) %v, missing %v", c.Has("n"), c.Has("z"), c.Has("missing"))
	}
	if n, err := c.Int("n", 0); n != 5 || err != nil {
		t.Errorf("Int(n) = %d, %v", n, err)
	}
	if n, err := c.Int("z", 7); n != 7 || err != nil {
		t.Errorf("Int(null) = %d, %v; want the default", n, err)
	}
	for _, key := range []string{"f", "s", "big"} {
		if _, err := c.Int(key, 0); !errors.Is(err, ErrConfig) {
			t.Errorf("Int(%s) = %v, want ErrConfig", key, err)
		}
	}
	if s, err := c.String("s", ""); s != "abc" || err != nil {
		t.Errorf("String(s) = %q, %v", s, err)
	}
	if _, err := c.String("n", ""); !errors.Is(err, ErrConfig) {
		t.Errorf("String of a number: %v", err)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		config string
		err    error
	}{
		{`{"id":"zstd","level":3}`, nil},
		{`{"id":"nosuch"}`, ErrUnknownCodec},
		{`{"level":3}`, ErrUnknownCodec},
		{`"zstd"`, ErrConfig},
		{`null`, ErrConfig},
		{`{`, ErrConfig},
	}
	for _, tt := range tests {
		_, err := New(json.RawMessage(tt.config))
		if tt.err == nil && err != nil || tt.err != nil && !errors.Is(err, tt.err) {
			t.Errorf("New(%s) = %v, want %v", tt.config, err, tt.err)
		}
	}
	_, err := New(json.RawMessage(`{"id":"nosuch"}`))
	if !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("unknown codec error does not name it: %v", err)
	}
	for id := range notRaw {
		if _, err := New(json.RawMessage(`{"id":"` + id + `"}`)); !errors.Is(err, ErrNotRaw) {
			t.Errorf("object codec %s: %v, want ErrNotRaw", id, err)
		}
	}
}

func TestIDs(t *testing.T) {
	ids := IDs()
	if !slices.IsSorted(ids) {
		t.Errorf("IDs not sorted: %v", ids)
	}
	for _, id := range []string{"zstd", "zlib", "gzip", "bz2", "lzma", "base64", "crc32", "adler32", "crc32c", "fletcher32", "jenkins_lookup3"} {
		if !slices.Contains(ids, id) {
			t.Errorf("%s not registered", id)
		}
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("registering zstd again did not panic")
		}
	}()
	register("zstd", newZstd)
}
