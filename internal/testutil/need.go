// Package testutil holds what zfuse's tests share: skipping a test whose
// requirement is missing on a laptop but failing it where everything must
// run (Need), finding ../shared and the tools `make deps` installs, reading
// .npy files, reference encoders, the Zarr v2 and v3 stores that the tests
// of the presented tree and of the mount write and read (V2Store, V3Store),
// and the known values of the shared conformance data.
//
// It imports only the standard library, and only _test.go files import it
// (deps_test.go checks both).
package testutil

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// requireEnv names the one environment variable that turns skips into
// failures. It lists, separated by commas or spaces, the kinds of
// requirement that must be met:
//
//	deps  everything `make deps` installs, ../shared beside the checkout,
//	      FUSE and root: what CI has (.ci/run sets ZFUSE_TEST_REQUIRE=deps)
//	gpu   an NVIDIA GPU (gpu/run_on_device.sh sets ZFUSE_TEST_REQUIRE=gpu,deps)
//
// Unset, every missing requirement skips its test.
const requireEnv = "ZFUSE_TEST_REQUIRE"

// required reports whether ZFUSE_TEST_REQUIRE lists kind.
func required(kind string) bool {
	return slices.Contains(strings.FieldsFunc(os.Getenv(requireEnv), func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n'
	}), kind)
}

// Need returns when ok is true. Otherwise what, which the test needs, is
// missing: Need skips t, or fails it where ZFUSE_TEST_REQUIRE lists deps.
func Need(t testing.TB, what string, ok bool) {
	t.Helper()
	need(t, "deps", what, ok)
}

// NeedGPU returns when err, from opening the GPU, is nil. Otherwise it
// skips t (CI has no GPU), or fails it where ZFUSE_TEST_REQUIRE lists gpu.
func NeedGPU(t testing.TB, err error) {
	t.Helper()
	need(t, "gpu", fmt.Sprintf("usable GPU (%v)", err), err == nil)
}

func need(t testing.TB, kind, what string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if required(kind) {
		t.Fatalf("%s required (%s=%s)", what, requireEnv, os.Getenv(requireEnv))
	}
	t.Skipf("no %s", what)
}
