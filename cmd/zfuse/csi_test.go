package main

import (
	"flag"
	"io"
	"testing"

	"github.com/zfuse/zfuse/csidriver"
)

// TestCSIFlags: every flag of zfuse mount is one a CSI volume may set as
// an attribute (with the same kind: boolean or not) or one the driver
// refuses, so that a new flag of zfuse mount is a decision for both.
func TestCSIFlags(t *testing.T) {
	f, err := parseTreeFlags("mount", 2, []string{"SOURCE", "DIR"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	taken, refused := csidriver.Flags()
	f.fl.VisitAll(func(g *flag.Flag) {
		isBool, ok := taken[g.Name]
		_, no := refused[g.Name]
		b, _ := g.Value.(interface{ IsBoolFlag() bool })
		switch {
		case ok && no:
			t.Errorf("--%s is both taken and refused", g.Name)
		case ok && isBool != (b != nil && b.IsBoolFlag()):
			t.Errorf("--%s: csidriver says bool=%v", g.Name, isBool)
		case !ok && !no:
			t.Errorf("zfuse mount --%s is neither taken nor refused by csidriver (attributes.go)", g.Name)
		}
	})
	for name := range taken {
		if f.fl.Lookup(name) == nil {
			t.Errorf("csidriver takes the attribute %s, which is no flag of zfuse mount", name)
		}
	}
	for name := range refused {
		if f.fl.Lookup(name) == nil {
			t.Errorf("csidriver refuses the attribute %s, which is no flag of zfuse mount", name)
		}
	}
}
