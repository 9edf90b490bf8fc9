package scheduler

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// The clock check. Exactly-once assumes that the replicas' clocks differ
// by at most MaxClockSkew: the fastest clock fires a slot first, and the
// slot's done marker must still be there when the slowest fires it.
// The lock scripts also judge a request's freshness by comparing its
// send time, on its sender's clock, with the node's. A clock that drifts
// or is stepped past that bound breaks nothing at once — slots run early
// or late, and only far past it (about the done marker's life) twice —
// so nothing else would ever say it. Every clockCheckEvery the replica
// reads the lock nodes' clocks (locking.ClockReader) and compares its own
// with their median: a node whose own clock is off is outvoted, as it is
// in the lock rounds. Within MaxClockSkew/2 of the median, any two
// replicas are within MaxClockSkew of each other. Beyond it, by more than
// the reading's uncertainty, the replica says so once (warn); when it is
// back within, once (info); each node's clock is judged against the
// others' alike. Every reading goes to the metrics
// (ClockMetrics). The check warns and measures; it takes the replica out
// of nothing: were the nodes' clocks the wrong ones, every replica would
// step aside at once.

// clockCheckEvery is how often the clock check reads the nodes' clocks.
const clockCheckEvery = 30 * time.Second

// ClockMetrics is what a Metrics may also implement to receive the clock
// check's readings (the command's metrics do:
// slotlock_clock_offset_seconds).
type ClockMetrics interface {
	// ClockOffset is this replica's clock minus the median of the lock
	// nodes' clocks, at the latest reading.
	ClockOffset(offset time.Duration)
}

// clockCheck is the component that reads the nodes' clocks. The fleet
// owns it (its readings go out in the heartbeat); its judgement is its
// loop's own.
type clockCheck struct {
	*engine
	reader  locking.ClockReader
	metrics ClockMetrics // nil: none
	off     bool         // the latest judgement: beyond the bound
	// nodesOff: the nodes, by address, whose clocks were last judged off
	// from the nodes' median.
	nodesOff map[string]bool
	// latestMS is the latest reading's offset in milliseconds, for the
	// heartbeat (fleet.go); nil while none was judged.
	latestMS atomic.Pointer[int64]
}

// latest is the latest reading's offset in milliseconds, nil while none
// was judged.
func (c *clockCheck) latest() *int64 {
	if c == nil {
		return nil
	}
	return c.latestMS.Load()
}

// newClockCheck returns the clock check, or nil when the Locker reads no
// clocks (a wrapper that does not pass ClockReader on).
func newClockCheck(e *engine) *clockCheck {
	cr, ok := e.cfg.Locker.(locking.ClockReader)
	if !ok {
		return nil
	}
	m, _ := e.metrics.(ClockMetrics)
	return &clockCheck{engine: e, reader: cr, metrics: m, nodesOff: map[string]bool{}}
}

// loop checks at once, then every clockCheckEvery, until the scheduler
// stops. It ends at the first read that finds no clocks: the stores
// share this process's (the in-process store).
func (c *clockCheck) loop() { c.repeat(clockCheckEvery, c.check) }

// check reads the clocks once and judges the reading; false when there
// is nothing to read, ever.
func (c *clockCheck) check() bool {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	clocks, err := c.reader.ReadClocks(ctx)
	if errors.Is(err, locking.ErrClosed) || (err == nil && len(clocks) == 0) {
		return false
	}
	limit := c.cfg.MaxClockSkew / 2
	r, ok := readingOf(clocks, limit)
	if !ok {
		return true // too few agreeing answers to outvote a wrong node: no judgement
	}
	ms := r.offset.Milliseconds()
	c.latestMS.Store(&ms)
	if c.metrics != nil {
		c.metrics.ClockOffset(r.offset)
	}
	c.judge(r, limit)
	c.judgeNodes(clocks, r, limit)
	return true
}

// offAfter is a judgement after a reading d ± unc against limit, from
// off: off once surely beyond the limit, back once surely within it,
// as it was while the reading cannot tell.
func offAfter(off bool, d, unc, limit time.Duration) bool {
	if off {
		return d.Abs()+unc > limit
	}
	return d.Abs()-unc > limit
}

