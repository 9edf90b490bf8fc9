package fence

import (
	"context"
	"sync"
)

// Memory is an in-process Store: the highest token per key in a map. It
// forgets everything when the process ends, so it suits a receiver with a
// single instance that accepts being open to one stale request after a
// restart; otherwise use Redis. The zero value is ready; it is safe for
// concurrent use.
type Memory struct {
	mu      sync.Mutex
	highest map[string]uint64
}

// Advance raises key's highest token to token, or returns a *StaleError
// when a higher token was accepted.
func (m *Memory) Advance(_ context.Context, key string, token uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h, ok := m.highest[key]; ok && token < h {
		return &StaleError{Resource: key, Token: token, Highest: h}
	}
	if m.highest == nil {
		m.highest = map[string]uint64{}
	}
	m.highest[key] = token
	return nil
}
