package main

import (
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A redraw calls draw every tick on its own goroutine, and once more
// with final set when stopped: the loop that compress's and warmup's
// progress reports share. It is safe for concurrent use.
type redraw struct {
	stopOnce sync.Once
	done     chan struct{}
	wg       sync.WaitGroup
}

// startRedraw starts calling draw every tick until stop.
func startRedraw(tick time.Duration, draw func(now time.Time, final bool)) *redraw {
	r := &redraw{done: make(chan struct{})}
	r.wg.Go(func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-r.done:
				draw(time.Now(), true)
				return
			case now := <-t.C:
				draw(now, false)
			}
		}
	})
	return r
}

// stop draws the final state and waits for it; later calls do nothing.
func (r *redraw) stop() {
	r.stopOnce.Do(func() { close(r.done) })
	r.wg.Wait()
}

// bar is "[###   ]": frac of width cells filled with c.
func bar(frac float64, width int, c string) string {
	fill := min(max(int(frac*float64(width)), 0), width)
	return "[" + strings.Repeat(c, fill) + strings.Repeat(" ", width-fill) + "]"
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
