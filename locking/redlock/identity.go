package redlock

import (
	"context"
	"net"
	"strings"

	"github.com/slotlock/slotlock/locking/driver"
)

// identifier is a node that can say which server it is (a Redis node;
// simulated nodes cannot).
type identifier interface {
	identity(ctx context.Context) (driver.NodeIdentity, error)
}

// ReadIdentities reads every node's identity (driver.IdentityReader), one
// node after the other, each within the op timeout, on its reader
// connection, as ReadClocks does and for its reasons.
func (r *nodeSet) ReadIdentities(ctx context.Context) []driver.NodeIdentity {
	return eachNode(ctx, r, readIdentity)
}

// readIdentity reads node n's identity once; a node that cannot say
// (simulated) is unread, without an error.
func readIdentity(ctx context.Context, n driver.Node) driver.NodeIdentity {
	id, ok := n.(identifier)
	if !ok {
		return driver.NodeIdentity{Addr: n.Addr()}
	}
	got, err := id.identity(ctx)
	if err != nil {
		return driver.NodeIdentity{Addr: n.Addr(), Err: err}
	}
	got.Addr = n.Addr()
	return got
}

// identity reads the node's INFO server and replication sections in one
// round trip. A cluster endpoint says nothing (Read false, no error): its
// answer would come from one of its servers, another each time.
func (n *redisNode) identity(ctx context.Context) (driver.NodeIdentity, error) {
	if n.cluster.Load() {
		return driver.NodeIdentity{}, nil
	}
	p := n.reader.Load().c.Pipeline()
	server, repl := p.Info(ctx, "server"), p.Info(ctx, "replication")
	if _, err := p.Exec(ctx); err != nil {
		return driver.NodeIdentity{}, &readError{err}
	}
	return identityOf(server.Val(), repl.Val()), nil
}

// identityOf reads an identity from the INFO server and replication
// sections' text.
func identityOf(server, replication string) driver.NodeIdentity {
	s, r := infoFields(server), infoFields(replication)
	id := driver.NodeIdentity{Read: true, Server: s["run_id"], Dataset: r["master_replid"]}
	if r["role"] == "slave" {
		id.Replica = true
		if host := r["master_host"]; host != "" {
			id.Primary = net.JoinHostPort(host, r["master_port"])
		}
	}
	return id
}

// infoFields are the "name:value" lines of an INFO section.
func infoFields(text string) map[string]string {
	out := map[string]string{}
	for line := range strings.Lines(text) {
		name, value, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ":")
		if ok && !strings.HasPrefix(name, "#") {
			out[name] = value
		}
	}
	return out
}
