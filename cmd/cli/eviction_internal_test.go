package cli

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
)

// warnEviction warns once per node that may evict, once for the nodes it
// cannot ask (CONFIG refused), and not at all for noeviction nodes.
func TestWarnEviction(t *testing.T) {
	ok := redistest.Start(t, 2)
	refusing := redistest.Start(t, 1, redistest.Args("--rename-command", "CONFIG", ""))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ok.Node(1).Client().ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	addrs := append(ok.Addrs(), refusing.Addrs()...)
	var buf bytes.Buffer
	warnEviction(ctx, redlock.Config{Nodes: addrs}, slog.New(slog.NewTextHandler(&buf, nil)))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 ||
		!strings.Contains(lines[0], "node="+addrs[1]) || !strings.Contains(lines[0], "maxmemory_policy=allkeys-lru") ||
		!strings.Contains(lines[1], "nodes="+addrs[2]) {
		t.Fatalf("warnings:\n%s\nwant one for %s (allkeys-lru) and one naming %s (unread)", buf.String(), addrs[1], addrs[2])
	}
}
