package version

import (
	"runtime/debug"
	"testing"
)

// TestVersion: zfuse version says the module version, the VCS revision,
// its time and whether the tree had changes, from the build information.
func TestVersion(t *testing.T) {
	setting := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	rev := "1a5127b4f5b3fff168506868a2e206b07e83a1f1"
	for _, tc := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: setting("GOOS", "linux", "GOARCH", "amd64", "vcs", "git", "vcs.revision", rev, "vcs.time", "2026-12-01T20:01:56Z", "vcs.modified", "true")},
			"(devel) " + rev + " 2026-12-01T20:01:56Z modified go1.26.8 linux/amd64"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"},
			Settings: setting("GOOS", "linux", "GOARCH", "arm64", "vcs.revision", rev, "vcs.time", "2026-12-01T20:01:56Z", "vcs.modified", "false")},
			"v0.4.0 " + rev + " 2026-12-01T20:01:56Z go1.26.8 linux/arm64"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: setting("-buildvcs", "false", "GOOS", "linux", "GOARCH", "amd64")},
			"(devel) (no VCS revision recorded) go1.26.8 linux/amd64"},
	} {
		if got := Of(&tc.bi); got != tc.want {
			t.Errorf("Of = %q, want %q", got, tc.want)
		}
	}
}
