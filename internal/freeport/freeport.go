// Package freeport hands out free TCP ports on 127.0.0.1 to the helpers
// that start real servers for tests (locking/redistest, fence/pgtest).
package freeport

import (
	"fmt"
	"net"
	"slices"
	"sync"
)

// Loopback returns a loopback port that nothing listens on, is none of
// avoid (a service's default port, where the machine's own server may run)
// and that this process has not handed out before: the kernel may offer a
// port it just freed again, and a server not yet started has not bound its
// port.
func Loopback(avoid ...int) (int, error) {
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if slices.Contains(avoid, port) {
			continue
		}
		mu.Lock()
		seen := handedOut[port]
		handedOut[port] = true
		mu.Unlock()
		if !seen {
			return port, nil
		}
	}
}

var (
	mu        sync.Mutex
	handedOut = map[int]bool{}
)
