package tree

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrNoArray means a tree holds no Zarr array. mount, info and compress
// refuse such a SOURCE: an empty result is not success.
var ErrNoArray = errors.New("holds no Zarr array")

// NeedArray returns nil when the tree holds an array; else an error
// wrapping ErrNoArray that says what it holds instead: groups (the first
// three named), or no Zarr metadata at all.
func (t *Tree) NeedArray(ctx context.Context) error {
	ok, err := t.HasArray(ctx)
	if err != nil || ok {
		return err
	}
	return t.NoArray(ctx)
}

// NoArray is the error of a tree that holds no array, as NeedArray says
// it.
func (t *Tree) NoArray(ctx context.Context) error {
	groups, err := t.Groups(ctx)
	if err != nil {
		return err
	}
	if len(groups) == 0 {
		return fmt.Errorf("%w: no Zarr metadata (.zarray, zarr.json, .zgroup) in it", ErrNoArray)
	}
	var paths []string
	for _, g := range groups[:min(len(groups), 3)] {
		paths = append(paths, g.Path)
	}
	if len(groups) > 3 {
		paths = append(paths, "...")
	}
	s := "s"
	if len(groups) == 1 {
		s = ""
	}
	return fmt.Errorf("%w: %d group%s (%s) and no array", ErrNoArray, len(groups), s, strings.Join(paths, ", "))
}
