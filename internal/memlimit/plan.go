package memlimit

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/zfuse/zfuse/internal/bytesize"
)

// A mount runs where its readers run: in a Kubernetes pod, a Slurm job, a
// systemd service, each with a memory limit, and a mount that outgrows it
// is killed by the kernel in the middle of a read. So at start it finds
// the limit it runs under (Find), or takes one given (--memory-limit),
// and sizes the budgets not given on the command line so that they and
// the mount's own memory fit Share of it (NewPlan); budgets given that do
// not fit are refused, unless the caller accepts them (--allow-over-limit).
// The soft memory limit (GOMEMLIMIT) is set from the budgets within the
// same share (Plan.SoftLimit), and a Watcher sheds the caches when the
// cgroup nears its limit all the same (pressure.go).

// Share is the share of the memory limit a mount plans to hold, its
// budgets and its own memory together: with the collector's default GOGC
// the heap grows to the soft memory limit, so that is what the mount
// holds, with its memfds. The rest is for what the mount cannot bound:
// memfds that readers hold open after the decoded tier let them go, the
// kernel's charges for sockets and FUSE requests. The peak usage of a
// mount scanning an array of 4 times a 256 MiB limit with four readers
// stayed under the limit on every serving path, local and remote, at this
// share (docs/operations.md).
const Share = 0.75

// OwnMemory is what a mount holds besides its budgets: the Go runtime and
// the binary, go-fuse's request buffers, the buffers the loader pools for
// the next decodes and reads, stored values being fetched. Measured as
// the peak usage of the cgroup less the budgets, on small budgets
// (docs/operations.md). It is counted against the limit before the
// budgets, and it is the heap a mount may use beyond its budgets
// (SoftLimit).
const OwnMemory = 40 << 20

// Own is a mount's own memory: OwnMemory, and where decoded chunks are
// files (memfds, under passthrough) freeFiles more, the chunk files the
// loader keeps for the next chunks once nobody holds theirs
// (readahead.FreeFileBytes): memory outside the heap and every budget.
func Own(memfds bool, freeFiles int64) int64 {
	if memfds {
		return OwnMemory + freeFiles
	}
	return OwnMemory
}

// Budgets are the byte budgets of the loader's three tiers.
type Budgets struct {
	Decoded, Compressed, Readahead int64
}

// Sum is the three budgets together.
func (b Budgets) Sum() int64 { return b.Decoded + b.Compressed + b.Readahead }

// Scaled returns b times s, each rounded down.
func (b Budgets) Scaled(s float64) Budgets {
	return Budgets{int64(float64(b.Decoded) * s), int64(float64(b.Compressed) * s), int64(float64(b.Readahead) * s)}
}

// The flags of the budgets, as PlanConfig.Given, Plan.Sized and the errors
// name them.
const (
	FlagDecoded    = "cache-decoded"
	FlagCompressed = "cache-compressed"
	FlagReadahead  = "readahead"
)

// Budget weights: how the room under a limit is shared between the
// budgets not given, none above its default.
const (
	decodedWeight    = 2
	readaheadWeight  = 1
	compressedWeight = 1
)

// A PlanConfig is what NewPlan fits.
type PlanConfig struct {
	Limit     int64           // the limit to fit (--memory-limit); 0: Find it
	Budgets   Budgets         // as given on the command line, or by default
	Given     map[string]bool // the flags (FlagDecoded, ...) of the budgets given
	Memfds    bool            // plan for decoded chunks in memfds (passthrough)
	FreeFiles int64           // what the loader keeps of chunk files under passthrough (Own)
}

// A Plan is how a mount's memory fits the limit it runs under.
type Plan struct {
	Found     Limit    // what Find found; Bytes 0 when it failed
	Limit     int64    // the limit the budgets fit: PlanConfig.Limit, else Found.Bytes; 0: none known
	From      string   // where Limit comes from: "--memory-limit", "cgroup v1 /sys/...", "machine memory"
	Budgets   Budgets  // as planned
	Memfds    bool     // planned for passthrough: decoded chunks in memfds
	FreeFiles int64    // PlanConfig.FreeFiles
	Sized     []string // the flags of the budgets sized to fit (not given, and lowered)
	Over      bool     // the budgets given do not fit the limit (NewPlan's error says how)
}

