package csidriver

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// TestAwaitReady: the readiness messages of zfuse mount, as its
// background child writes them, and a server that says nothing.
func TestAwaitReady(t *testing.T) {
	tests := []struct {
		name, write string
		close       bool   // the server closes the pipe (exits) after writing
		want        string // "" for ready, else a substring of the error
	}{
		{"ready", `{"ready":true}` + "\n", true, ""},
		{"a warning, then ready", `{"warn":"no syslog"}` + "\n" + `{"ready":true}` + "\n", true, ""},
		{"failed", `{"error":"SOURCE /x holds no Zarr array"}` + "\n", true, "holds no Zarr array"},
		{"exited without a word", "", true, "exited before it served: exit status 1"},
		{"silent", "", false, "not ready in time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			w.WriteString(tt.write)
			exited := make(chan error, 1)
			if tt.close {
				w.Close()
				exited <- errors.New("exit status 1")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			err = awaitReady(ctx, slog.New(slog.DiscardHandler), r, exited)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want ready", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}
