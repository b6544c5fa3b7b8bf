package daemon

import (
	"log/slog"
	"log/syslog"
	"net"
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
	log := slog.New(newHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
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
