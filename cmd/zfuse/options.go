package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Mount options (-o) are the flags of zfuse mount in mount(8)'s spelling:
// -o ro,cache_decoded=2GiB,as_v2 is --cache-decoded 2GiB --as-v2. They are
// what /etc/fstab lines and `mount -t fuse.zfuse` pass, through mount.fuse3,
// which runs
//
//	zfuse SOURCE MOUNTPOINT -o OPTIONS
//
// (checked with fuse3 3.14 on Debian 12: mount(8) clears PATH, so zfuse
// must be in /usr/local/bin, /usr/bin or /bin; mount.fuse3 drops _netdev,
// nofail, auto, noauto, user, users and x-* and appends dev,suid).

// An optionsFlag is the -o flag: each option sets the flag of its name, in
// the FlagSet, so that options and flags are parsed alike and a later one
// wins.
type optionsFlag struct{ fl *flag.FlagSet }

func (o optionsFlag) String() string { return "" }

func (o optionsFlag) Set(s string) error {
	for _, opt := range splitOptions(s) {
		name, value, hasValue := strings.Cut(opt, "=")
		if name == "" || ignoredOption(name) {
			continue
		}
		flagName := strings.ReplaceAll(name, "_", "-")
		f := o.fl.Lookup(flagName)
		if f == nil || len(flagName) == 1 {
			return fmt.Errorf("unknown mount option %q: the options are the flags of zfuse mount, spelled with _ (cache_decoded=2GiB for --cache-decoded 2GiB)", name)
		}
		b, isBool := f.Value.(interface{ IsBoolFlag() bool })
		isBool = isBool && b.IsBoolFlag()
		switch {
		case !hasValue && !isBool:
			return fmt.Errorf("mount option %s needs a value (%s=...)", name, name)
		case !hasValue:
			value = "true"
		case isBool:
			if _, err := strconv.ParseBool(value); err != nil {
				return fmt.Errorf("mount option %s: want %s alone, or %s=true or false", opt, name, name)
			}
		}
		if err := o.fl.Set(flagName, value); err != nil {
			return fmt.Errorf("mount option %s: %w", opt, err)
		}
	}
	return nil
}

// splitOptions splits a comma-separated option list; "\," is a comma
// inside a value.
func splitOptions(s string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == ',':
			cur.WriteByte(',')
			i++
		case s[i] == ',':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(s[i])
		}
	}
	return append(out, cur.String())
}

// genericOptions are mount(8)'s own options and FUSE options that zfuse
// does not need. zfuse is always read-only, so "rw" (mount's default, as
// in "defaults") changes nothing either.
var genericOptions = []string{
	"ro", "rw", "defaults", "dev", "nodev", "suid", "nosuid", "exec", "noexec",
	"sync", "async", "dirsync", "atime", "noatime", "diratime", "nodiratime",
	"relatime", "norelatime", "strictatime", "nostrictatime", "lazytime", "nolazytime",
	"auto", "noauto", "user", "nouser", "users", "owner", "group", "nofail", "_netdev",
	"comment", "default_permissions", "fsname", "subtype",
}

func ignoredOption(name string) bool {
	return slices.Contains(genericOptions, name) || strings.HasPrefix(name, "x-")
}

// helperArgs turns mount.fuse3's command line, SOURCE MOUNTPOINT [-o
// OPTIONS]... [-f], into zfuse mount's: mount --background [-o
// OPTIONS]... SOURCE MOUNTPOINT, or with -f (libfuse's "foreground") mount
// in the foreground. It reports false for anything else: the first
// argument must not be a command or a flag and the second must be a
// directory, as a mountpoint is.
func helperArgs(args []string, commands []string) ([]string, bool, error) {
	if len(args) < 2 || slices.Contains(commands, args[0]) || strings.HasPrefix(args[0], "-") {
		return nil, false, nil
	}
	if fi, err := os.Stat(args[1]); err != nil || !fi.IsDir() {
		return nil, false, nil
	}
	out := []string{"mount"}
	background := true
	rest := args[2:]
	for i := 0; i < len(rest); i++ {
		switch a := rest[i]; {
		case a == "-f":
			background = false
		case a == "-o" && i+1 < len(rest):
			out = append(out, "-o", rest[i+1])
			i++
		case strings.HasPrefix(a, "-o") && len(a) > 2:
			out = append(out, "-o", a[2:])
		default:
			return nil, true, fmt.Errorf("zfuse SOURCE MOUNTPOINT (as mount.fuse3 runs it) takes only -o OPTIONS and -f, not %q", a)
		}
	}
	if background {
		out = append(out, "--background")
	}
	return append(out, "--", args[0], args[1]), true, nil
}
