package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A progress shows a job's progress on stderr while it goes, the one way
// compress and warmup show theirs: a bar redrawn in place ("bar"), a
// plain line every 10 seconds and at every tenth of the work ("plain"),
// or nothing ("none"). It is safe for concurrent use.
type progress struct {
	w     io.Writer
	name  string                             // what plain lines begin with: "compress", "compress part 1/4"
	label string                             // what the bar follows: "" or "part 1/4"
	fill  string                             // the bar's filled cell: "#", "="
	state func() (frac float64, text string) // the share of the work done, and the state in words

	redraw *redraw // nil for "none"
}

// startProgress starts showing state on w in mode: "auto" is a bar on a
// terminal, plain lines otherwise.
func startProgress(w io.Writer, mode, name, label, fill string, state func() (float64, string)) *progress {
	if mode == "auto" {
		mode = "plain"
		if isTerminal(w) {
			mode = "bar"
		}
	}
	p := &progress{w: w, name: name, label: label, fill: fill, state: state}
	switch mode {
	case "bar":
		p.redraw = startRedraw(200*time.Millisecond, p.drawBar)
	case "plain":
		p.redraw = startRedraw(time.Second, p.plainLines())
	}
	return p
}

// drawBar redraws the bar in place, ending it with a newline when final.
func (p *progress) drawBar(_ time.Time, final bool) {
	frac, text := p.state()
	line := bar(frac, 30, p.fill) + " " + text
	if p.label != "" {
		line = p.label + " " + line
	}
	end := ""
	if final {
		end = "\n"
	}
	fmt.Fprintf(p.w, "\r%s\x1b[K%s", line, end)
}

// plainLines prints a line every 10 seconds, at every tenth of the work
// and at the end.
func (p *progress) plainLines() func(time.Time, bool) {
	var lastLine time.Time
	lastTenth := 0
	return func(now time.Time, final bool) {
		frac, text := p.state()
		tenth := int(10 * frac)
		if final || now.Sub(lastLine) >= 10*time.Second || tenth > lastTenth {
			fmt.Fprintf(p.w, "%s: %s\n", p.name, text)
			lastLine, lastTenth = now, tenth
		}
	}
}

// stop ends the reports (a bar gets its final state and a newline).
func (p *progress) stop() {
	if p.redraw != nil {
		p.redraw.stop()
	}
}

// A redraw calls draw every tick on its own goroutine, and once more
// with final set when stopped. It is safe for concurrent use.
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
