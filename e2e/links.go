//go:build linux

package e2e

import (
	"sync"
	"testing"
)

// links are the replicas' own proxies in front of the nodes (Spec.Links):
// one per replica and node, started at the replica's first start and
// kept across its restarts, so that a cut outlives them.
type links struct {
	t     testing.TB
	addrs []string // the nodes', as config.yaml names them

	mu sync.Mutex
	by map[string][]*Proxy // per replica, per node
}

// of returns replica name's proxies, one per node, started at its first
// call.
func (l *links) of(name string) []*Proxy {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ls, ok := l.by[name]; ok {
		return ls
	}
	var ls []*Proxy
	for _, a := range l.addrs {
		px, err := NewProxy(a)
		if err != nil {
			l.t.Fatal(err)
		}
		l.t.Cleanup(func() { _ = px.Close() })
		ls = append(ls, px)
	}
	l.by[name] = ls
	return ls
}
