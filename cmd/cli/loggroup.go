package cli

import (
	"context"
	"io"
	"log/slog"
	"sync"
)

// At a thousand slots a second a replica writes a few thousand lines a
// second, and each was its own write(2) to the output pipe: a system call,
// and a wake-up of whatever reads the pipe, per line (about a twelfth of
// the replica's CPU at 1,000 every-second jobs). slog's handlers write a
// record under one mutex, so the lines of concurrent runs queue there and
// go out one by one, however many are waiting.
//
// A group writer commits them together, as a database commits a log: the
// handler's write only copies the line into a buffer (under the handler's
// mutex, as before), and the logging goroutine then waits, outside that
// mutex, until its line is on the output; the first one that finds no
// write under way writes everything copied so far in one write(2), and the
// lines copied meanwhile go out in the next. A line is on the output when
// the logging call returns, as it was: no line is held back for a timer,
// none is lost on a crash that one-line writes would have kept, and the
// order of the lines is the order of the handler's writes. A stalled
// output stalls every logging call, as before (logstall.go watches the
// writes below this one).

// groupWriter is the log output of a groupHandler: Write appends, flush
// writes.
type groupWriter struct {
	out  io.Writer
	mu   sync.Mutex
	done sync.Cond // a write to out returned
	// buf holds the bytes appended and not yet taken by a write; spare is
	// the buffer the last write returned, reused for the next appends.
	buf, spare []byte
	appended   uint64 // bytes appended since the start
	written    uint64 // of those, bytes whose write to out returned
	writing    bool
	err        error // the last write's error
}

// spareLimit is the largest buffer kept for reuse: a burst of long lines
// does not pin its buffer for the life of the process.
const spareLimit = 256 << 10

func newGroupWriter(out io.Writer) *groupWriter {
	g := &groupWriter{out: out}
	g.done.L = &g.mu
	return g
}

// Write appends p to the lines waiting for the next write. Only a
// groupHandler's handler calls it; the handler then flushes.
func (g *groupWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	g.buf = append(g.buf, p...)
	g.appended += uint64(len(p))
	g.mu.Unlock()
	return len(p), nil
}

// flush returns once every byte appended before the call is written out,
// writing them itself when no other write is under way; it returns the
// error of the last write.
func (g *groupWriter) flush() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	mark := g.appended
	for g.written < mark {
		if g.writing {
			g.done.Wait()
			continue
		}
		g.writeLocked()
	}
	return g.err
}

// writeLocked writes out everything appended so far, releasing g.mu for
// the write so that other lines are appended meanwhile.
func (g *groupWriter) writeLocked() {
	g.writing = true
	batch, end := g.buf, g.appended
	g.buf = g.spare[:0]
	g.spare = nil
	g.mu.Unlock()
	_, err := g.out.Write(batch)
	g.mu.Lock()
	g.written, g.err, g.writing = end, err, false
	if cap(batch) <= spareLimit {
		g.spare = batch[:0]
	}
	g.done.Broadcast()
}

// groupHandler is a handler writing to a groupWriter: each record is on
// the output when Handle returns.
type groupHandler struct {
	slog.Handler
	g *groupWriter
}

func (h groupHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if ferr := h.g.flush(); err == nil {
		err = ferr
	}
	return err
}

func (h groupHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return groupHandler{h.Handler.WithAttrs(as), h.g}
}

func (h groupHandler) WithGroup(name string) slog.Handler {
	return groupHandler{h.Handler.WithGroup(name), h.g}
}
