package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
)

// helper runs this test binary as the process under measurement, in mode
// (TestHelperProcess).
func helper(mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "BENCH_HELPER="+mode)
	return cmd
}

// TestHelperProcess is the process of TestProcess: "ok" says it is ready
// and exits 0 on SIGTERM, "fail" exits 1 on it, "exit" exits at once.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("BENCH_HELPER")
	if mode == "" {
		return
	}
	if mode == "exit" {
		fmt.Fprintln(os.Stderr, "no luck")
		os.Exit(3)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Fprintln(os.Stderr, "msg=mounted")
	<-term
	if mode == "fail" {
		os.Exit(1)
	}
	os.Exit(0)
}

func TestProcess(t *testing.T) {
	for _, r := range []struct {
		mode              string
		startErr, stopErr bool
	}{
		{"ok", false, false},
		{"fail", false, true},
		{"exit", true, false},
	} {
		t.Run(r.mode, func(t *testing.T) {
			p, err := Start(context.Background(), "helper", helper(r.mode), "msg=mounted")
			if (err != nil) != r.startErr {
				t.Fatalf("Start: %v, want error %v", err, r.startErr)
			}
			if err != nil {
				if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "no luck") {
					t.Errorf("Start's error %q: want ErrExited and the output", err)
				}
				return
			}
			if !strings.Contains(p.Log(), "msg=mounted") {
				t.Errorf("log %q", p.Log())
			}
			u, err := p.Stop()
			if (err != nil) != r.stopErr {
				t.Errorf("Stop: %v, want error %v", err, r.stopErr)
			}
			if u.HWM <= 0 || u.CPU < 0 {
				t.Errorf("usage %+v", u)
			}
		})
	}
}
