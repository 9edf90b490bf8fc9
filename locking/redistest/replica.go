package redistest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// ReplicaOf makes the node a read-only replica of the server at addr, as
// a failover that demotes a primary leaves it, or as an operator who
// lists a replica for a primary, and waits until it holds that server's
// data: what it held itself is gone, and it refuses every write
// (READONLY). addr "" makes it a primary again (REPLICAOF NO ONE),
// keeping the data it holds. The cluster's credentials are the
// primary's (masterauth, masteruser), as every node of a cluster shares
// them.
func (n *Node) ReplicaOf(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := n.Client()
	if addr == "" {
		if err := cl.SlaveOf(ctx, "NO", "ONE").Err(); err != nil {
			return fmt.Errorf("redistest: node %d (%s) a primary again: %w", n.idx, n.Addr(), err)
		}
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("redistest: node %d a replica of %q: %w", n.idx, addr, err)
	}
	for name, v := range map[string]string{"masterauth": n.c.cfg.password, "masteruser": n.c.cfg.user} {
		if v != "" {
			if err := cl.ConfigSet(ctx, name, v).Err(); err != nil {
				return fmt.Errorf("redistest: node %d a replica of %s: %w", n.idx, addr, err)
			}
		}
	}
	if err := cl.SlaveOf(ctx, host, port).Err(); err != nil {
		return fmt.Errorf("redistest: node %d (%s) a replica of %s: %w", n.idx, n.Addr(), addr, err)
	}
	for {
		info, err := cl.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: node %d (%s) a replica of %s: not in sync after 10s (%v)", n.idx, n.Addr(), addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// RefuseWrites makes the node refuse every write, keeping its data and
// answering every read, as a primary whose replicas fell behind does
// under min-replicas-to-write (NOREPLICAS; set here with no replica at
// all), or one that could not save its snapshot (MISCONF): a script's
// writes fail each, whatever it wrote before, so none is cut in half.
// false takes writes again.
func (n *Node) RefuseWrites(on bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v := "0"
	if on {
		v = "1"
	}
	if err := n.Client().ConfigSet(ctx, "min-replicas-to-write", v).Err(); err != nil {
		return fmt.Errorf("redistest: node %d (%s) refuse writes %v: %w", n.idx, n.Addr(), on, err)
	}
	return nil
}
