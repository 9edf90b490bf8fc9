package history

import (
	"fmt"
	"time"
)

// ClockText is the replica's clock against the lock nodes' as `slotlock
// status` and the status page show it: "+0.250s" ahead, "-0.040s"
// behind, "-" while unknown.
func (r ReplicaInfo) ClockText() string {
	if r.ClockOffsetMS == nil {
		return "-"
	}
	return fmt.Sprintf("%+.3fs", float64(*r.ClockOffsetMS)/1000)
}

// ClocksApart returns the replicas alive with the fastest and the slowest
// clocks and how far apart those are: exactly-once assumes at most
// lock.max_clock_skew. Zero, and no names, with fewer than two replicas'
// clocks known or all alike.
func (s Status) ClocksApart() (fast, slow string, apart time.Duration) {
	var hi, lo *ReplicaStatus
	for i := range s.Replicas {
		r := &s.Replicas[i]
		if r.ClockOffsetMS == nil {
			continue
		}
		if hi == nil || *r.ClockOffsetMS > *hi.ClockOffsetMS {
			hi = r
		}
		if lo == nil || *r.ClockOffsetMS < *lo.ClockOffsetMS {
			lo = r
		}
	}
	if hi == nil || hi == lo {
		return "", "", 0
	}
	return hi.Replica, lo.Replica, time.Duration(*hi.ClockOffsetMS-*lo.ClockOffsetMS) * time.Millisecond
}