// NewPlan fits the budgets of c that were not given to the memory limit:
// c.Limit, else the one Find finds in fsys (os.DirFS("/")). Where the
// budgets given do not fit, it returns an error saying so and a plan of
// the budgets as they are, Over set, for a caller that starts all the
// same (--allow-over-limit).
func NewPlan(fsys fs.FS, c PlanConfig) (*Plan, error) {
	p := &Plan{Memfds: c.Memfds, FreeFiles: c.FreeFiles, Budgets: c.Budgets}
	if found, err := Find(fsys); err == nil {
		p.Found = found
		p.Limit, p.From = found.Bytes, found.From()
	}
	if c.Limit > 0 {
		p.Limit, p.From = c.Limit, "--memory-limit"
	}
	if p.Limit <= 0 {
		return p, nil // nothing to fit: the budgets as they are
	}
	b, sized, err := fit(p.Limit, c.Budgets, c.Given, Own(c.Memfds, c.FreeFiles))
	if err != nil {
		p.Over = true
		return p, fmt.Errorf("%w (%s)", err, p.From)
	}
	p.Budgets, p.Sized = b, sized
	return p, nil
}

// A tier's budget in fit.
type tier struct {
	flag   string
	v      *int64
	weight int64 // its share of the room
}

// fit fits b, whose budgets named in given were set on the command line
// and the others are defaults, to Share of limit, less the mount's own
// memory own: when they do not fit, the budgets not given share what the
// given ones leave by weight, each at most its default (a default of 0,
// the compressed tier of a local store, stays 0), rounded down to whole
// MiB. It returns the budgets and the flags of those it lowered; when the
// given ones alone do not fit, an error saying so.
func fit(limit int64, b Budgets, given map[string]bool, own int64) (Budgets, []string, error) {
	room := int64(Share*float64(limit)) - own
	if b.Sum() <= room {
		return b, nil, nil
	}
	out := b
	tiers := []tier{{FlagDecoded, &out.Decoded, decodedWeight}, {FlagReadahead, &out.Readahead, readaheadWeight}, {FlagCompressed, &out.Compressed, compressedWeight}}
	var fixed int64
	var free []tier
	var named []string
	for _, t := range tiers {
		switch {
		case given[t.flag]:
			fixed += *t.v
			named = append(named, fmt.Sprintf("--%s %s", t.flag, bytesize.Format(*t.v)))
		case *t.v > 0:
			free = append(free, t)
		}
	}
	if room <= 0 && fixed == 0 {
		return b, nil, fmt.Errorf("%.0f%% of the memory limit of %s leaves no room for caches beside the mount's own %s",
			Share*100, bytesize.Format(limit), bytesize.Format(own))
	}
	if fixed > room {
		return b, nil, fmt.Errorf("%s with the mount's own %s need %s, more than %.0f%% of the memory limit of %s",
			strings.Join(named, " and "), bytesize.Format(own), bytesize.Format(fixed+own), Share*100, bytesize.Format(limit))
	}
	share(free, room-fixed)
	var sized []string
	for i, t := range tiers {
		if *t.v < []int64{b.Decoded, b.Readahead, b.Compressed}[i] {
			sized = append(sized, t.flag)
		}
	}
	return out, sized, nil
}

// share shares left between the tiers free by weight, water-filling: a
// tier whose share is above its budget keeps it, and the others share
// the rest again; the shares are rounded down to whole MiB.
func share(free []tier, left int64) {
	for len(free) > 0 {
		var w int64
		for _, t := range free {
			w += t.weight
		}
		i := slices.IndexFunc(free, func(t tier) bool { return *t.v <= left*t.weight/w })
		if i < 0 {
			for _, t := range free {
				*t.v = (left * t.weight / w) &^ (1<<20 - 1)
			}
			return
		}
		left -= *free[i].v
		free = slices.Delete(free, i, i+1)
	}
}

// SoftLimit is the soft memory limit (debug.SetMemoryLimit) for budgets b
// on a serving path where decoded chunks are files (passthrough) or not:
// the budgets on the heap (all but the decoded tier where that is files)
// and OwnMemory for the rest of the heap (pooled buffers, go-fuse's
// request buffers, the runtime), but no more than leaves the files (the
// decoded and readahead budgets, and the free ones) room within Share of
// the limit, unless budgets over it were accepted; at least 32 MiB. With
// GOGC at its default the heap grows to this before the collector runs.
func (p *Plan) SoftLimit(b Budgets, memfds bool) int64 {
	heap := b.Sum() + OwnMemory
	var files int64
	if memfds {
		heap -= b.Decoded
		files = b.Decoded + b.Readahead + p.FreeFiles
	}
	if p.Limit > 0 && !p.Over {
		heap = min(heap, int64(Share*float64(p.Limit))-files)
	}
	return max(heap, 32<<20)
}

// Kind says where the limit comes from in a word or two, for the metrics:
// "cgroup v1", "cgroup v2", "machine" or "flag" (--memory-limit).
func (p *Plan) Kind() string {
	switch {
	case p.From == "--memory-limit":
		return "flag"
	case p.Found.Cgroup.Version > 0:
		return fmt.Sprintf("cgroup v%d", p.Found.Cgroup.Version)
	}
	return "machine"
}
