package testutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Repo returns the repository root: the nearest directory at or above the
// working directory that holds go.mod. A test runs in its package's
// directory, so this is the checkout the test belongs to.
func Repo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("testutil: no go.mod at or above the working directory")
		}
		dir = up
	}
}

// SharedDir returns the shared material every developer and CI run has:
// $ZFUSE_SHARED, else ../shared beside the repository root. It returns ""
// when that directory does not exist; callers that need it call Shared.
func SharedDir() string {
	dir := os.Getenv("ZFUSE_SHARED")
	if dir == "" {
		repo, err := Repo()
		if err != nil {
			return ""
		}
		dir = filepath.Join(filepath.Dir(repo), "shared")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return ""
	}
	return dir
}

// Shared returns SharedDir, or skips t (Need) when there is none.
func Shared(t testing.TB) string {
	t.Helper()
	dir := SharedDir()
	Need(t, "../shared beside the checkout (or $ZFUSE_SHARED)", dir != "")
	return dir
}

// Conformance returns rel (slash-separated) in the shared conformance data
// (../shared/conformance, MANIFEST.md says what each file is), or skips t
// (Need) when it does not exist.
func Conformance(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Shared(t), "conformance", filepath.FromSlash(rel))
	_, err := os.Stat(p)
	Need(t, "conformance data at "+p, err == nil)
	return p
}
