//go:build !linux

package cli

import (
	"errors"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// dirWatch is fsnotify on the configuration file's directories where
// there is no inotify (watch_inotify.go): every write in them is an
// event, a chmod is not.
type dirWatch struct {
	dirEvents
	w *fsnotify.Watcher
}

var errWatchClosed = errors.New("fsnotify closed the watch")

func newDirWatch(dirs []string) (*dirWatch, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if err := fw.Add(d); err != nil {
			_ = fw.Close()
			return nil, err
		}
	}
	return &dirWatch{dirEvents: newDirEvents(), w: fw}, nil
}

// read delivers the events until Close; run it on a goroutine of its own.
func (w *dirWatch) read() {
	for {
		select {
		case ev, ok := <-w.w.Events:
			if !ok {
				w.ended <- errWatchClosed
				return
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			if !w.changed(filepath.Clean(ev.Name)) {
				return
			}
		case err, ok := <-w.w.Errors:
			if !ok {
				w.ended <- errWatchClosed
				return
			}
			if !w.lost(err) {
				return
			}
		case <-w.done:
			return
		}
	}
}

// Close ends the watch and the read loop.
func (w *dirWatch) Close() error {
	close(w.done)
	return w.w.Close()
}
