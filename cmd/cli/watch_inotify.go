//go:build linux

package cli

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// dirWatch is inotify on the configuration file's directories, asked for
// the events that can change the file — an entry created, moved in or
// out, deleted, or closed after a write — and not for each write. A file
// appended to many times a second beside the configuration (the
// replica's own log, or several replicas' logs in one directory) would
// otherwise wake every replica watching that directory at each line:
// fsnotify's Write is IN_MODIFY, which its API cannot leave out, and in
// a measurement of nine replicas whose logs were beside their
// configuration that was ~45 % of their CPU (docs/performance.md). A
// writer that keeps the file open is seen when it closes it.
type dirWatch struct {
	dirEvents
	f    *os.File
	dirs map[int32]string // watch descriptor → directory
}

const dirWatchMask = unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM |
	unix.IN_DELETE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// errEventsLost is what the kernel's queue overflowing is reported as.
var errEventsLost = errors.New("inotify event queue overflowed")

func newDirWatch(dirs []string) (*dirWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	// Non-blocking, so the runtime's poller waits for it and Close ends a
	// pending Read.
	w := &dirWatch{dirEvents: newDirEvents(), f: os.NewFile(uintptr(fd), "inotify"), dirs: map[int32]string{}}
	for _, d := range dirs {
		wd, err := unix.InotifyAddWatch(fd, d, dirWatchMask)
		if err != nil {
			_ = w.f.Close()
			return nil, &os.PathError{Op: "inotify_add_watch", Path: d, Err: err}
		}
		w.dirs[int32(wd)] = d
	}
	return w, nil
}

// read delivers the events until Close; run it on a goroutine of its own.
func (w *dirWatch) read() {
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				w.ended <- err
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(buf[off:]))
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			size := int(binary.NativeEndian.Uint32(buf[off+12:]))
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+size]), "\x00")
			off += unix.SizeofInotifyEvent + size
			if mask&unix.IN_Q_OVERFLOW != 0 {
				if !w.lost(errEventsLost) {
					return
				}
				continue
			}
			dir, ok := w.dirs[wd]
			if !ok || mask&unix.IN_IGNORED != 0 {
				continue
			}
			if !w.changed(filepath.Join(dir, name)) {
				return
			}
		}
	}
}

// Close ends the watch and the read loop.
func (w *dirWatch) Close() error {
	close(w.done)
	return w.f.Close()
}
