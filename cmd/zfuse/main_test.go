package main

import (
	"os"
	"testing"

	"github.com/zfuse/zfuse/mountlib"
)

// TestMain lets the test binary stat mountpoints for the mounts the tests
// run, as zfuse does for its own (mountlib.StatProbe).
func TestMain(m *testing.M) {
	if code, ok := mountlib.StatProbe(os.Args); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
