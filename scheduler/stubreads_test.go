package scheduler

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// stubReads is what a fake store read answers (the nodes' clocks, their
// identities), set by the test, and how many times it was read.
type stubReads[T any] struct {
	mu    sync.Mutex
	v     []T
	reads int
}

func (s *stubReads[T]) set(v []T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.v = v
}

func (s *stubReads[T]) read() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	return s.v
}

func (s *stubReads[T]) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// kept is what a Metrics method received, in order.
type kept[T any] struct {
	mu sync.Mutex
	v  []T
}

func (k *kept[T]) add(x T) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.v = append(k.v, x)
}

func (k *kept[T]) all() []T {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]T(nil), k.v...)
}

// readingStep is one reading a fake store answers and the events the
// check logs for it.
type readingStep[T any] struct {
	read   []T
	events []string
}

// stepReadings drives a check that reads stub every `every` through steps;
// the first step's reading is set before the scheduler starts. Before each
// next one it sets the reading and waits every; after each, the lines that
// name picks out (its name for a line, "" for one of no interest) must be
// exactly that step's events, in order.
func stepReadings[T any](t *testing.T, e *env, stub *stubReads[T], every time.Duration, steps []readingStep[T], name func(event) string) {
	t.Helper()
	seen := 0
	for i, st := range steps {
		if i > 0 {
			stub.set(st.read)
			time.Sleep(every)
		}
		synctest.Wait()
		var got []string
		for _, ev := range e.sink.events(t) {
			if n := name(ev); n != "" {
				got = append(got, n)
			}
		}
		if !slices.Equal(got[seen:], st.events) {
			e.sink.dump(t)
			t.Fatalf("reading %d: events %v, want %v", i, got[seen:], st.events)
		}
		seen = len(got)
	}
}
