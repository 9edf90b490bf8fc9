package redistest

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/slotlock/slotlock/internal/freeport"
)

// Helpers: a free loopback port, and a log buffer safe for concurrent use.

// freePort returns a free loopback port, never Redis's defaults 6379 and
// 6380, where the machine's own servers may run.
func freePort() (int, error) {
	port, err := freeport.Loopback(6379, 6380)
	if err != nil {
		return 0, fmt.Errorf("redistest: %w", err)
	}
	return port, nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Keep the log bounded: a long benchmark must not grow it forever.
	if s.b.Len() > 1<<20 {
		s.b.Reset()
	}
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

func (s *syncBuffer) String() string { return string(s.Bytes()) }
