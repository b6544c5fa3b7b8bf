package memlimit

import (
	"slices"
	"strings"
	"testing"
)

// freeFiles stands for readahead.FreeFileBytes, the chunk files kept
// under passthrough.
const freeFiles = 32 * mib

func TestFit(t *testing.T) {
	local := Budgets{Decoded: 1 << 30, Readahead: 256 * mib}
	remote := Budgets{Decoded: 1 << 30, Readahead: 256 * mib, Compressed: 512 * mib}
	for _, r := range []struct {
		name    string
		limit   int64
		b       Budgets
		given   []string
		want    Budgets
		sized   []string
		wantErr string
		memfds  bool
	}{
		{"defaults fit a big machine", 24 << 30, remote, nil, remote, nil, "", false},
		// 75% of 300 MiB less 40 MiB: 185 MiB, 2:1.
		{"local under 300 MiB", 300 * mib, local, nil, Budgets{Decoded: 123 * mib, Readahead: 61 * mib}, []string{"cache-decoded", "readahead"}, "", false},
		// 152 MiB, 2:1:1.
		{"remote under 256 MiB", 256 * mib, remote, nil, Budgets{Decoded: 76 * mib, Readahead: 38 * mib, Compressed: 38 * mib},
			[]string{"cache-decoded", "readahead", "cache-compressed"}, "", false},
		// 1496 MiB: readahead's share (374) is above its default, so it
		// keeps 256 and the others share the rest, 2:1.
		{"remote under 2 GiB", 2 << 30, remote, nil, Budgets{Decoded: 826 * mib, Readahead: 256 * mib, Compressed: 413 * mib},
			[]string{"cache-decoded", "cache-compressed"}, "", false},
		{"local under 2 GiB: the defaults fit", 2 << 30, local, nil, local, nil, "", false},
		{"given Decoded: readahead gets the rest", 256 * mib, Budgets{Decoded: 64 * mib, Readahead: 256 * mib}, []string{"cache-decoded"},
			Budgets{Decoded: 64 * mib, Readahead: 88 * mib}, []string{"readahead"}, "", false},
		{"given compressed 0 stays 0", 256 * mib, Budgets{Decoded: 1 << 30, Readahead: 256 * mib}, []string{"cache-compressed"},
			Budgets{Decoded: 101 * mib, Readahead: 50 * mib}, []string{"cache-decoded", "readahead"}, "", false},
		{"given ones fit exactly", 256 * mib, Budgets{Decoded: 100 * mib, Readahead: 52 * mib}, []string{"cache-decoded", "readahead"},
			Budgets{Decoded: 100 * mib, Readahead: 52 * mib}, nil, "", false},
		{"given ones too large", 300 * mib, local, []string{"cache-decoded"}, local, nil,
			"--cache-decoded 1 GiB with the mount's own 40 MiB need 1.0 GiB, more than 75% of the memory limit of 300 MiB", false},
		{"all given, too large", 300 * mib, remote, []string{"cache-decoded", "readahead", "cache-compressed"}, remote, nil,
			"--cache-decoded 1 GiB and --readahead 256 MiB and --cache-compressed 512 MiB with the mount's own 40 MiB need 1.8 GiB", false},
		{"a limit too small for anything", 32 * mib, local, nil, local, nil, "75% of the memory limit of 32 MiB leaves no room for caches", false},
		// Under passthrough the mount's own memory has 32 MiB of free
		// chunk files besides: 120 MiB, 2:1(:1).
		{"passthrough, local under 256 MiB", 256 * mib, local, nil, Budgets{Decoded: 80 * mib, Readahead: 40 * mib},
			[]string{"cache-decoded", "readahead"}, "", true},
		{"passthrough, remote under 256 MiB", 256 * mib, remote, nil, Budgets{Decoded: 60 * mib, Readahead: 30 * mib, Compressed: 30 * mib},
			[]string{"cache-decoded", "readahead", "cache-compressed"}, "", true},
		{"passthrough, local under 2 GiB: the defaults fit", 2 << 30, local, nil, local, nil, "", true},
		{"passthrough, given readahead too large", 256 * mib, Budgets{Decoded: 1 << 30, Readahead: 200 * mib}, []string{"readahead"},
			Budgets{Decoded: 1 << 30, Readahead: 200 * mib}, nil,
			"--readahead 200 MiB with the mount's own 72 MiB need 272 MiB, more than 75% of the memory limit of 256 MiB", true},
	} {
		t.Run(r.name, func(t *testing.T) {
			given := map[string]bool{}
			for _, g := range r.given {
				given[g] = true
			}
			got, sized, err := fit(r.limit, r.b, given, Own(r.memfds, freeFiles))
			switch {
			case r.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), r.wantErr) {
					t.Errorf("err %v, want %q", err, r.wantErr)
				}
			case err != nil:
				t.Errorf("err %v", err)
			}
			if got != r.want || !slices.Equal(sized, r.sized) {
				t.Errorf("fit = %+v, sized %v; want %+v, %v", got, sized, r.want, r.sized)
			}
			if err == nil && len(sized) > 0 && got.Sum()+Own(r.memfds, freeFiles) > int64(Share*float64(r.limit)) {
				t.Errorf("%+v and the mount's own memory are over %.2f of %d", got, Share, r.limit)
			}
		})
	}
}

func TestSoftLimit(t *testing.T) {
	b := Budgets{Decoded: 123 * mib, Readahead: 61 * mib}
	under := &Plan{Limit: 300 * mib, Budgets: b, FreeFiles: freeFiles}
	over := &Plan{Limit: 300 * mib, Budgets: b, Over: true, FreeFiles: freeFiles}
	none := &Plan{Budgets: b, FreeFiles: freeFiles}
	pt := &Plan{Limit: 256 * mib, Budgets: Budgets{Decoded: 80 * mib, Readahead: 40 * mib}, Memfds: true, FreeFiles: freeFiles}
	for _, r := range []struct {
		name   string
		p      *Plan
		b      Budgets
		memfds bool
		want   int64
	}{
		{"heap: the budgets and the slack, under 75% of the limit", under, b, false, 224 * mib},
		{"small budgets: budgets and 40 MiB", under, Budgets{Decoded: 20 * mib}, false, 60 * mib},
		{"over the limit, accepted", over, b, false, 224 * mib},
		{"no limit", none, b, false, 224 * mib},
		// 75% of 256 MiB less the files (80 + 40 + 32 free): 40 MiB,
		// below the 40 MiB of readahead and 64 on the heap.
		{"memfds: room left by them", pt, pt.Budgets, true, 40 * mib},
		{"memfds, no limit: all but the decoded tier, and 40 MiB", none, b, true, 101 * mib},
		// Planned for the heap, fallen back to passthrough: what the
		// memfds leave of 225 MiB.
		{"memfds on budgets planned without", under, b, true, 32 * mib},
		{"never below 32 MiB", under, Budgets{Decoded: 200 * mib}, true, 32 * mib},
	} {
		if got := r.p.SoftLimit(r.b, r.memfds); got != r.want {
			t.Errorf("%s: %d MiB, want %d MiB", r.name, got/mib, r.want/mib)
		}
	}
}