// judge logs a change of this replica's judgement.
func (c *clockCheck) judge(r clockReading, limit time.Duration) {
	off := offAfter(c.off, r.offset, r.uncertainty, limit)
	if off == c.off {
		return
	}
	c.off = off
	attrs := []any{"offset_ms", r.offset.Milliseconds(), "uncertainty_ms", r.uncertainty.Milliseconds(),
		"nodes", r.nodes, "max_clock_skew", c.cfg.MaxClockSkew.String()}
	if off {
		c.log.Warn("clock off: this replica's clock differs from the lock nodes' (their median) by more than "+
			"half of lock.max_clock_skew; replicas' clocks may then differ by more than it, and slots run early "+
			"or late (twice only far beyond it); fix the host's time synchronisation", append(attrs, "event", evClockOff)...)
		return
	}
	c.log.Info("clock back: this replica's clock is within half of lock.max_clock_skew of the lock nodes' again",
		append(attrs, "event", evClockBack)...)
}

// judgeNodes logs a change of each node's judgement: its clock off from
// the nodes' median by more than the same bound, beyond both readings'
// uncertainty. The rounds outvote such a node, but its clock still
// decides there when leases end and whether a request is fresh: one
// node stepped ends the leases it holds early, or keeps them late, and
// with a second fault the majority may be its.
func (c *clockCheck) judgeNodes(clocks []locking.NodeClock, r clockReading, limit time.Duration) {
	median := -r.offset
	for i, n := range clocks {
		if !n.Read {
			continue
		}
		d, unc := n.Offset-median, n.Uncertainty+r.uncertainty
		was := c.nodesOff[n.Addr]
		off := offAfter(was, d, unc, limit)
		if off == was {
			continue
		}
		attrs := []any{"node", n.Addr, "index", i, "offset_ms", d.Milliseconds(),
			"uncertainty_ms", unc.Milliseconds(), "max_clock_skew", c.cfg.MaxClockSkew.String()}
		if off {
			c.nodesOff[n.Addr] = true
			c.log.Warn("clock off: a lock node's clock differs from the other nodes' (their median) by more than "+
				"half of lock.max_clock_skew; the lock rounds outvote it, but it ends the leases it holds early or "+
				"late: fix its host's time synchronisation", append(attrs, "event", evClockNodeOff)...)
			continue
		}
		delete(c.nodesOff, n.Addr)
		c.log.Info("clock back: a lock node's clock is within half of lock.max_clock_skew of the other nodes' again",
			append(attrs, "event", evClockNodeBack)...)
	}
}

// clockReading is this replica's clock against the lock nodes'.
type clockReading struct {
	offset      time.Duration // this replica's clock minus the nodes' median: positive when ahead
	uncertainty time.Duration // the true offset is within offset ± uncertainty
	nodes       int           // nodes read
}

// readingOf is the reading the nodes' clocks give, or false when they
// cannot outvote a wrong one: fewer than a majority of all nodes agree
// with their median within agree (and their uncertainties). The median
// of an even count is the mean of the two in the middle, its
// uncertainty the larger of theirs; two nodes read of three, one of them
// stepped, agree on nothing, and decide nothing.
func readingOf(clocks []locking.NodeClock, agree time.Duration) (clockReading, bool) {
	read := make([]locking.NodeClock, 0, len(clocks))
	for _, c := range clocks {
		if c.Read {
			read = append(read, c)
		}
	}
	quorum := len(clocks)/2 + 1
	if len(read) < quorum {
		return clockReading{}, false
	}
	slices.SortFunc(read, func(a, b locking.NodeClock) int { return cmp.Compare(a.Offset, b.Offset) })
	lo, hi := read[(len(read)-1)/2], read[len(read)/2]
	median, unc := lo.Offset+(hi.Offset-lo.Offset)/2, max(lo.Uncertainty, hi.Uncertainty)
	agreeing := 0
	for _, c := range read {
		if (c.Offset - median).Abs() <= agree+c.Uncertainty+unc {
			agreeing++
		}
	}
	if agreeing < quorum {
		return clockReading{}, false
	}
	return clockReading{offset: -median, uncertainty: unc, nodes: len(read)}, true
}
