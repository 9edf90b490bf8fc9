package config

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Limits on the files Load reads. A configuration of a few hundred jobs is
// tens of kilobytes; a password or an access key is well under a
// kilobyte. Anything larger is a wrong path (/dev/zero, a log file), and
// reading it whole would only fill the memory.
const (
	MaxConfigSize   = 4 << 20 // 4 MiB
	MaxPasswordSize = 4 << 10 // 4 KiB
)

// ReadFile reads the configuration file at path: a regular file of at
// most MaxConfigSize bytes. A named pipe, a device, a socket or a
// directory is refused before anything is read from it: a FIFO with no
// writer would block the read for ever (and the process with it, signals
// notwithstanding), a device such as /dev/zero never ends.
func ReadFile(path string) ([]byte, error) {
	b, err := readRegular(path, MaxConfigSize, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot read configuration: %w", err)
	}
	return b, nil
}

// readRegular reads the regular file at path, at most limit bytes. check,
// when not nil, judges the file's mode before a byte is read (it is called
// on the path's stat and again on the opened file's).
func readRegular(path string, limit int64, check func(fs.FileMode) error) ([]byte, error) {
	// A device is refused before it is opened (opening one may act); a
	// path that cannot be stat'ed is left to the open to report.
	if fi, err := os.Stat(path); err == nil {
		if err := regular(path, fi, limit, check); err != nil {
			return nil, err
		}
	}
	// O_NONBLOCK: should the path become a FIFO between the stat and the
	// open, the open returns at once instead of waiting for a writer, and
	// the fstat below refuses it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := regular(path, fi, limit, check); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(path, limit)
	}
	return b, nil
}

// regular refuses what is not a regular file of at most limit bytes, then
// applies check.
func regular(path string, fi fs.FileInfo, limit int64, check func(fs.FileMode) error) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is %s, not a regular file", path, kindOf(fi.Mode()))
	}
	if fi.Size() > limit {
		return tooLarge(path, limit)
	}
	if check != nil {
		if err := check(fi.Mode()); err != nil {
			return &refusedError{err}
		}
	}
	return nil
}

// refusedError is a refusal by readRegular's check, which says all there
// is to say (no "cannot read" before it).
type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

func tooLarge(path string, limit int64) error {
	return fmt.Errorf("%s is larger than the limit of %s", path, sizeText(limit))
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// kindOf names a file type that is not a regular file.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "of type " + m.Type().String()
}
