package fusemount

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
)

// A looker looks paths up through the mount from a child process, never
// from a thread of this one: a FUSE server with a thread waiting inside
// its own mount cannot be killed. SIGKILL ends its other threads, but that
// one waits, uninterruptibly, for the answer only the server could give,
// so the process never exits, its /dev/fuse descriptor is never closed,
// and the connection and every reader of the mount hang with it. A child
// waiting in the mount gets ENOTCONN once the server is gone.
//
// The child is sh, whose test -e is a stat: one path a line in, one empty
// line out, in order. Lookups are pipelined: ask does not wait, not even
// for room in the child's input (send writes), so the lookups of a
// planned batch run while it is fetched and decoded. It is safe for
// concurrent use; the zero value is ready.
type looker struct {
	mu      sync.Mutex
	cmd     *exec.Cmd
	queue   []string         // asked, not yet written to the child
	wake    chan struct{}    // tells send of a queue; closed by close
	asked   []look           // asked, not yet answered, in order
	pending map[string]*look // asked, by path
	failed  bool             // the child could not start or died: no more lookups
	closed  bool

	pid atomic.Int64 // the child's process ID, once started
}

// A look is one lookup asked of the child; done is closed once answered
// (or the child is gone).
type look struct {
	path string
	done chan struct{}
}

const lookScript = `IFS=; while read -r p; do [ -e "$p" ]; echo; done`

// maxAsked bounds the lookups in flight, so that sh's answers always fit
// in its output pipe and it never stops reading its input.
const maxAsked = 256

// ask sends path to the child, unless it is asked already, and returns a
// channel closed once it was looked up; nil where it cannot be (no sh, a
// path with a newline, too many in flight, the child gone).
func (l *looker) ask(path string) <-chan struct{} {
	if strings.ContainsRune(path, '\n') {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if k := l.pending[path]; k != nil {
		return k.done
	}
	if l.cmd == nil && !l.failed && !l.closed {
		l.failed = l.start() != nil
	}
	if l.failed || l.closed || len(l.asked) >= maxAsked {
		return nil
	}
	k := &look{path, make(chan struct{})}
	l.queue = append(l.queue, path)
	l.asked = append(l.asked, *k)
	l.pending[path] = k
	select {
	case l.wake <- struct{}{}:
	default: // send is woken already
	}
	return k.done
}

// look asks for path and waits for the answer. It reports false where no
// lookup was done.
func (l *looker) look(path string) bool {
	done := l.ask(path)
	if done == nil {
		return false
	}
	<-done
	return true
}

func (l *looker) start() error {
	cmd := exec.Command("sh", "-c", lookScript)
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	l.cmd, l.pending, l.wake = cmd, map[string]*look{}, make(chan struct{}, 1)
	l.pid.Store(int64(cmd.Process.Pid))
	go l.send(in)
	go l.answers(bufio.NewReader(out))
	return nil
}

// send writes the queued paths to the child, outside the lock: a write
// waits while the child's input is full, that is while its lookups wait
// for this mount's answers. Once close closed wake, it writes the rest
// and closes the input, and sh exits.
func (l *looker) send(in io.WriteCloser) {
	defer in.Close()
	for range l.wake {
		l.mu.Lock()
		q := l.queue
		l.queue = nil
		l.mu.Unlock()
		if len(q) == 0 {
			continue
		}
		if _, err := io.WriteString(in, strings.Join(q, "\n")+"\n"); err != nil {
			return // the child is gone: answers sees it and lets every look go
		}
	}
}

// answers closes each look's channel as the child answers it, and all of
// them once it is gone.
func (l *looker) answers(out *bufio.Reader) {
	for {
		_, err := out.ReadString('\n')
		l.mu.Lock()
		if err != nil {
			l.failed = true
			for _, k := range l.asked {
				close(k.done)
			}
			l.asked, l.pending = nil, nil
			l.mu.Unlock()
			return
		}
		if len(l.asked) > 0 {
			k := l.asked[0]
			l.asked = l.asked[1:]
			delete(l.pending, k.path)
			close(k.done)
		}
		l.mu.Unlock()
	}
}

// close ends the child, once the mount is gone: sh reads the end of its
// input and exits.
func (l *looker) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	cmd := l.cmd
	if cmd != nil {
		close(l.wake)
	}
	l.mu.Unlock()
	if cmd != nil {
		cmd.Wait()
	}
}
