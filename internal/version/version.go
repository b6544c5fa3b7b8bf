// Package version says what a zfuse binary was built from: zfuse version
// prints it, and the CSI plugin reports it to the kubelet.
package version

import (
	"cmp"
	"runtime/debug"
	"strings"
)

// String is the version of the running binary (Of its build information).
func String() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(no build information)"
	}
	return Of(bi)
}

// Of is what the go command recorded of a build: the module version
// ("(devel)" unless built by go install MODULE@VERSION), the VCS
// revision, its commit time and whether the tree had changes, and the Go
// version and platform, e.g. "(devel) 1a5127b4f5b3... 2026-12-01T20:01:56Z
// modified go1.26.8 linux/amd64". Without VCS information (-buildvcs=false,
// a tarball, a git worktree, which the go command does not stamp) it says so.
func Of(bi *debug.BuildInfo) string {
	set := map[string]string{}
	for _, s := range bi.Settings {
		set[s.Key] = s.Value
	}
	parts := []string{cmp.Or(bi.Main.Version, "(devel)")}
	if rev := set["vcs.revision"]; rev != "" {
		parts = append(parts, rev)
		if t := set["vcs.time"]; t != "" {
			parts = append(parts, t)
		}
		if set["vcs.modified"] == "true" {
			parts = append(parts, "modified")
		}
	} else {
		parts = append(parts, "(no VCS revision recorded)")
	}
	parts = append(parts, bi.GoVersion)
	if set["GOOS"] != "" {
		parts = append(parts, set["GOOS"]+"/"+set["GOARCH"])
	}
	return strings.Join(parts, " ")
}
