package store

import (
	"context"
	"io"
	"os"
	"time"
)

// Observe wraps a store once, for metrics or tracing, without hiding any of
// its optional interfaces: a wrapper that implemented each of them by hand
// would either claim interfaces its store lacks or lose the ones added
// after it was written. The combinations are generated (observe_gen.go,
// from the list in observe_gen_test.go), and a test fails when an optional
// interface of this package is missing from that list.

//go:generate go test -run TestObserveGenerated -update

// An Observer is told of each call of a store that Observe wraps, once it
// returns: op is "read" (ReadKey; ReadKeyInto and ReadKeyVersion of a
// whole value), "read_range" (ReadKeyRange; ReadKeyInto and ReadKeyVersion
// of a range), "stat", "list" or "open" (OpenKey); key is the key or the
// directory; n the bytes returned; d how long the call took; err its error
// (nil, or for instance one satisfying errors.Is(err, fs.ErrNotExist) or
// ErrNotModified: the observer decides what counts as a failure). It must
// be safe for concurrent use.
type Observer func(op, key string, n int64, d time.Duration, err error)

// Observe returns a store that passes each call on to s and reports it to
// obs. It has exactly the optional interfaces s has (RangeReader,
// BufferReader, Versioner, Lister, Stater, FileOpener, and io.Closer), so
// that code looking for one finds it where s has it, and only there; the
// fallbacks of this package's functions (ReadRange, ReadInto, List, Stat)
// then run above the observer, and each call they make of s is reported as
// what it is. Close is passed on, not reported.
func Observe(s Store, obs Observer) Store {
	return compose(optionalOf(s), &observed{s: s, obs: obs})
}

// The optional interfaces without Store: the fields a composed store embeds
// besides its Store, so that no method is promoted twice.
type (
	rangeReader interface {
		ReadKeyRange(ctx context.Context, key string, off, n int64) ([]byte, error)
	}
	bufferReader interface {
		ReadKeyInto(ctx context.Context, key string, off, n int64, get func(size int) []byte) ([]byte, error)
	}
	versioner interface {
		ReadKeyVersion(ctx context.Context, key string, off, n int64, have string) ([]byte, string, error)
	}
	lister interface {
		List(ctx context.Context, dir string) ([]Entry, error)
	}
	stater interface {
		Stat(ctx context.Context, name string) (Entry, error)
	}
	fileOpener interface {
		OpenKey(ctx context.Context, key string) (*os.File, error)
	}
)

// allOptional has the methods of every optional interface: what compose
// takes the methods of a composed store from.
type allOptional interface {
	Store
	rangeReader
	bufferReader
	versioner
	lister
	stater
	fileOpener
	io.Closer
}

var _ allOptional = (*observed)(nil)

// observed implements every method; compose exposes those of the
// interfaces its store s has, so each method may assume s has it.
type observed struct {
	s   Store    // immutable
	obs Observer // immutable
}

func (o *observed) report(op, key string, start time.Time, n int, err error) {
	o.obs(op, key, int64(n), time.Since(start), err)
}

// readOp names a read of [off, off+n): all of the value when n < 0.
func readOp(n int64) string {
	if n < 0 {
		return "read"
	}
	return "read_range"
}

func (o *observed) ReadKey(ctx context.Context, key string) ([]byte, error) {
	start := time.Now()
	b, err := o.s.ReadKey(ctx, key)
	o.report("read", key, start, len(b), err)
	return b, err
}

func (o *observed) ReadKeyRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	start := time.Now()
	b, err := o.s.(RangeReader).ReadKeyRange(ctx, key, off, n)
	o.report("read_range", key, start, len(b), err)
	return b, err
}

func (o *observed) ReadKeyInto(ctx context.Context, key string, off, n int64, get func(size int) []byte) ([]byte, error) {
	start := time.Now()
	b, err := o.s.(BufferReader).ReadKeyInto(ctx, key, off, n, get)
	o.report(readOp(n), key, start, len(b), err)
	return b, err
}

func (o *observed) ReadKeyVersion(ctx context.Context, key string, off, n int64, have string) ([]byte, string, error) {
	start := time.Now()
	b, version, err := o.s.(Versioner).ReadKeyVersion(ctx, key, off, n, have)
	o.report(readOp(n), key, start, len(b), err)
	return b, version, err
}

func (o *observed) List(ctx context.Context, dir string) ([]Entry, error) {
	start := time.Now()
	es, err := o.s.(Lister).List(ctx, dir)
	o.report("list", dir, start, 0, err)
	return es, err
}

func (o *observed) Stat(ctx context.Context, name string) (Entry, error) {
	start := time.Now()
	e, err := o.s.(Stater).Stat(ctx, name)
	o.report("stat", name, start, 0, err)
	return e, err
}

func (o *observed) OpenKey(ctx context.Context, key string) (*os.File, error) {
	start := time.Now()
	f, err := o.s.(FileOpener).OpenKey(ctx, key)
	o.report("open", key, start, 0, err)
	return f, err
}

func (o *observed) Close() error { return o.s.(io.Closer).Close() }
