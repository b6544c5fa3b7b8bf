// Package diskcache keeps the values of a remote store on local disk,
// across mounts: a store.Store that wraps a store.Versioner (the HTTP and S3
// stores), within a byte budget, evicting the least recently used values.
//
// The one fact to know: a value found on disk is served without a request
// only once this process has validated it, by a read conditional on the
// version (ETag, else Last-Modified) it was stored with: a request without
// a body when the value is unchanged, the new value otherwise. Values this
// process wrote or validated are then served for the life of the Store with
// no request at all, as the rest of zfuse assumes the store does not change
// while mounted. So a second mount costs one bodiless request per value,
// and every later pass over the data none; with Config.MaxAge, values
// validated less than MaxAge ago (by any process) need no request either.
//
// Layout: DIR/zfuse-cache-v1/ holds a lock file, tmp/ and 256 directories of
// entry files named by a hash of (source, key, range). An entry is written
// to tmp/ and renamed into place, and carries the length and checksums of
// its header and value (entry.go), so a file torn by a crash is never
// served: it fails validation, is removed and read again. There is no
// fsync: a lost entry is only a miss. An entry file's access time is its
// last use (the LRU order of the next Open), its modification time when
// it was last validated. One process at a time uses a
// directory (an flock on the lock file); a second is refused with ErrBusy.
//
// diskcache imports only package store of zfuse, and internal/flight (the
// load-once helper).
package diskcache

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zfuse/zfuse/internal/flight"
	"github.com/zfuse/zfuse/store"
)

// ErrBusy means another process uses the cache directory.
var ErrBusy = errors.New("diskcache: the cache directory is in use by another process")

// A Config sets up a Store.
type Config struct {
	Dir      string // the cache directory; created if missing
	MaxBytes int64  // what the entry files may take in all, headers included; > 0
	// Source names the remote store (its URL, without credentials or
	// query): values of different sources never mix.
	Source string
	// Keep says which keys to keep on disk; nil means all. Others are read
	// from the store every time (zfuse keeps metadata documents out: the
	// store reads them once per mount anyway).
	Keep func(key string) bool
	// MaxAge, if positive, is how long after a value was validated (or
	// written), by this process or an earlier one, it is served with no
	// request. 0: each process validates each value once.
	MaxAge time.Duration
	Log    *slog.Logger // nil means discard
}

// Stats are a Store's counters since Open, and what it holds now.
type Stats struct {
	Hits        int64 // values served from disk with no request
	Revalidated int64 // values served from disk after a conditional request found them unchanged
	Changed     int64 // values on disk whose version had changed: read again and replaced
	Misses      int64 // values not on disk: read from the store (and written)
	Dropped     int64 // entry files that failed validation (torn, corrupt) and were removed
	Evicted     int64 // entries removed to stay within MaxBytes
	WriteErrors int64 // entries that could not be written (the value was served all the same)

	Entries, Used, Max int64 // entry files and their bytes now; the budget
}

// A Store reads values from disk where it can, and from its inner store
// otherwise. It is safe for concurrent use; Close releases the directory.
type Store struct {
	// Immutable after Open.
	inner  store.Versioner
	dir    string // DIR/zfuse-cache-v1
	max    int64
	source string
	maxAge time.Duration
	keep   func(string) bool
	log    *slog.Logger
	lock   *os.File             // holds the flock
	group  flight.Group[[]byte] // one load per entry file at a time

	mu      sync.Mutex        // guards the fields below
	entries map[string]*entry // by file name
	lru     list.List         // of *entry, most recently used first
	used    int64             // sum of entry sizes; used <= max

	hits, revalidated, changed, misses, dropped, evicted, writeErrors atomic.Int64
}

// An entry is one entry file.
type entry struct {
	name string
	size int64 // of the file
	elem *list.Element
	// valid: written or validated by this process, so served with no
	// request; dataLen is then the value's length (for Stat).
	valid   bool
	dataLen int64
	checked time.Time // when last validated or written: the file's mtime
}

var (
	_ store.Store = (*Store)(nil)
)

// layout is the subdirectory of Config.Dir that a Store owns.
const layout = "zfuse-cache-v1"

