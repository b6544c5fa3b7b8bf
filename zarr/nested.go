package zarr

// Legacy nested chunk keys.
//
// A v2 .zarray that names no dimension_separator leaves the chunk keys to
// the store that wrote them: zarr-python 2's DirectoryStore wrote "0.0",
// its NestedDirectoryStore "0/0" (the field came later). Only the array's
// directory tells them apart, so such an array parses with "." keys, and
// ResolveSeparator, given a listing, decides once which keys it has: the
// array it returns is the one every key is computed from, presented
// metadata and store reads alike.

// Legacy reports whether a is a v2 array whose metadata names no
// dimension_separator: its keys are "0.0" unless ResolveSeparator found
// them nested.
func (a *Array) Legacy() bool { return a.Format == 2 && !a.separatorGiven }

// ResolveSeparator returns a as its store keys its chunks. A legacy array
// (Legacy) of two or more dimensions may keep them under "0.0" or nested
// "0/0" keys: ResolveSeparator calls dirs for the names of the
// directories in the array's directory, and when one of them is named for
// a chunk index along the first axis, the keys are nested, and it returns
// a copy with the separator "/", named (not Legacy; RewriteV2Array names
// it in the presented .zarray). Any other array is returned as it is,
// without a call to dirs. Errors are those of dirs.
func (a *Array) ResolveSeparator(dirs func() ([]string, error)) (*Array, error) {
	if !a.Legacy() || len(a.grid) < 2 {
		return a, nil
	}
	names, err := dirs()
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if _, ok := parseCoords([]string{name}, a.grid); ok {
			v := *a
			v.Separator, v.separatorGiven = "/", true
			return &v, nil
		}
	}
	return a, nil
}
