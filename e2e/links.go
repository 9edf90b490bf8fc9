//go:build linux

package e2e

import (
	"sync"
	"testing"

	"github.com/slotlock/slotlock/locking/redistest"
)

// Links are the replicas' own proxies in front of the nodes (Spec.Links):
// one per replica and node, started at the replica's first start and
// kept across its restarts, so that a cut outlives them.
type Links struct {
	t     testing.TB
	addrs []string // the nodes', as config.yaml names them

	mu sync.Mutex
	by map[string][]*redistest.Proxy // per replica, per node
}

// Link is the proxy through which replica name reaches node i.
func (l *Links) Link(name string, i int) *redistest.Proxy {
	if l == nil {
		panic("e2e: Cluster.Links is nil: the cluster needs Spec.Links")
	}
	return l.of(name)[i]
}

// of returns replica name's proxies, one per node, started at its first
// call.
func (l *Links) of(name string) []*redistest.Proxy {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ls, ok := l.by[name]; ok {
		return ls
	}
	var ls []*redistest.Proxy
	for _, a := range l.addrs {
		px, err := redistest.NewProxy(a)
		if err != nil {
			l.t.Fatal(err)
		}
		l.t.Cleanup(func() { _ = px.Close() })
		ls = append(ls, px)
	}
	l.by[name] = ls
	return ls
}
