package compress

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/zfuse/zfuse/store/s3store"
)

// CheckDest refuses a DEST that would lose or corrupt data, before
// anything is written: inside SOURCE (or SOURCE itself), or, local, a
// file, or not writable. What DEST holds is CheckHolds's.
func CheckDest(source, dest string) error {
	if strings.Contains(dest, "://") {
		return checkRemoteDest(source, dest)
	}
	absDest, err := filepath.Abs(dest)
	if err != nil {
		return fmt.Errorf("DEST %s: %w", dest, err)
	}
	realDest := resolveExisting(absDest)
	if !strings.Contains(source, "://") {
		if realSrc, err := filepath.EvalSymlinks(source); err == nil {
			if realSrc, err = filepath.Abs(realSrc); err == nil && (realDest == realSrc || strings.HasPrefix(realDest, realSrc+string(filepath.Separator))) {
				return fmt.Errorf("DEST %s is inside SOURCE %s: refused, it would write into the store it reads", dest, source)
			}
		}
	}
	fi, err := os.Stat(absDest)
	switch {
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		parent, err := nearestDir(absDest)
		if err != nil {
			return fmt.Errorf("DEST %s: cannot create it: %w", dest, err)
		}
		if err := unix.Access(parent, unix.W_OK|unix.X_OK); err != nil {
			return fmt.Errorf("DEST %s: cannot create it in %s: %w", dest, parent, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("DEST %s: %w", dest, err)
	case !fi.IsDir():
		return fmt.Errorf("DEST %s is a file, not a directory", dest)
	}
	if err := unix.Access(absDest, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("DEST %s is not writable: %w", dest, err)
	}
	return nil
}

// checkRemoteDest refuses an s3:// DEST inside an s3:// SOURCE (the same
// bucket, at or below its prefix) and URLs that are no s3:// URL.
func checkRemoteDest(source, dest string) error {
	db, dp, err := s3store.ParseURL(dest)
	if err != nil {
		return fmt.Errorf("DEST: %w", err)
	}
	if scheme, _, _ := strings.Cut(source, "://"); !strings.EqualFold(scheme, "s3") {
		return nil
	}
	sb, sp, err := s3store.ParseURL(source)
	if err == nil && sb == db && (sp == "" || dp == sp || strings.HasPrefix(dp, sp+"/")) {
		return fmt.Errorf("DEST %s is inside SOURCE %s: refused, it would write into the store it reads", dest, source)
	}
	return nil
}

// resolveExisting resolves the symlinks of the longest existing prefix of
// the absolute path p.
func resolveExisting(p string) string {
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest)
		}
		if cur == filepath.Dir(cur) {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

// nearestDir is the closest existing ancestor of p, which must be a
// directory.
func nearestDir(p string) (string, error) {
	for cur := filepath.Dir(p); ; cur = filepath.Dir(cur) {
		fi, err := os.Stat(cur)
		switch {
		case err == nil && fi.IsDir():
			return cur, nil
		case err == nil:
			return "", fmt.Errorf("%s is a file", cur)
		case !errors.Is(err, os.ErrNotExist) || cur == filepath.Dir(cur):
			return "", err
		}
	}
}
