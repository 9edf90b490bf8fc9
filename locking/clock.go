package locking

import "time"

// Timer is the part of *time.Timer the package uses, so a fake clock can
// provide its own.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// Clock is the source of time for the scheduler and the lock layer.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// SystemClock is the real clock shifted by offset (SLOTLOCK_CLOCK_OFFSET).
// Durations measured with it stay monotonic.
func SystemClock(offset time.Duration) Clock { return systemClock{offset} }

type systemClock struct{ offset time.Duration }

func (c systemClock) Now() time.Time { return time.Now().Add(c.offset) }

func (c systemClock) NewTimer(d time.Duration) Timer {
	return realTimer{time.NewTimer(d)}
}

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }

func (t realTimer) Stop() bool { return t.t.Stop() }

func (t realTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }
