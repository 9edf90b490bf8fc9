//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"sync"
	"time"
)

// A replica's standard output and error through a pipe the suite drains
// into its log file (Spec.PipedLogs), so that a scenario can stop
// draining it: a container runtime's log driver that applies
// backpressure (a blocking log driver, a full disk under the node's log
// files) blocks every write the replica makes, as a full pipe does.

// logPipe copies a replica's output into its log file until every
// writer has closed the pipe, except while stalled.
type logPipe struct {
	w    *os.File // the write end: the replica's stdout and stderr; also the filler's
	mu   sync.Mutex
	gate chan struct{} // closed while draining; replaced by an open one while stalled
	done chan struct{} // closed once the copy ended
}

// newLogPipe starts draining a new pipe into lf (which it closes when
// the pipe's writers are all gone).
func newLogPipe(lf *os.File) (*logPipe, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p := &logPipe{w: w, gate: make(chan struct{}), done: make(chan struct{})}
	close(p.gate)
	go p.drain(r, lf)
	return p, nil
}

// drain copies line by line, dropping the empty lines a stall's filler
// wrote (the replica writes none: every line of slog's is a record).
func (p *logPipe) drain(r *os.File, lf *os.File) {
	defer close(p.done)
	defer lf.Close()
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		p.mu.Lock()
		gate := p.gate
		p.mu.Unlock()
		<-gate
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			_, _ = lf.Write(line)
		}
		if err != nil {
			if err != io.EOF {
				_, _ = io.Copy(lf, br)
			}
			return
		}
	}
}

// closeWriterAfter drops the suite's own write end once the replica
// exited (at once when it never started: pr nil), so that the copy sees
// the end of the pipe.
func (p *logPipe) closeWriterAfter(pr *proc) {
	if pr == nil {
		_ = p.w.Close()
		return
	}
	go func() {
		<-pr.done
		_ = p.w.Close()
	}()
}

// stall stops draining for d and fills the pipe, so that the replica's
// next write blocks until the stall ends. It blocks for d.
func (p *logPipe) stall(d time.Duration) {
	open := make(chan struct{})
	p.mu.Lock()
	p.gate = open
	p.mu.Unlock()
	// A pipe holds 64 KiB by default: 1 MiB of newlines fills it whatever
	// the replica wrote last; what is left of the filler goes after the
	// stall, and the copy drops it. Writes of a line (≤ PIPE_BUF) are
	// atomic, so no replica line is cut by the filler.
	filled := make(chan struct{})
	go func() {
		defer close(filled)
		_, _ = p.w.Write(bytes.Repeat([]byte{'\n'}, 1<<20))
	}()
	time.Sleep(d)
	close(open)
	<-filled
}
