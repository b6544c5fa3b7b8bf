package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogFile: --log-file appends, in foreground and background alike.
func TestLogFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "zfuse.log")
	os.WriteFile(p, []byte("earlier line\n"), 0o644)
	log, closeLog, err := openLog(io.Discard, slog.LevelInfo, &backgroundFlags{logFile: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("mounted", "mountpoint", "/mnt/x")
	closeLog()
	b, _ := os.ReadFile(p)
	if !strings.HasPrefix(string(b), "earlier line\n") || !strings.Contains(string(b), "msg=mounted mountpoint=/mnt/x") {
		t.Errorf("log file:\n%s", b)
	}
	if _, _, err := openLog(io.Discard, slog.LevelInfo, &backgroundFlags{logFile: filepath.Join(p, "x")}, nil); err == nil {
		t.Error("a log file that cannot be created: no error")
	}
}
