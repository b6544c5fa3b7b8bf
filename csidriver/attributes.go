package csidriver

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A volume's attributes (a PV's volumeAttributes, or an inline ephemeral
// volume's in a pod spec) are its mount settings: "source", and the flags
// of zfuse mount by name. Whoever may create a pod may write an inline
// volume's attributes, so they are untrusted input: only the flags below
// are taken, each passed to zfuse mount as --name=value, after which the
// server's own flag parsing checks the value.

// sourceKey names the attribute holding SOURCE.
const sourceKey = "source"

// podInfoPrefix starts the keys the kubelet adds to the attributes
// (CSIDriver podInfoOnMount: pod name, namespace, uid, service account,
// and whether the volume is ephemeral). They are accepted and ignored.
const podInfoPrefix = "csi.storage.k8s.io/"

// mountFlags are the flags of zfuse mount that a volume may set, and
// whether each is a boolean flag (its value then must parse as one).
var mountFlags = map[string]bool{
	"as-v2": true, "as-npy": true, "as-nc": true, "s3-path-style": true, "allow-over-limit": true, "layout": false,
	"cache-decoded": false, "cache": false, "cache-compressed": false, "readahead": false,
	"memory-limit": false, "workers": false, "decoder": false, "serving": false, "transport": false, "refresh": false,
	"s3-endpoint": false, "s3-region": false, "http-max-inflight": false, "http-timeout": false,
	"array": false, "metrics": false, "log-level": false,
}

// driverFlags are the flags of zfuse mount that the driver sets itself or
// keeps from volumes, with the reason an attribute naming one is refused.
var driverFlags = map[string]string{
	"background":        "the driver starts the server",
	"d":                 "the driver starts the server",
	"log-file":          "the driver chooses the server's log file",
	"stats-file":        "a volume may not choose files the server writes on the node",
	"cpu-profile":       "a volume may not choose files the server writes on the node",
	"cache-dir":         "a volume may not choose files the server writes on the node",
	"cache-dir-size":    "the disk cache (cache-dir) is not offered to volumes",
	"cache-dir-max-age": "the disk cache (cache-dir) is not offered to volumes",
	"allow-other":       "the driver mounts with allow_other",
	"allow-non-empty":   "the driver mounts the target itself, which the kubelet makes",
	"kernel-readahead":  "the server runs without root and cannot set it",
	"o":                 "give each flag as an attribute of its own",
}

// secretEnv are the keys a volume's secrets (nodePublishSecretRef) may
// hold: each is passed to the server as the environment variable of its
// name, where the S3 client finds credentials, never on its command line
// (which /proc shows to every user) nor in a log.
var secretEnv = []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}

// Settings are a volume's mount settings, parsed from its attributes and
// secrets.
type Settings struct {
	Source string   // the store: a directory, an http(s):// or s3:// URL
	Flags  []string // zfuse mount's flags, --name=value, sorted by name
	Env    []string // KEY=value from the secrets, sorted; never log these
}

// parseSettings returns the settings of a volume with the attributes
// attrs and the secrets secrets. A local source must lie in one of
// localDirs (absolute, clean): the server can read whatever its user may
// on the node, and a pod should reach only the stores the node's
// administrator offers. The error says which attributes or secrets are
// wrong, naming the keys, never a secret's value.
func parseSettings(attrs, secrets map[string]string, localDirs []string) (Settings, error) {
	var s Settings
	var unknown, refused, bad []string
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		v := attrs[k]
		isBool, ok := mountFlags[k]
		switch {
		case k == sourceKey:
			s.Source = v
		case strings.HasPrefix(k, podInfoPrefix):
		case driverFlags[k] != "":
			refused = append(refused, fmt.Sprintf("%s (%s)", k, driverFlags[k]))
		case !ok:
			unknown = append(unknown, k)
		case isBool:
			b, err := strconv.ParseBool(v)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s=%q (want true or false)", k, v))
				continue
			}
			s.Flags = append(s.Flags, fmt.Sprintf("--%s=%t", k, b))
		case k == "array":
			for _, a := range strings.Split(v, ",") {
				if a = strings.TrimSpace(a); a != "" {
					s.Flags = append(s.Flags, "--array="+a)
				}
			}
		default:
			s.Flags = append(s.Flags, fmt.Sprintf("--%s=%s", k, v))
		}
	}
	var problems []string
	if len(unknown) > 0 {
		problems = append(problems, fmt.Sprintf("unknown attributes %s (known: source and %s)", strings.Join(unknown, ", "), strings.Join(slices.Sorted(maps.Keys(mountFlags)), ", ")))
	}
	if len(refused) > 0 {
		problems = append(problems, "attributes a volume may not set: "+strings.Join(refused, "; "))
	}
	if len(bad) > 0 {
		problems = append(problems, "bad values: "+strings.Join(bad, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(secrets)) {
		if !slices.Contains(secretEnv, k) {
			problems = append(problems, fmt.Sprintf("unknown secret %s (known: %s)", k, strings.Join(secretEnv, ", ")))
			continue
		}
		s.Env = append(s.Env, k+"="+secrets[k])
	}
	if err := checkSource(s.Source, localDirs); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return Settings{}, fmt.Errorf("volume attributes: %s", strings.Join(problems, "; "))
	}
	return s, nil
}

// checkSource checks what can be checked of a source without opening it:
// that there is one, that it is no flag, and that a local one is an
// absolute path in one of localDirs.
func checkSource(src string, localDirs []string) error {
	scheme, _, remote := strings.Cut(src, "://")
	switch {
	case src == "":
		return fmt.Errorf("attribute %q is missing: the store to mount, a directory or an http(s):// or s3:// URL", sourceKey)
	case strings.HasPrefix(src, "-"):
		return fmt.Errorf("attribute %q is %q: a store, not a flag", sourceKey, src)
	case remote:
		switch strings.ToLower(scheme) {
		case "http", "https", "s3":
			return nil
		}
		return fmt.Errorf("attribute %q: unsupported scheme %q (want a directory, http://, https:// or s3://)", sourceKey, scheme)
	case !filepath.IsAbs(src):
		return fmt.Errorf("attribute %q is %q: a local store needs an absolute path", sourceKey, src)
	}
	clean := filepath.Clean(src)
	for _, d := range localDirs {
		if clean == d || strings.HasPrefix(clean, strings.TrimSuffix(d, "/")+"/") {
			return nil
		}
	}
	if len(localDirs) == 0 {
		return fmt.Errorf("attribute %q is the directory %s: this node offers no local stores (zfuse csi --local-dir)", sourceKey, src)
	}
	return fmt.Errorf("attribute %q is the directory %s, outside the directories this node offers (%s)", sourceKey, src, strings.Join(localDirs, ", "))
}

// Flags returns the flags of zfuse mount that volumes may set (name: is a
// boolean flag) and those they may not (name: why), for zfuse's own tests
// to check against zfuse mount's flags: every flag is in one of them.
func Flags() (taken map[string]bool, refused map[string]string) {
	return maps.Clone(mountFlags), maps.Clone(driverFlags)
}
