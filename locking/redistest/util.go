package redistest

import (
	"bytes"
	"fmt"
	"net"
	"sync"
)

// Helpers: a free loopback port, and a log buffer safe for concurrent use.

// freePort returns a loopback port that nothing listens on and that this
// process has not handed out before: the kernel may offer a port it just
// freed again, and a node not yet started has not bound its port.
func freePort() (int, error) {
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redistest: free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port == 6379 || port == 6380 {
			continue
		}
		handedOutMu.Lock()
		seen := handedOut[port]
		handedOut[port] = true
		handedOutMu.Unlock()
		if !seen {
			return port, nil
		}
	}
}

var (
	handedOutMu sync.Mutex
	handedOut   = map[int]bool{}
)

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
