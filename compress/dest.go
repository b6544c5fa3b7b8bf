package compress

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/store/s3store"
)

// A Destination is the store zfuse compress writes: a local directory (or
// a shared file system) or the objects under an S3 prefix. Keys are store
// keys ("a/c/0/1"). Every value is written whole or not at all as readers
// see it, so a killed or failed run leaves whole values only. It is safe
// for concurrent use; processes writing different keys of one Destination
// at once (--part) do not disturb each other.
type Destination interface {
	// ReadKey returns key's value; a missing key satisfies
	// errors.Is(err, fs.ErrNotExist).
	ReadKey(ctx context.Context, key string) ([]byte, error)
	// WriteKey stores b as key's value, replacing any value it had.
	WriteKey(ctx context.Context, key string, b []byte) error
	// RemoveKey removes key's value; a missing key is no error.
	RemoveKey(ctx context.Context, key string) error
	// List returns the entries directly under dir ("." for the top).
	List(ctx context.Context, dir string) ([]store.Entry, error)
	// Walk calls fn with every key under dir, at any depth, and its
	// size; a dir with nothing under it is no error.
	Walk(ctx context.Context, dir string, fn func(key string, size int64) error) error
	// Clean removes what interrupted writes of the keys mine accepts left
	// behind (temporary files, unfinished multipart uploads), which no
	// reader sees.
	Clean(ctx context.Context, mine func(key string) bool) error
	Close() error
}

// An s3Dest is an S3 prefix as a Destination.
type s3Dest struct{ *s3store.Store }

// Clean aborts the multipart uploads of mine's keys that a killed run
// left unfinished.
func (d s3Dest) Clean(ctx context.Context, mine func(key string) bool) error {
	_, err := d.AbortUploads(ctx, mine)
	return err
}

// tmpSuffix marks files being written into a dirDest.
const tmpSuffix = ".zfuse-tmp"

// A dirDest is a local directory as a Destination. Each value is written
// to ".NAME.zfuse-tmp" beside it and renamed: a killed run leaves whole
// files, and temporaries, which Clean removes. Files are not fsynced: this
// protects against a killed process, not a power cut.
type dirDest struct {
	root string   // absolute; immutable
	dirs sync.Map // directories known to exist
}

func (d *dirDest) file(key string) string {
	return filepath.Join(d.root, filepath.FromSlash(key))
}

func (d *dirDest) ReadKey(ctx context.Context, key string) ([]byte, error) {
	return os.ReadFile(d.file(key))
}

func (d *dirDest) WriteKey(ctx context.Context, key string, b []byte) error {
	name := d.file(key)
	dir := filepath.Dir(name)
	if _, ok := d.dirs.Load(dir); !ok {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		d.dirs.Store(dir, true)
	}
	tmp := filepath.Join(dir, "."+filepath.Base(name)+tmpSuffix)
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, name)
}

func (d *dirDest) RemoveKey(ctx context.Context, key string) error {
	err := os.Remove(d.file(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// List lists dir, leaving out temporaries (another process's record, say,
// about to be renamed); a directory that does not exist (yet) is empty.
func (d *dirDest) List(ctx context.Context, dir string) ([]store.Entry, error) {
	es, err := os.ReadDir(d.file(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []store.Entry
	for _, e := range es {
		if !strings.HasSuffix(e.Name(), tmpSuffix) {
			out = append(out, store.Entry{Name: e.Name(), Dir: e.IsDir()})
		}
	}
	return out, nil
}

// Walk walks the files under dir, leaving out temporaries.
func (d *dirDest) Walk(ctx context.Context, dir string, fn func(key string, size int64) error) error {
	return d.walk(ctx, dir, func(key string, e fs.DirEntry) error {
		if strings.HasSuffix(key, tmpSuffix) {
			return nil
		}
		fi, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			return nil // removed meanwhile
		}
		if err != nil {
			return err
		}
		return fn(key, fi.Size())
	})
}

// Clean removes the temporaries of mine's keys.
func (d *dirDest) Clean(ctx context.Context, mine func(key string) bool) error {
	return d.walk(ctx, ".", func(key string, _ fs.DirEntry) error {
		dir, name := path.Split(key)
		base, ok := strings.CutSuffix(name, tmpSuffix)
		if !ok || !strings.HasPrefix(base, ".") || !mine(path.Join(dir, base[1:])) {
			return nil
		}
		if err := os.Remove(d.file(key)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	})
}

// walk calls fn with the key of every file under dir.
func (d *dirDest) walk(ctx context.Context, dir string, fn func(key string, e fs.DirEntry) error) error {
	top := d.file(dir)
	err := filepath.WalkDir(top, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if e.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		return fn(filepath.ToSlash(rel), e)
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

func (d *dirDest) Close() error { return nil }

// destNames returns the names at the top of dst, sorted.
func destNames(ctx context.Context, dst Destination) ([]string, error) {
	es, err := dst.List(ctx, ".")
	if err != nil {
		return nil, fmt.Errorf("DEST: %w", err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	return names, nil
}

// Dir returns the local directory root (an absolute path) as a
// Destination; it is created at the first write.
func Dir(root string) Destination { return &dirDest{root: root} }

// S3 returns the objects under s's prefix as a Destination.
func S3(s *s3store.Store) Destination { return s3Dest{s} }
