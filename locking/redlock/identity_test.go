package redlock_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
)

// ReadIdentities tells what the addresses alone cannot: two addresses of
// one server (here a proxy in front of node 0) share a Server, a replica
// says so, names its primary and shares its primary's Dataset, and
// independent servers share nothing. A node that is down is unread.
func TestReadIdentities(t *testing.T) {
	c := redistest.Start(t, 3)
	alias, err := redistest.NewProxy(c.Node(0).Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = alias.Close() })
	require.NoError(t, c.Node(2).ReplicaOf(c.Node(1).Addr()))

	l, err := redlock.New(redlock.Config{Nodes: append(c.Addrs(), alias.Addr()), OpTimeout: 500 * time.Millisecond},
		locking.Options{Replica: "r", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	defer l.Close()
	read := func() []locking.NodeIdentity {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ids, err := l.(locking.IdentityReader).ReadIdentities(ctx)
		require.NoError(t, err)
		require.Len(t, ids, 4)
		return ids
	}
	ids := read()
	for i, id := range ids {
		require.True(t, id.Read, "node %d: %v", i, id.Err)
		require.NotEmpty(t, id.Server, "node %d", i)
		require.NotEmpty(t, id.Dataset, "node %d", i)
	}
	require.Equal(t, ids[0].Server, ids[3].Server, "the proxy's server is node 0")
	require.Equal(t, ids[0].Dataset, ids[3].Dataset)
	require.NotEqual(t, ids[0].Server, ids[1].Server)
	require.NotEqual(t, ids[0].Dataset, ids[1].Dataset, "independent primaries")
	require.False(t, ids[1].Replica)
	require.True(t, ids[2].Replica)
	require.Equal(t, c.Node(1).Addr(), ids[2].Primary)
	require.Equal(t, ids[1].Dataset, ids[2].Dataset, "a replica shares its primary's dataset")
	require.NotEqual(t, ids[1].Server, ids[2].Server)

	// Promoted, the replica starts a history of its own.
	require.NoError(t, c.Node(2).ReplicaOf(""))
	ids = read()
	require.False(t, ids[2].Replica)
	require.NotEqual(t, ids[1].Dataset, ids[2].Dataset, "a promoted replica's dataset is its own")

	require.NoError(t, c.Node(1).Kill())
	ids = read()
	require.False(t, ids[1].Read)
	require.Error(t, ids[1].Err)
	require.True(t, ids[0].Read)
}
