package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"testing"
	"testing/fstest"
	"time"
)

// fake implements every optional interface: each method records its call
// and returns the same answer, "value" (bytes read) and errFake for key
// "bad".
type fake struct{ calls []string }

var errFake = errors.New("fake failure")

func (f *fake) answer(call, key string) ([]byte, error) {
	f.calls = append(f.calls, call+" "+key)
	if key == "bad" {
		return nil, errFake
	}
	return []byte("value"), nil
}

func (f *fake) ReadKey(ctx context.Context, key string) ([]byte, error) {
	return f.answer("ReadKey", key)
}
func (f *fake) ReadKeyRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	return f.answer(fmt.Sprintf("ReadKeyRange %d %d", off, n), key)
}
func (f *fake) ReadKeyInto(ctx context.Context, key string, off, n int64, get func(int) []byte) ([]byte, error) {
	return f.answer(fmt.Sprintf("ReadKeyInto %d %d", off, n), key)
}
func (f *fake) ReadKeyVersion(ctx context.Context, key string, off, n int64, have string) ([]byte, string, error) {
	b, err := f.answer(fmt.Sprintf("ReadKeyVersion %d %d %s", off, n, have), key)
	return b, "v1", err
}
func (f *fake) List(ctx context.Context, dir string) ([]Entry, error) {
	_, err := f.answer("List", dir)
	return []Entry{{Name: "x"}}, err
}
func (f *fake) Stat(ctx context.Context, name string) (Entry, error) {
	_, err := f.answer("Stat", name)
	return Entry{Name: name, Size: 5}, err
}
func (f *fake) OpenKey(ctx context.Context, key string) (*os.File, error) {
	_, err := f.answer("OpenKey", key)
	return nil, err
}
func (f *fake) Close() error {
	_, err := f.answer("Close", "")
	return err
}

// A call of one optional interface's method through a store that has it:
// what the store should have been asked (the fake's record), and what the
// observer should be told ("" for a call not reported).
type call struct {
	do       func(s Store, key string) error
	asked    string
	reported string // op; n is 5 where the method returns bytes
}

// calls has a call for each optional interface, by its bit.
var calls = map[int]call{
	hasRangeReader: {func(s Store, key string) error {
		_, err := s.(RangeReader).ReadKeyRange(context.Background(), key, 2, 3)
		return err
	}, "ReadKeyRange 2 3", "read_range"},
	hasBufferReader: {func(s Store, key string) error {
		_, err := s.(BufferReader).ReadKeyInto(context.Background(), key, 0, -1, func(n int) []byte { return make([]byte, n) })
		return err
	}, "ReadKeyInto 0 -1", "read"},
	hasVersioner: {func(s Store, key string) error {
		_, v, err := s.(Versioner).ReadKeyVersion(context.Background(), key, 1, 4, "v0")
		if err == nil && v != "v1" {
			return fmt.Errorf("version %q, want v1", v)
		}
		return err
	}, "ReadKeyVersion 1 4 v0", "read_range"},
	hasLister: {func(s Store, key string) error {
		es, err := s.(Lister).List(context.Background(), key)
		if err == nil && (len(es) != 1 || es[0].Name != "x") {
			return fmt.Errorf("listed %v, want x", es)
		}
		return err
	}, "List", "list"},
	hasStater: {func(s Store, key string) error {
		e, err := s.(Stater).Stat(context.Background(), key)
		if err == nil && e.Size != 5 {
			return fmt.Errorf("stat %+v, want size 5", e)
		}
		return err
	}, "Stat", "stat"},
	hasFileOpener: {func(s Store, key string) error {
		_, err := s.(FileOpener).OpenKey(context.Background(), key)
		return err
	}, "OpenKey", "open"},
	hasCloser: {func(s Store, key string) error { return s.(io.Closer).Close() }, "Close", ""},
}

type report struct {
	op, key string
	n       int64
	err     error
}

