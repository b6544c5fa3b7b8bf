package main

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"slices"
	"strings"

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/internal/bytesize"
	"github.com/zfuse/zfuse/internal/memlimit"
)

// A mount runs where its readers run: in a Kubernetes pod, a Slurm job, a
// systemd service, each with a memory limit, and a mount that outgrows it
// is killed by the kernel in the middle of a read. So at start zfuse finds
// the limit it runs under (internal/memlimit: its memory cgroup's, else
// the machine's memory), or takes --memory-limit, and sizes the budgets
// not given on the command line so that they and the process's own memory
// fit memoryShare of it; budgets given that do not fit are refused, unless
// --allow-over-limit. The soft memory limit (GOMEMLIMIT) is set from the
// budgets within the same share, and the pressure watcher (pressure.go)
// sheds the caches when the cgroup nears its limit all the same.

// memoryShare is the share of the memory limit the mount plans to hold,
// its budgets and its own memory together: with the collector's default
// GOGC the heap grows to the soft memory limit, so that is what the mount
// holds, with its memfds. The rest is for what the mount cannot bound:
// memfds that readers hold open after the decoded tier let them go, the
// kernel's charges for sockets and FUSE requests. The peak usage of a
// mount scanning an array of 4 times a 256 MiB limit with four readers
// stayed under the limit on every serving path, local and remote, at this
// share (docs/operations.md).
const memoryShare = 0.75

// ownMemory is what the mount holds besides its budgets, counted against
// the limit before them: the Go runtime and the binary, go-fuse's request
// buffers, the pooled buffers kept for the next decodes and reads (up to
// 32 and 16 MiB), stored values being fetched. Measured as the peak usage
// of the cgroup less the budgets, on small budgets (docs/operations.md).
const ownMemory = 40 << 20

// freeFiles is what passthrough holds besides: chunk files kept for the
// next chunks once nobody holds theirs (readahead's memFiles, up to 32
// MiB), which are memory outside the heap and every budget.
const freeFiles = 32 << 20

// own is the mount's own memory on a serving path where decoded chunks
// are files (passthrough) or not.
func own(memfds bool) int64 {
	if memfds {
		return ownMemory + freeFiles
	}
	return ownMemory
}

// Budget weights: how the room under a limit is shared between the
// budgets not given, none above its default.
const (
	decodedWeight    = 2
	readaheadWeight  = 1
	compressedWeight = 1
)

// memoryFlags are the flags that set the limit the budgets fit.
type memoryFlags struct {
	limit     Size // --memory-limit; 0: find it
	overLimit bool // --allow-over-limit
}

func addMemoryFlags(fl *flag.FlagSet) *memoryFlags {
	f := &memoryFlags{}
	fl.Var(&f.limit, "memory-limit", "mount: the memory limit to fit, as if the mount ran in a memory cgroup of that size (default: its memory cgroup's limit, else the machine's memory); budgets not given are sized to fit 75% of it")
	fl.BoolVar(&f.overLimit, "allow-over-limit", false, "mount: where the budgets given (--cache-decoded, --cache-compressed, --readahead) do not fit the memory limit, start with them and the defaults all the same; the kernel may then kill the mount")
	return f
}

// budgets are the byte budgets of the loader's three tiers.
type budgets struct {
	decoded, compressed, readahead int64
}

func (b budgets) sum() int64 { return b.decoded + b.compressed + b.readahead }

// scaled returns b times s, each rounded down.
func (b budgets) scaled(s float64) budgets {
	return budgets{int64(float64(b.decoded) * s), int64(float64(b.compressed) * s), int64(float64(b.readahead) * s)}
}

// A memoryPlan is how a mount's memory fits the limit it runs under.
type memoryPlan struct {
	found   memlimit.Limit // what memlimit.Find found; Bytes 0 when it failed
	limit   int64          // the limit the budgets fit: --memory-limit, else found.Bytes; 0: none known
	from    string         // where limit comes from: "--memory-limit", "cgroup v1 /sys/...", "machine memory"
	budgets budgets        // as planned
	memfds  bool           // planned for passthrough (--serving): decoded chunks in memfds
	sized   []string       // the flags of the budgets sized to fit (not given, and lowered)
	over    bool           // the budgets given do not fit the limit, and --allow-over-limit accepts that
}

// planMemory fits the budgets of lf that the command line did not set
// (fl) to the memory limit: mf's, else the one found in fsys (os.DirFS("/")),
// and sets them in lf. Budgets given that do not fit are a usage error of
// cmd, unless --allow-over-limit. remote says the source is a URL (its
// compressed tier is on by default).
func planMemory(cmd string, fl *flag.FlagSet, lf *loaderFlags, mf *memoryFlags, fsys fs.FS) (*memoryPlan, error) {
	p := &memoryPlan{memfds: lf.serving == fusemount.Passthrough}
	found, err := memlimit.Find(fsys)
	if err == nil {
		p.found = found
		p.limit, p.from = found.Bytes, found.From()
	}
	if mf.limit > 0 {
		p.limit, p.from = int64(mf.limit), "--memory-limit"
	}
	given := map[string]bool{}
	fl.Visit(func(f *flag.Flag) {
		name := f.Name
		if name == "cache" {
			name = "cache-decoded"
		}
		given[name] = true
	})
	b := budgets{int64(lf.decoded), int64(lf.compressed), int64(lf.readahead)}
	if p.limit <= 0 {
		p.budgets = b
		return p, nil // nothing to fit: the budgets as they are
	}
	b, p.sized, err = fitBudgets(p.limit, b, given, p.memfds)
	if err != nil && !mf.overLimit {
		return nil, badUsage(cmd, "%v (%s): give smaller budgets, or --memory-limit, or --allow-over-limit to start all the same", err, p.from)
	}
	p.over = err != nil // then b is as given and by default
	p.budgets = b
	lf.decoded, lf.compressed, lf.readahead = Size(b.decoded), Size(b.compressed), Size(b.readahead)
	return p, nil
}

