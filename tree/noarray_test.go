package tree

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/zfuse/zfuse/store"
)

// TestNeedArray: a tree without an array says what it holds instead,
// groups (three named at most) or nothing Zarr; one with an array is no
// error.
func TestNeedArray(t *testing.T) {
	group := &fstest.MapFile{Data: []byte(`{"zarr_format": 2}`)}
	for _, tc := range []struct {
		files fstest.MapFS
		want  string // "" for no error
	}{
		{fstest.MapFS{"x.txt": {Data: []byte("hi")}}, "holds no Zarr array: no Zarr metadata"},
		{fstest.MapFS{".zgroup": group, "g/.zgroup": group}, "holds no Zarr array: 2 groups (., g) and no array"},
		{fstest.MapFS{"a/.zgroup": group, "b/.zgroup": group, "c/.zgroup": group, "d/.zgroup": group}, "4 groups (a, b, c, ...)"},
		{fstest.MapFS{"a/.zarray": {Data: []byte(`{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<i2", "compressor": null, "filters": null, "fill_value": 0, "order": "C"}`)}}, ""},
	} {
		tr, _ := treeOver(t, store.FS(tc.files))
		err := tr.NeedArray(context.Background())
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.files, err)
		case tc.want != "" && (!errors.Is(err, ErrNoArray) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want ErrNoArray saying %q", tc.files, err, tc.want)
		}
	}
}
