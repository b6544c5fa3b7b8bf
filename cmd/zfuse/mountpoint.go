package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/zfuse/zfuse/fs"
)

// checkMountpoint explains the usual reasons a mount would fail.
func checkMountpoint(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		return fmt.Errorf("mountpoint %s is a stale FUSE mount (its server died); clear it with: fusermount3 -u %s", dir, dir)
	case err != nil:
		return fmt.Errorf("mountpoint: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("mountpoint %s is not a directory", dir)
	}
	if on, err := fs.Mounted(dir); err == nil && on {
		return fmt.Errorf("mountpoint %s is busy: something is already mounted there (unmount it with: fusermount3 -u %s)", dir, dir)
	}
	return nil
}
