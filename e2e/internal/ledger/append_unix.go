//go:build unix

package ledger

import (
	"encoding/json"
	"os"
	"syscall"
	"time"
)

// Append stamps l with the wall-clock time and appends it to the ledger at
// path as one line, with a single O_APPEND write under flock, so lines of
// concurrent runs on several replicas never interleave.
func Append(path string, l Line) error {
	l.UnixNs = time.Now().UnixNano()
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	return err
}
