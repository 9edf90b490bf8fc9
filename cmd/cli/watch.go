package cli

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Watching the configuration file. The watch is on the file's directory,
// not on the file: editors save by writing a new file and renaming it over
// the old one, and a Kubernetes ConfigMap volume swaps a symbolic link
// (..data) to a new directory of files — a watch on the file itself would
// be left on the old inode, or end with it. Events on the file's name, on
// the name it links to, and on ..-prefixed entries (the ConfigMap's
// links and timestamped directories) count; others in the directory (the
// e2e suite's logs beside the file) do not, and on Linux a write to
// another file does not even wake the watch (watch_inotify.go). They are
// debounced: the file
// is read once the directory has been quiet for watchQuiet, and at the
// latest watchMaxWait after the first event, so a file written in
// several pieces is read whole. The reader compares contents, so an event
// that changed nothing reloads nothing.

const (
	watchQuiet   = 250 * time.Millisecond
	watchMaxWait = 2 * time.Second
)

// configWatch reports, on C, that the configuration file may have changed.
type configWatch struct {
	w     *dirWatch
	names map[string]bool // absolute paths whose events count
	C     chan struct{}   // one pending notice at most
	log   *slog.Logger
}

// watchConfig watches path's directory (and, when path is a symbolic
// link, its target's); run delivers the notices until its ctx ends.
func watchConfig(path string, log *slog.Logger) (*configWatch, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{abs: true}
	dirs := []string{filepath.Dir(abs)}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		names[real] = true
		if d := filepath.Dir(real); d != dirs[0] {
			dirs = append(dirs, d)
		}
	}
	w, err := newDirWatch(dirs)
	if err != nil {
		return nil, err
	}
	return &configWatch{w: w, names: names, C: make(chan struct{}, 1), log: log}, nil
}

// counts reports whether an event on name may change the file.
func (cw *configWatch) counts(name string) bool {
	return cw.names[filepath.Clean(name)] || strings.HasPrefix(filepath.Base(name), "..")
}

// run reports the debounced events on C until ctx ends, then ends the
// watch.
func (cw *configWatch) run(ctx context.Context) {
	var reader sync.WaitGroup
	reader.Go(cw.w.read)
	defer reader.Wait()
	defer cw.w.Close()
	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	var first time.Time // of the events not yet reported; zero: none
	for {
		select {
		case <-ctx.Done():
			quiet.Stop()
			return
		case name := <-cw.w.events:
			if !cw.counts(name) {
				continue
			}
			now := time.Now()
			if first.IsZero() {
				first = now
			}
			quiet.Reset(min(watchQuiet, first.Add(watchMaxWait).Sub(now)))
		case err := <-cw.w.ended:
			// Nothing more will be seen; SIGHUP is left.
			cw.log.Warn("configuration file watch ended; reload it with SIGHUP", "error", err.Error())
			quiet.Stop()
			return
		case err := <-cw.w.errors:
			// An overflow loses events, not the watch: look at the file.
			cw.log.Warn("configuration file watch: events lost; reading the file", "error", err.Error())
			first = time.Now()
			quiet.Reset(0)
		case <-quiet.C:
			first = time.Time{}
			select {
			case cw.C <- struct{}{}:
			default: // one is pending already
			}
		}
	}
}

// dirEvents is what a dirWatch hands run, whatever watches the
// directories (watch_inotify.go on Linux, watch_fsnotify.go elsewhere).
type dirEvents struct {
	events chan string   // the path of an entry that changed
	errors chan error    // events lost
	ended  chan error    // why the watch ended before Close (one at most)
	done   chan struct{} // closed by Close
}

func newDirEvents() dirEvents {
	return dirEvents{events: make(chan string), errors: make(chan error), ended: make(chan error, 1), done: make(chan struct{})}
}

// changed hands run the path of an entry that changed; false once the
// watch is closed.
func (d dirEvents) changed(path string) bool { return send(d.done, d.events, path) }

// lost tells run that events were lost; false once the watch is closed.
func (d dirEvents) lost(err error) bool { return send(d.done, d.errors, err) }

// send hands v to its reader, or gives up once the watch is closed.
func send[T any](done <-chan struct{}, ch chan<- T, v T) bool {
	select {
	case ch <- v:
		return true
	case <-done:
		return false
	}
}