// Open opens (or creates) the cache directory, takes its lock, forgets
// temporary files a crash left behind, and indexes the entries there,
// oldest use first by access time (a use sets it: touch); it evicts what
// exceeds MaxBytes.
func Open(cfg Config, inner store.Versioner) (*Store, error) {
	if cfg.MaxBytes <= 0 {
		return nil, fmt.Errorf("diskcache: size %d: want more than 0 bytes", cfg.MaxBytes)
	}
	s := &Store{
		inner: inner, dir: filepath.Join(cfg.Dir, layout), max: cfg.MaxBytes,
		source: cfg.Source, maxAge: cfg.MaxAge, keep: cfg.Keep, log: cfg.Log, entries: map[string]*entry{},
	}
	if s.keep == nil {
		s.keep = func(string) bool { return true }
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Join(s.dir, "tmp"), 0o700); err != nil {
		return nil, fmt.Errorf("diskcache: %w", err)
	}
	if err := s.takeLock(cfg.Dir); err != nil {
		return nil, err
	}
	if err := s.index(); err != nil {
		s.lock.Close()
		return nil, fmt.Errorf("diskcache: %w", err)
	}
	return s, nil
}

// takeLock takes the directory's lock, or fails with ErrBusy naming the
// process that holds it. The kernel drops an flock when its holder dies,
// so a crashed mount leaves no lock behind.
func (s *Store) takeLock(dir string) error {
	f, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("diskcache: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("%w: %s (pid %s); give each mount its own cache directory", ErrBusy, dir, strings.TrimSpace(string(b[:n])))
		}
		return fmt.Errorf("diskcache: lock %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	s.lock = f
	return nil
}

// index removes leftover temporary files and builds the LRU list from the
// entry files, by access time (a hit sets it), then evicts down to the
// budget.
func (s *Store) index() error {
	tmp := filepath.Join(s.dir, "tmp")
	des, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	for _, de := range des {
		os.Remove(filepath.Join(tmp, de.Name()))
	}
	type found struct {
		e    *entry
		used time.Time
	}
	var all []found
	for i := range 256 {
		sub := filepath.Join(s.dir, fmt.Sprintf("%02x", i))
		if err := os.MkdirAll(sub, 0o700); err != nil {
			return err
		}
		des, err := os.ReadDir(sub)
		if err != nil {
			return err
		}
		for _, de := range des {
			fi, err := de.Info()
			if err != nil || !fi.Mode().IsRegular() || !validName(de.Name(), i) {
				os.Remove(filepath.Join(sub, de.Name()))
				continue
			}
			used := fi.ModTime()
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				used = time.Unix(st.Atim.Unix())
			}
			all = append(all, found{&entry{name: de.Name(), size: fi.Size(), checked: fi.ModTime()}, used})
		}
	}
	slices.SortFunc(all, func(a, b found) int { return a.used.Compare(b.used) })
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range all {
		f.e.elem = s.lru.PushFront(f.e)
		s.entries[f.e.name] = f.e
		s.used += f.e.size
	}
	s.evictLocked(nil)
	return nil
}

// validName reports whether name is an entry file name belonging in
// subdirectory i.
func validName(name string, i int) bool {
	b, err := hex.DecodeString(name)
	return err == nil && len(b) == nameBytes && int(b[0]) == i
}

// nameBytes is the length of the hash in an entry's name.
const nameBytes = 16

// Close releases the directory for other processes.
func (s *Store) Close() error { return s.lock.Close() }

// Stats returns the counters. It is safe to call at any time.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	n, used := int64(len(s.entries)), s.used
	s.mu.Unlock()
	return Stats{
		Hits: s.hits.Load(), Revalidated: s.revalidated.Load(), Changed: s.changed.Load(),
		Misses: s.misses.Load(), Dropped: s.dropped.Load(), Evicted: s.evicted.Load(),
		WriteErrors: s.writeErrors.Load(), Entries: n, Used: used, Max: s.max,
	}
}

// ReadKey returns key's value. The caller owns the slice.
func (s *Store) ReadKey(ctx context.Context, key string) ([]byte, error) {
	if !s.keep(key) {
		return s.inner.ReadKey(ctx, key)
	}
	return s.read(ctx, key, 0, -1)
}

