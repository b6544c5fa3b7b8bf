package csidriver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The state directory holds one record per published target, so that a
// plugin started after another (an upgrade, a crash) finds the servers
// that the old one started, and can unpublish their volumes:
//
//	STATE/volumes/KEY.json   the record (mode 0600, written atomically)
//	STATE/logs/KEY.log       the server's log (owned by the server's user)
//
// KEY is a hash of the target path: one volume may be published at several
// targets (a static PV in two pods on one node), each with a server of its
// own. Records hold no secrets.

// A record is what the driver knows about one published target.
type record struct {
	VolumeID string    `json:"volume_id"`
	Target   string    `json:"target"`
	Source   string    `json:"source"`
	Flags    []string  `json:"flags"`            // zfuse mount's flags from the attributes
	Pid      int       `json:"pid"`              // the server
	Start    uint64    `json:"start"`            // its start time (/proc/PID/stat), against pid reuse
	Cgroup   string    `json:"cgroup,omitempty"` // the server's own cgroup, removed after it
	Time     time.Time `json:"time"`             // when it was published
}

// sameSettings reports whether r was published with the settings s.
func (r *record) sameSettings(s Settings) bool {
	return r.Source == s.Source && slices.Equal(r.Flags, s.Flags)
}

// A stateDir is the state directory. Its methods are safe for concurrent
// use on different targets; the driver never works on one target twice
// at once.
type stateDir struct {
	dir string // immutable
}

// openState creates the state directory's layout under dir, if missing.
// The logs directory is searchable by everyone (0711): the servers, which
// run as another user, open their log files by name.
func openState(dir string) (*stateDir, error) {
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{dir, 0o711}, {filepath.Join(dir, "volumes"), 0o700}, {filepath.Join(dir, "logs"), 0o711}} {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			return nil, fmt.Errorf("state directory: %w", err)
		}
		if err := os.Chmod(d.path, d.mode); err != nil {
			return nil, fmt.Errorf("state directory: %w", err)
		}
	}
	return &stateDir{dir: dir}, nil
}

// key names the files of target.
func key(target string) string {
	h := sha256.Sum256([]byte(filepath.Clean(target)))
	return hex.EncodeToString(h[:12])
}

func (s *stateDir) recordPath(target string) string {
	return filepath.Join(s.dir, "volumes", key(target)+".json")
}

// logPath is the server log of target.
func (s *stateDir) logPath(target string) string {
	return filepath.Join(s.dir, "logs", key(target)+".log")
}

// save writes r, replacing the record of its target.
func (s *stateDir) save(r *record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	p := s.recordPath(r.Target)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

// load returns the record of target, or nil if there is none.
func (s *stateDir) load(target string) (*record, error) {
	b, err := os.ReadFile(s.recordPath(target))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("state %s: %w", s.recordPath(target), err)
	}
	return &r, nil
}

// remove removes the record and the log of target; it is no error when
// they are gone already.
func (s *stateDir) remove(target string) error {
	for _, p := range []string{s.recordPath(target), s.logPath(target)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("state: %w", err)
		}
	}
	return nil
}

// all returns every record, and the files that hold none (unreadable or
// not JSON), which the caller reports.
func (s *stateDir) all() ([]*record, []string, error) {
	es, err := os.ReadDir(filepath.Join(s.dir, "volumes"))
	if err != nil {
		return nil, nil, fmt.Errorf("state: %w", err)
	}
	var rs []*record
	var bad []string
	for _, e := range es {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		p := filepath.Join(s.dir, "volumes", name)
		var r record
		b, err := os.ReadFile(p)
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil || r.Target == "" {
			bad = append(bad, p)
			continue
		}
		rs = append(rs, &r)
	}
	return rs, bad, nil
}
