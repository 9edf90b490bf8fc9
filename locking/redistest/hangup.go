package redistest

import (
	"net"
	"testing"
)

// HangUp starts a "node" that accepts every connection on a free
// loopback port and closes it at once, and returns its address: every
// call to it fails, and the error names the address. (A refused dial
// would leave go-redis's background redial sleeping past the test.) It
// stops with t.
func HangUp(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}
