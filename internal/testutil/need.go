// Package testutil holds what zfuse's tests share: skipping a test whose
// requirement is missing on a laptop but failing it where everything must
// run (Need), finding ../shared and the tools `make deps` installs, reading
// .npy files, and the known values of the shared conformance data.
//
// It imports only the standard library, and only _test.go files import it
// (deps_test.go checks both).
package testutil

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// RequireEnv names the one environment variable that turns skips into
// failures. It lists, separated by commas or spaces, the kinds of
// requirement that must be met:
//
//	deps  everything `make deps` installs, ../shared beside the checkout,
//	      FUSE and root: what CI has (.ci/run sets ZFUSE_TEST_REQUIRE=deps)
//	gpu   an NVIDIA GPU (gpu/run_on_device.sh sets ZFUSE_TEST_REQUIRE=gpu,deps)
//
// Unset, every missing requirement skips its test.
const RequireEnv = "ZFUSE_TEST_REQUIRE"

// The kinds of requirement RequireEnv lists.
const (
	Deps = "deps"
	GPU  = "gpu"
)

// Required reports whether ZFUSE_TEST_REQUIRE lists kind.
func Required(kind string) bool {
	return slices.Contains(strings.FieldsFunc(os.Getenv(RequireEnv), func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n'
	}), kind)
}

// Need returns when ok is true. Otherwise what, which the test needs, is
// missing: Need skips t, or fails it where ZFUSE_TEST_REQUIRE lists deps.
func Need(t testing.TB, what string, ok bool) {
	t.Helper()
	NeedKind(t, Deps, what, ok)
}

// NeedKind is Need for a requirement of the given kind (Deps, GPU): it
// fails t where ZFUSE_TEST_REQUIRE lists kind.
func NeedKind(t testing.TB, kind, what string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if Required(kind) {
		t.Fatalf("%s required (%s=%s)", what, RequireEnv, os.Getenv(RequireEnv))
	}
	t.Skipf("no %s", what)
}