// TestObserve: for every combination of optional interfaces, the store
// Observe returns has exactly those of its store, each call passes
// through (its arguments and its answer) and is reported once, as its op,
// with its key, the bytes it returned and its error.
func TestObserve(t *testing.T) {
	if len(calls) != len(optional) {
		t.Fatalf("%d calls for %d optional interfaces: each needs one here", len(calls), len(optional))
	}
	for bits := range 1 << len(optional) {
		f := &fake{}
		inner := compose(bits, f)
		if got := optionalOf(inner); got != bits {
			t.Fatalf("compose(%07b) has interfaces %07b", bits, got)
		}
		var got []report
		s := Observe(inner, func(op, key string, n int64, d time.Duration, err error) {
			if d < 0 {
				t.Errorf("%s %s took %v", op, key, d)
			}
			got = append(got, report{op, key, n, err})
		})
		if has := optionalOf(s); has != bits {
			t.Errorf("Observe of a store with interfaces %07b has %07b", bits, has)
			continue
		}
		tests := []call{{func(s Store, key string) error { _, err := s.ReadKey(context.Background(), key); return err }, "ReadKey", "read"}}
		for i := range optional {
			if bits&(1<<i) != 0 {
				tests = append(tests, calls[1<<i])
			}
		}
		for _, c := range tests {
			for _, key := range []string{"a/0", "bad"} {
				if c.asked == "Close" && key == "bad" {
					continue
				}
				f.calls, got = nil, nil
				err := c.do(s, key)
				if want := errFake; key == "bad" && !errors.Is(err, want) || key != "bad" && err != nil {
					t.Errorf("%07b: %s %s: err %v", bits, c.asked, key, err)
				}
				asked := c.asked + " " + key
				if c.asked == "Close" {
					asked = "Close "
				}
				if len(f.calls) != 1 || f.calls[0] != asked {
					t.Errorf("%07b: %s %s: the store was asked %q, want %q", bits, c.asked, key, f.calls, asked)
				}
				var want []report
				if c.reported != "" {
					r := report{op: c.reported, key: key}
					if key == "bad" {
						r.err = errFake
					} else if c.reported == "read" || c.reported == "read_range" {
						r.n = 5
					}
					want = []report{r}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%07b: %s %s: reported %+v, want %+v", bits, c.asked, key, got, want)
				}
			}
		}
	}
}

// TestObserveBackends: the stores of this package keep their interfaces
// (a DirStore opens its files, which passthrough of stored chunks needs),
// and the fallbacks run above the observer: a Stat of a store that cannot
// stat is reported as the listing it does.
func TestObserveBackends(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/k", []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	obs := func(op, key string, n int64, _ time.Duration, err error) {
		ops = append(ops, fmt.Sprintf("%s %s %d %v", op, key, n, errors.Is(err, fs.ErrNotExist)))
	}
	s := Observe(d, obs)
	if _, ok := s.(FileOpener); !ok {
		t.Error("an observed DirStore is not a FileOpener")
	}
	f, err := s.(FileOpener).OpenKey(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := ReadInto(context.Background(), s, "nope", 0, -1, func(n int) []byte { return make([]byte, n) }); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read of a missing key: %v", err)
	}
	if err := s.(io.Closer).Close(); err != nil {
		t.Error(err)
	}
	if want := []string{"open k 0 false", "read nope 0 true"}; !reflect.DeepEqual(ops, want) {
		t.Errorf("reported %q, want %q", ops, want)
	}

	ops = nil
	type listOnly struct {
		Store
		lister
	}
	m := FS(fstest.MapFS{"a/k": {Data: []byte("12345")}})
	s = Observe(listOnly{m, m}, obs)
	if _, ok := s.(Stater); ok {
		t.Error("an observed store without Stat is a Stater")
	}
	if _, ok := s.(io.Closer); ok {
		t.Error("an observed store without Close is an io.Closer")
	}
	if e, err := Stat(context.Background(), s, "a/k"); err != nil || e.Size != 5 {
		t.Errorf("Stat: %+v, %v", e, err)
	}
	if want := []string{"list a 0 false"}; !reflect.DeepEqual(ops, want) {
		t.Errorf("reported %q, want %q", ops, want)
	}
}
