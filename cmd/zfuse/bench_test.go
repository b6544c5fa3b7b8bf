package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/gpu"
)

func TestLoaderFlags(t *testing.T) {
	fl := flag.NewFlagSet("", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	lf := addLoaderFlags(fl)
	if lf.decoder != gpu.Auto {
		t.Errorf("--decoder defaults to %q", lf.decoder)
	}
	if err := fl.Parse([]string{"--cache", "3MiB", "--readahead", "1.5MiB", "--workers", "5", "--decoder", "cpu"}); err != nil {
		t.Fatal(err)
	}
	if lf.decoded != 3<<20 || lf.readahead != 3<<19 || lf.compressed != 0 || lf.workers != 5 || lf.decoder != gpu.CPU {
		t.Errorf("flags %+v", lf)
	}
	if m := lf.benchFlags(); m.Decoded+m.Compressed+m.Readahead+m.Own != 3<<20+3<<19+40<<20 {
		t.Errorf("what a mount may hold: %+v", m)
	}
	for _, r := range []struct {
		args   []string
		source string
		want   int64
	}{
		{nil, "/data/x.zarr", 0},
		{nil, "https://example.com/x.zarr", remoteCompressed},
		{nil, "s3://bucket/x.zarr", remoteCompressed},
		{[]string{"--cache-compressed", "0"}, "s3://bucket/x.zarr", 0},
		{[]string{"--cache-compressed", "1GiB"}, "/data/x.zarr", 1 << 30},
	} {
		fl := flag.NewFlagSet("", flag.ContinueOnError)
		lf := addLoaderFlags(fl)
		if err := fl.Parse(r.args); err != nil {
			t.Fatal(err)
		}
		lf.forSource(fl, r.source)
		if int64(lf.compressed) != r.want {
			t.Errorf("%q %s: compressed tier %d, want %d", r.args, r.source, lf.compressed, r.want)
		}
	}
	// What bench passes to its mounts parses back to the same.
	fl2 := flag.NewFlagSet("", flag.ContinueOnError)
	lf2 := addLoaderFlags(fl2)
	if err := fl2.Parse(lf.args()); err != nil || *lf2 != *lf {
		t.Errorf("args %q parse to %+v, %v; want %+v", lf.args(), lf2, err, lf)
	}
}

func TestBenchArgs(t *testing.T) {
	var stdout, stderr bytes.Buffer
	for _, args := range [][]string{{"extra"}, {"--size", "lots"}, {"--nosuch"}} {
		if err := run(context.Background(), append([]string{"bench"}, args...), &stdout, &stderr); err == nil {
			t.Errorf("zfuse bench %q: no error", args)
		}
	}
	err := run(context.Background(), []string{"bench", "--store", t.TempDir()}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--store must hold") {
		t.Errorf("bench on an empty --store: %v", err)
	}
}
