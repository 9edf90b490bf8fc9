package entraauth

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
)

// Through the lock layer: a Redlock over three TLS nodes that authenticates
// with the provider (redlock.Config.StreamingCredentials) keeps working across a
// token rotation, and every connection it had open re-authenticates with the
// new token before the old one is withdrawn on the nodes.
func TestRedlockConnectionsReauthenticateOnRotation(t *testing.T) {
	c := redistest.Start(t, 3, redistest.TLS())
	ctx := t.Context()
	tokens := []string{jwt(t, testOID, "t1"), jwt(t, testOID, "t2")}
	setUser := func(rules ...string) {
		t.Helper()
		for _, n := range c.Nodes() {
			args := append([]any{"ACL", "SETUSER", testOID}, toAny(rules)...)
			if err := n.Client().Do(ctx, args...).Err(); err != nil {
				t.Fatalf("%s: ACL SETUSER %v: %v", n.Addr(), rules, err)
			}
		}
	}
	setUser("on", ">"+tokens[0], "~*", "&*", "+@all")
	mons := make([]*monitor, 3)
	for i, n := range c.Nodes() {
		mons[i] = startMonitor(t, n.Addr(), c.ClientTLS())
	}

	clock := &fakeClock{now: time.Now()}
	src := &fakeSource{}
	src.push(response{tok: azcore.AccessToken{Token: tokens[0], ExpiresOn: clock.Now().Add(time.Hour)}})
	p, err := New(ctx, src, Options{Clock: clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	lk, err := redlock.New(redlock.Config{
		Nodes:                c.Addrs(),
		TLSConfig:            c.ClientTLS(),
		StreamingCredentials: p,
		// Generous: TLS under the race detector on a loaded machine.
		DialTimeout: 2 * time.Second,
		OpTimeout:   time.Second,
	}, locking.Options{Replica: "r1", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()

	slot := 0
	use := func() {
		t.Helper()
		slot++
		l, err := lk.Acquire(ctx, locking.Key{Family: "job", Name: fmt.Sprintf("slot:%d", slot)}, 10*time.Second)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if err := l.End(context.WithoutCancel(ctx), locking.Ending{}).Err; err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	use()
	use()
	before := make([]map[string]bool, 3) // per node: the identity's connections
	for i, n := range c.Nodes() {
		r := &rotation{t: t, ctx: ctx, admin: n.Client()}
		before[i] = r.clients("")
		if len(before[i]) == 0 {
			t.Fatalf("%s: no connection of the identity", n.Addr())
		}
	}

	setUser(">" + tokens[1]) // both tokens valid during the overlap
	marks := []int{mons[0].len(), mons[1].len(), mons[2].len()}
	src.push(response{tok: azcore.AccessToken{Token: tokens[1], ExpiresOn: clock.Now().Add(2 * time.Hour)}})
	eventually(t, 5*time.Second, "the refresh timer", func() bool { return clock.pendingTimers() > 0 })
	clock.Advance(43 * time.Minute)
	eventually(t, 5*time.Second, "the second token fetch", func() bool { return src.callCount() == 2 })

	eventually(t, 10*time.Second, "an AUTH on every connection the locker had open", func() bool {
		use()
		for i := range mons {
			authed := mons[i].authsSince(marks[i])
			for addr := range before[i] {
				if !authed[addr] {
					return false
				}
			}
		}
		return true
	})

	setUser("<" + tokens[0]) // the old token is withdrawn
	for range 5 {
		use()
	}
	for _, n := range c.Nodes() {
		r := &rotation{t: t, ctx: ctx, admin: n.Client()}
		if _, failed := r.authStats(); failed != 0 {
			t.Errorf("%s: %d AUTH commands failed", n.Addr(), failed)
		}
	}
}
