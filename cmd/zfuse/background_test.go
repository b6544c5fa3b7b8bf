package main

import (
	"io"
	"log/slog"
	"log/syslog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSyslogHandler: records reach syslog at the priority of their level,
// formatted as the text handler does (attributes, groups), without slog's
// time (syslog stamps its own), and below the level not at all.
func TestSyslogHandler(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "log")
	l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	w, err := syslog.Dial("unixgram", sock, syslog.LOG_DAEMON|syslog.LOG_INFO, "zfuse")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	log := slog.New(newSyslogHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
	log.Debug("not sent")
	log.Info("mounted", "mountpoint", "/mnt/x")
	log.With("key", "t/0.0").Warn("degraded")
	log.WithGroup("stats").Error("request failed", "n", 3)
	for _, want := range []struct{ prio, text string }{
		{"<30>", "msg=mounted mountpoint=/mnt/x"},  // daemon.info
		{"<28>", "msg=degraded key=t/0.0"},         // daemon.warning
		{"<27>", `msg="request failed" stats.n=3`}, // daemon.err
	} {
		l.SetReadDeadline(time.Now().Add(10 * time.Second))
		b := make([]byte, 4096)
		n, err := l.Read(b)
		if err != nil {
			t.Fatal(err)
		}
		got := string(b[:n])
		if !strings.HasPrefix(got, want.prio) || !strings.Contains(got, "zfuse[") || !strings.Contains(got, want.text) || strings.Contains(got, "time=") {
			t.Errorf("datagram %q: want priority %s, zfuse's tag, %q and no time=", got, want.prio, want.text)
		}
	}
}

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