// A tier's budget in fitBudgets.
type tier struct {
	flag   string
	v      *int64
	weight int64 // its share of the room
}

// fitBudgets fits b, whose budgets named in given were set on the command
// line and the others are defaults, to memoryShare of limit, less the
// mount's own memory (own; more where memfds, under passthrough): when
// they do not fit, the budgets not given share what the given ones leave
// by weight, each at most its default (a default of 0, the compressed tier
// of a local store, stays 0), rounded down to whole MiB. It returns the
// budgets and the flags of those it lowered; when the given ones alone do
// not fit, b as it is and an error saying so.
func fitBudgets(limit int64, b budgets, given map[string]bool, memfds bool) (budgets, []string, error) {
	room := int64(memoryShare*float64(limit)) - own(memfds)
	if b.sum() <= room {
		return b, nil, nil
	}
	out := b
	tiers := []tier{{"cache-decoded", &out.decoded, decodedWeight}, {"readahead", &out.readahead, readaheadWeight}, {"cache-compressed", &out.compressed, compressedWeight}}
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
			memoryShare*100, bytesize.Format(limit), bytesize.Format(own(memfds)))
	}
	if fixed > room {
		return b, nil, fmt.Errorf("%s with the mount's own %s need %s, more than %.0f%% of the memory limit of %s",
			strings.Join(named, " and "), bytesize.Format(own(memfds)), bytesize.Format(fixed+own(memfds)), memoryShare*100, bytesize.Format(limit))
	}
	// Water-filling: share the room left by weight; a tier whose share
	// is above its default keeps its default, and the others share the
	// rest again.
	left := room - fixed
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
			break
		}
		left -= *free[i].v
		free = slices.Delete(free, i, i+1)
	}
	var sized []string
	for i, t := range tiers {
		if *t.v < []int64{b.decoded, b.readahead, b.compressed}[i] {
			sized = append(sized, t.flag)
		}
	}
	return out, sized, nil
}

// heapSlack is the heap a mount may use beyond its budgets, measured: at
// budgets of 16 MiB a mount with a slack of 64 MiB held 88 MiB of RSS.
const heapSlack = 40 << 20

// softLimit is the soft memory limit (debug.SetMemoryLimit) for budgets b
// on a serving path where decoded chunks are files (passthrough) or not:
// the budgets on the heap (all but the decoded tier where that is files)
// and heapSlack for the rest of it (pooled buffers, go-fuse's request
// buffers, the runtime), leaving the 64 MiB that a mount may hold beyond
// its budgets room for what is not heap (the binary, thread stacks), but
// no more than leaves the files (the
// decoded and readahead budgets, and the free ones) room within
// memoryShare of the limit, unless budgets over it were accepted; at
// least 32 MiB. With GOGC at its default the heap grows to this before
// the collector runs.
func (p *memoryPlan) softLimit(b budgets, memfds bool) int64 {
	heap := b.sum() + heapSlack
	var files int64
	if memfds {
		heap -= b.decoded
		files = b.decoded + b.readahead + freeFiles
	}
	if p.limit > 0 && !p.over {
		heap = min(heap, int64(memoryShare*float64(p.limit))-files)
	}
	return max(heap, 32<<20)
}

// kind says where the limit comes from in a word or two, for the metrics:
// "cgroup v1", "cgroup v2", "machine" or "flag" (--memory-limit).
func (p *memoryPlan) kind() string {
	switch {
	case p.from == "--memory-limit":
		return "flag"
	case p.found.Cgroup.Version > 0:
		return fmt.Sprintf("cgroup v%d", p.found.Cgroup.Version)
	}
	return "machine"
}

// attrs are the plan's log attributes: the limit and where it comes from,
// the budgets, and which were sized to fit.
func (p *memoryPlan) attrs() []any {
	limit := "none found"
	if p.limit > 0 {
		limit = bytesize.Format(p.limit)
	}
	a := []any{"limit", limit, "from", p.from,
		"decoded", bytesize.Format(p.budgets.decoded), "readahead", bytesize.Format(p.budgets.readahead), "compressed", bytesize.Format(p.budgets.compressed)}
	if len(p.sized) > 0 {
		a = append(a, "sized", strings.Join(p.sized, ","))
	}
	if p.over {
		a = append(a, "over_limit", true)
	}
	return a
}

// logPlan logs the plan, the mount's first line: at Warn where budgets
// over the limit were accepted.
func (p *memoryPlan) logPlan(log *slog.Logger) {
	if p.over {
		log.Warn("memory: the budgets do not fit the limit (--allow-over-limit); the kernel may kill the mount", p.attrs()...)
		return
	}
	log.Info("memory limit", p.attrs()...)
}

// print writes zfuse info's memory line.
func (p *memoryPlan) print(w io.Writer) error {
	limit := "none found"
	if p.limit > 0 {
		limit = fmt.Sprintf("%s (%s)", bytesize.Format(p.limit), p.from)
	}
	how := "as given or by default"
	switch {
	case p.over:
		how = "over the limit, by --allow-over-limit"
	case len(p.sized) > 0:
		how = fmt.Sprintf("%s sized to fit %.0f%% of the limit", strings.Join(p.sized, ", "), memoryShare*100)
	}
	_, err := fmt.Fprintf(w, "memory (zfuse mount): limit %s; budgets decoded %s, readahead %s, compressed %s (%s)\n", limit,
		bytesize.Format(p.budgets.decoded), bytesize.Format(p.budgets.readahead), bytesize.Format(p.budgets.compressed), how)
	return err
}