// ReadKeyRange returns the bytes of key's value in [off, off+n), fewer only
// where it ends. Each range read is kept as an entry of its own (the shard
// index and inner chunks of a sharded array). The caller owns the slice.
func (s *Store) ReadKeyRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := store.CheckRange(key, off, n); err != nil {
		return nil, err
	}
	if n == 0 || !s.keep(key) {
		return s.inner.ReadKeyRange(ctx, key, off, n)
	}
	return s.read(ctx, key, off, n)
}

// List lists dir in the inner store.
func (s *Store) List(ctx context.Context, dir string) ([]store.Entry, error) {
	return s.inner.List(ctx, dir)
}

// Stat describes name. A whole value on disk answers it, once validated
// (validating it here saves the read that follows its own request); other
// names are asked of the inner store.
func (s *Store) Stat(ctx context.Context, name string) (store.Entry, error) {
	if name == "." || !s.keep(name) {
		return s.inner.Stat(ctx, name)
	}
	fname := s.name(s.id(name, 0, -1))
	s.mu.Lock()
	e := s.entries[fname]
	var valid bool
	var n int64
	if e != nil {
		valid, n = e.valid, e.dataLen
	}
	s.mu.Unlock()
	switch {
	case e == nil:
		return s.inner.Stat(ctx, name)
	case valid:
		return store.Entry{Name: path.Base(name), Size: n}, nil
	}
	b, err := s.read(ctx, name, 0, -1)
	if err != nil {
		return store.Entry{}, err
	}
	return store.Entry{Name: path.Base(name), Size: int64(len(b))}, nil
}

// id identifies a value (n < 0: whole) of key in the source.
func (s *Store) id(key string, off, n int64) string {
	return fmt.Sprintf("%s\n%s\n%d\n%d", s.source, key, off, n)
}

// name is the file name of the entry for id.
func (s *Store) name(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:nameBytes])
}

// path is where the entry file name lies.
func (s *Store) path(name string) string { return filepath.Join(s.dir, name[:2], name) }

// read returns [off, off+n) of key's value (n < 0: all of it), from disk
// or the inner store; one load per value at a time (package flight: it
// runs without the caller's cancellation, as another reader may be
// waiting for it).
func (s *Store) read(ctx context.Context, key string, off, n int64) ([]byte, error) {
	id := s.id(key, off, n)
	name := s.name(id)
	b, shared, err := s.group.DoShared(ctx, name, func(ctx context.Context) ([]byte, error) {
		return s.load(ctx, key, off, n, id, name)
	})
	if err != nil {
		return nil, err
	}
	if shared {
		b = slices.Clone(b) // each caller owns its slice
	}
	return b, nil
}

// load is read's work.
func (s *Store) load(ctx context.Context, key string, off, n int64, id, name string) ([]byte, error) {
	held, have, hit := s.fromDisk(key, id, name)
	if hit {
		return held, nil
	}
	b, version, err := s.inner.ReadKeyVersion(ctx, key, off, n, have)
	switch {
	case errors.Is(err, store.ErrNotModified) && held != nil:
		s.revalidated.Add(1)
		now := time.Now()
		s.mu.Lock()
		if e := s.entries[name]; e != nil {
			e.valid, e.dataLen, e.checked = true, int64(len(held)), now
		}
		s.mu.Unlock()
		s.touch(name, now)
		return held, nil
	case errors.Is(err, fs.ErrNotExist):
		s.remove(name) // gone from the source
		return nil, err
	case err != nil:
		return nil, err
	}
	if held != nil {
		s.changed.Add(1)
		s.log.Info("value changed in the source since it was cached; read again", "key", key, "was", have, "now", version)
	} else {
		s.misses.Add(1)
	}
	s.write(key, name, id, version, b)
	return b, nil
}

