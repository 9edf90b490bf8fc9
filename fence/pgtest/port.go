package pgtest

import (
	"fmt"
	"net"
	"sync"
)

// freePort returns a loopback port that nothing listens on, is not
// PostgreSQL's default (5432, where the machine's own server may run) and
// that this process has not handed out before.
func freePort() (int, error) {
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("pgtest: free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port == 5432 {
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
