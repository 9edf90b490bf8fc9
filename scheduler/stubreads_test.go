package scheduler

import "sync"

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
