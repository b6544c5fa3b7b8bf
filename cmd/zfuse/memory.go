package main

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strings"

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/internal/bytesize"
	"github.com/zfuse/zfuse/internal/memlimit"
	"github.com/zfuse/zfuse/readahead"
)

// The memory plan of a mount (internal/memlimit): at start zfuse finds
// the limit it runs under, or takes --memory-limit, and sizes the budgets
// not given on the command line to fit it; a memlimit.Watcher sheds them
// under pressure while the mount runs. This file is the flags, and the
// plan as the log and zfuse info show it.

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

// planMemory fits the budgets of lf that the command line did not set
// (fl) to the memory limit: mf's, else the one found in fsys
// (os.DirFS("/")), and sets them in lf. Budgets given that do not fit are
// a usage error of cmd, unless --allow-over-limit.
func planMemory(cmd string, fl *flag.FlagSet, lf *loaderFlags, mf *memoryFlags, fsys fs.FS) (*memlimit.Plan, error) {
	given := map[string]bool{}
	fl.Visit(func(f *flag.Flag) {
		name := f.Name
		if name == "cache" {
			name = memlimit.FlagDecoded
		}
		given[name] = true
	})
	p, err := memlimit.NewPlan(fsys, memlimit.PlanConfig{
		Limit:     int64(mf.limit),
		Budgets:   memlimit.Budgets{Decoded: int64(lf.decoded), Compressed: int64(lf.compressed), Readahead: int64(lf.readahead)},
		Given:     given,
		Memfds:    lf.serving == fusemount.Passthrough,
		FreeFiles: readahead.FreeFileBytes,
	})
	if err != nil && !mf.overLimit {
		return nil, badUsage(cmd, "%v: give smaller budgets, or --memory-limit, or --allow-over-limit to start all the same", err)
	}
	b := p.Budgets
	lf.decoded, lf.compressed, lf.readahead = Size(b.Decoded), Size(b.Compressed), Size(b.Readahead)
	return p, nil
}

// planAttrs are the plan's log attributes: the limit and where it comes
// from, the budgets, and which were sized to fit.
func planAttrs(p *memlimit.Plan) []any {
	limit := "none found"
	if p.Limit > 0 {
		limit = bytesize.Format(p.Limit)
	}
	a := []any{"limit", limit, "from", p.From,
		"decoded", bytesize.Format(p.Budgets.Decoded), "readahead", bytesize.Format(p.Budgets.Readahead), "compressed", bytesize.Format(p.Budgets.Compressed)}
	if len(p.Sized) > 0 {
		a = append(a, "sized", strings.Join(p.Sized, ","))
	}
	if p.Over {
		a = append(a, "over_limit", true)
	}
	return a
}

// logPlan logs the plan, the mount's first line: at Warn where budgets
// over the limit were accepted.
func logPlan(log *slog.Logger, p *memlimit.Plan) {
	if p.Over {
		log.Warn("memory: the budgets do not fit the limit (--allow-over-limit); the kernel may kill the mount", planAttrs(p)...)
		return
	}
	log.Info("memory limit", planAttrs(p)...)
}

// printPlan writes zfuse info's memory line.
func printPlan(w io.Writer, p *memlimit.Plan) error {
	limit := "none found"
	if p.Limit > 0 {
		limit = fmt.Sprintf("%s (%s)", bytesize.Format(p.Limit), p.From)
	}
	how := "as given or by default"
	switch {
	case p.Over:
		how = "over the limit, by --allow-over-limit"
	case len(p.Sized) > 0:
		how = fmt.Sprintf("%s sized to fit %.0f%% of the limit", strings.Join(p.Sized, ", "), memlimit.Share*100)
	}
	_, err := fmt.Fprintf(w, "memory (zfuse mount): limit %s; budgets decoded %s, readahead %s, compressed %s (%s)\n", limit,
		bytesize.Format(p.Budgets.Decoded), bytesize.Format(p.Budgets.Readahead), bytesize.Format(p.Budgets.Compressed), how)
	return err
}