// fromDisk reads the entry file name, if any: hit when it may be served
// without a request, else the value and the version to validate it by
// (nil and "" when there is none, or nothing to validate it by), removing
// an entry that fails to read.
func (s *Store) fromDisk(key, id, name string) (data []byte, version string, hit bool) {
	s.mu.Lock()
	e := s.entries[name]
	var valid bool
	var checked time.Time
	if e != nil {
		s.lru.MoveToFront(e.elem)
		valid = e.valid || s.maxAge > 0 && time.Since(e.checked) < s.maxAge
		checked = e.checked
	}
	s.mu.Unlock()
	if e == nil {
		return nil, "", false
	}
	data, version, err := s.readEntry(name, id)
	switch {
	case err == nil && valid:
		s.hits.Add(1)
		s.mu.Lock()
		e.valid, e.dataLen = true, int64(len(data))
		s.mu.Unlock()
		s.touch(name, checked)
		return data, version, true
	case err == nil && version != "":
		return data, version, false
	case err == nil:
		return nil, "", false // nothing to validate it by: read it again
	}
	if !errors.Is(err, fs.ErrNotExist) {
		s.dropped.Add(1)
		s.log.Warn("disk cache entry dropped", "key", key, "file", s.path(name), "err", err)
	}
	s.remove(name)
	return nil, "", false
}

// readEntry reads and validates the entry file name, which must hold id.
func (s *Store) readEntry(name, id string) (data []byte, version string, err error) {
	b, err := os.ReadFile(s.path(name))
	if err != nil {
		return nil, "", err
	}
	got, version, data, err := parseEntry(b)
	if err != nil {
		return nil, "", err
	}
	if got != id {
		return nil, "", fmt.Errorf("%w: holds another value", errBadEntry)
	}
	return data, version, nil
}

// write stores data as the entry name, valid for this process, evicting
// the least recently used entries to make room. A value that cannot be
// written is logged; the reader has it all the same.
func (s *Store) write(key, name, id, version string, data []byte) {
	size := int64(headerLen(id, version) + len(data))
	if size > s.max || len(id) > 0xffff || len(version) > 0xffff {
		return // never fits, or cannot be named
	}
	if err := s.writeFile(name, id, version, data, size); err != nil {
		if s.writeErrors.Add(1) == 1 {
			s.log.Warn("cannot write to the disk cache; values are served from the store", "key", key, "err", err)
		}
	}
}

// writeFile writes the entry, of size bytes, to a temporary file and
// renames it into place (under the lock, so that no eviction removes what
// it just wrote).
func (s *Store) writeFile(name, id, version string, data []byte, size int64) error {
	f, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), name+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(appendHeader(make([]byte, 0, headerLen(id, version)), id, version, data))
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	// The same clock as a hit's touch, for the order of the next Open, set
	// before the lock (the rename keeps it); best effort, as touch is.
	now := time.Now()
	os.Chtimes(f.Name(), now, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Rename(f.Name(), s.path(name)); err != nil {
		os.Remove(f.Name())
		return err
	}
	if old := s.entries[name]; old != nil {
		s.used -= old.size
		s.lru.Remove(old.elem)
	}
	e := &entry{name: name, size: size, valid: true, dataLen: int64(len(data)), checked: now}
	e.elem = s.lru.PushFront(e)
	s.entries[name] = e
	s.used += size
	s.evictLocked(e)
	return nil
}

// evictLocked removes least recently used entries, never keep, until the
// entries fit the budget.
func (s *Store) evictLocked(keep *entry) {
	for s.used > s.max {
		el := s.lru.Back()
		if el == nil {
			return
		}
		e := el.Value.(*entry)
		if e == keep {
			el = el.Prev()
			if el == nil {
				return
			}
			e = el.Value.(*entry)
		}
		s.removeLocked(e)
		s.evicted.Add(1)
	}
}

// remove forgets the entry file name, if indexed, and removes it.
func (s *Store) remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[name]; e != nil {
		s.removeLocked(e)
	}
}

func (s *Store) removeLocked(e *entry) {
	delete(s.entries, e.name)
	s.lru.Remove(e.elem)
	s.used -= e.size
	os.Remove(s.path(e.name))
}

// touch records a use of the entry file name now (its access time: its
// place in the LRU order of the next Open) and when it was last validated
// (its modification time).
func (s *Store) touch(name string, checked time.Time) {
	os.Chtimes(s.path(name), time.Now(), checked)
}
