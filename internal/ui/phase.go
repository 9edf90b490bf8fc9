package ui

import (
	"context"
	"time"
)

// Under load, the page's answers are made in the quiet part of each
// second. Every slot falls on a whole second (a schedule's finest field
// is the second), and a replica claims its slots then: its lock calls,
// and the other replicas' and the Redis nodes' work on the same CPUs,
// crowd the first part of each second. A page answer made then (its store
// reads and its rendering, tens of milliseconds for a week window) delays
// those claims by as much; made after them, it delays nothing. So, once
// the page is in demand (the bucket of all clients is below half its
// burst: limits.go) and a request has its place among MaxConcurrent, it
// waits until its replica's clock is between QuietFrom and QuietTo past a
// second (at most 0.6 s by default), and only then reads and renders; the
// start delay of the slots under a storm of page loads stays that of a
// quiet fleet (TestPageStorm). A person looking at an otherwise unused
// page is answered at once: a few answers now and then cost the claims
// nothing measurable, and waiting up to 0.6 s for each costs the person.

// The default quiet part of a second: from half a second past it, when a
// replica's claims of the second's slots are done, to a tenth before the
// next, so that an answer begun then ends before the next second's slots.
const (
	DefaultQuietFrom = 500 * time.Millisecond
	DefaultQuietTo   = 900 * time.Millisecond
)

// QuietPhase returns a Locker.Yield that returns once now() is between
// from and to past a whole second (at once when it is), or when ctx ends
// with ctx's error.
func QuietPhase(now func() time.Time, from, to time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		frac := time.Duration(now().Nanosecond())
		if frac >= from && frac < to {
			return nil
		}
		wait := from - frac
		if frac >= to {
			wait += time.Second
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
