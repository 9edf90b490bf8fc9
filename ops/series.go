package ops

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// A replica updates a few series for every slot it takes part in: the lock
// acquisition's latency, a run's start delay, count and duration, a skip.
// A vector's WithLabelValues checks the label values, hashes them and looks
// the series up under the vector's lock at every call — at a thousand
// slots a second about a thirtieth of the replica's CPU. The series are
// found there once and kept here: a series is created at its first event,
// as before, and no series of a job is ever deleted, so a kept one stays
// the registry's.

// seriesKey names one series: its vector and label values.
type seriesKey struct {
	vec  any // the *prometheus.CounterVec or *prometheus.HistogramVec
	a, b string
}

// seriesCache holds the series found so far.
type seriesCache struct{ m sync.Map } // seriesKey → prometheus.Counter or prometheus.Observer

func (c *seriesCache) counter(v *prometheus.CounterVec, a, b string) prometheus.Counter {
	k := seriesKey{v, a, b}
	if s, ok := c.m.Load(k); ok {
		return s.(prometheus.Counter)
	}
	s := v.WithLabelValues(a, b)
	c.m.Store(k, s)
	return s
}

// observer is v's series of the label values a and b that are not empty
// (a job, an outcome: none of them is ever empty), in that order.
func (c *seriesCache) observer(v *prometheus.HistogramVec, a, b string) prometheus.Observer {
	k := seriesKey{v, a, b}
	if s, ok := c.m.Load(k); ok {
		return s.(prometheus.Observer)
	}
	var vals []string
	for _, l := range [2]string{a, b} {
		if l != "" {
			vals = append(vals, l)
		}
	}
	s := v.WithLabelValues(vals...)
	c.m.Store(k, s)
	return s
}
