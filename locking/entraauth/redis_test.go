package entraauth

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/redis/go-redis/v9"

	"github.com/slotlock/slotlock/locking/redistest"
)

// These tests run go-redis against a real redis-server (TLS, like Azure
// Managed Redis) whose ACL user plays the Entra identity: its name is the
// token's oid and its password is the token. Rotating the password with ACL
// SETUSER is what Entra does when a token is replaced.

const testOID = "7f3c2a9e-1d4b-4e8a-9c61-5b2f0e8d4a17"

type rotation struct {
	t      *testing.T
	ctx    context.Context
	node   *redistest.Node
	admin  *redis.Client
	mon    *monitor
	clock  *fakeClock
	src    *fakeSource
	p      *Provider
	tokens []string
}

func newRotation(t *testing.T) *rotation {
	c := redistest.Start(t, 1, redistest.TLS())
	r := &rotation{t: t, ctx: t.Context(), node: c.Node(0), admin: c.Node(0).Client(),
		clock: &fakeClock{now: time.Now()}, src: &fakeSource{}}
	r.tokens = []string{jwt(t, testOID, "t1"), jwt(t, testOID, "t2")}
	r.acl("on", ">"+r.tokens[0], "~*", "&*", "+@all")
	r.mon = startMonitor(t, r.node.Addr(), c.ClientTLS())
	r.src.push(response{tok: azcore.AccessToken{Token: r.tokens[0], ExpiresOn: r.clock.Now().Add(time.Hour)}})
	p, err := New(r.ctx, r.src, Options{Clock: r.clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	r.p = p
	return r
}

func (r *rotation) acl(rules ...string) {
	r.t.Helper()
	args := append([]any{"ACL", "SETUSER", testOID}, toAny(rules)...)
	if err := r.admin.Do(r.ctx, args...).Err(); err != nil {
		r.t.Fatalf("ACL SETUSER %v: %v", rules, err)
	}
}

// refresh lets the provider's timer reach the refresh point (70% of the
// first token's hour) with the second token queued at the source.
func (r *rotation) refresh() {
	r.t.Helper()
	r.src.push(response{tok: azcore.AccessToken{Token: r.tokens[1], ExpiresOn: r.clock.Now().Add(2 * time.Hour)}})
	eventually(r.t, 5*time.Second, "the refresh timer", func() bool { return r.clock.pendingTimers() > 0 })
	r.clock.Advance(43 * time.Minute)
	eventually(r.t, 5*time.Second, "the second token fetch", func() bool { return r.src.callCount() == 2 })
}

// useConns has n commands in flight at once on client, so the pool hands
// out (and takes back) n connections: each BLPOP blocks until the admin
// pushes to its list, which it does once n clients of the identity block.
func (r *rotation) useConns(client *redis.Client, n int) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			res, err := client.BLPop(ctx, 5*time.Second, fmt.Sprintf("wake:%d", i)).Result()
			if err == nil && (len(res) != 2 || res[1] != "go") {
				err = fmt.Errorf("BLPOP = %v", res)
			}
			errs <- err
		})
	}
	eventually(r.t, 5*time.Second, fmt.Sprintf("%d blocked clients", n), func() bool {
		return len(r.clients("blpop")) >= n
	})
	for i := range n {
		if err := r.admin.RPush(ctx, fmt.Sprintf("wake:%d", i), "go").Err(); err != nil {
			r.t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			r.t.Fatalf("command on a pooled connection failed: %v", err)
		}
	}
}

// clients returns the addresses of the identity's connections, only those
// whose current command is cmd when cmd is not empty.
func (r *rotation) clients(cmd string) map[string]bool {
	r.t.Helper()
	list, err := r.admin.ClientList(r.ctx).Result()
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]bool{}
	for line := range strings.Lines(list) {
		f := fields(line)
		if f["user"] == testOID && (cmd == "" || f["cmd"] == cmd) {
			out[f["addr"]] = true
		}
	}
	return out
}

// authStats returns the server's AUTH counters (calls, failed_calls).
func (r *rotation) authStats() (calls, failed int) {
	r.t.Helper()
	info, err := r.admin.Info(r.ctx, "commandstats").Result()
	if err != nil {
		r.t.Fatal(err)
	}
	m := regexp.MustCompile(`cmdstat_auth:calls=(\d+).*failed_calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0, 0
	}
	calls, _ = strconv.Atoi(m[1])
	failed, _ = strconv.Atoi(m[2])
	return calls, failed
}

func (r *rotation) client(opt *redis.Options) *redis.Client {
	opt.Addr = r.node.Addr()
	opt.TLSConfig = r.node.Client().Options().TLSConfig
	opt.PoolSize = 4
	opt.DialTimeout = time.Second
	opt.ReadTimeout = 2 * time.Second
	c := redis.NewClient(opt)
	r.t.Cleanup(func() { c.Close() })
	return c
}

// Every pooled connection re-authenticates with the new token while the
// old one is still accepted; once the old password is removed the same
// connections keep serving commands, and the old token is refused.
func TestPooledConnectionsReauthenticateBeforeOldTokenIsRemoved(t *testing.T) {
	r := newRotation(t)
	client := r.client(&redis.Options{StreamingCredentialsProvider: r.p})

	r.useConns(client, 4)
	pooled := r.clients("")
	if len(pooled) < 4 {
		t.Fatalf("pool holds %d connections of the identity, want 4", len(pooled))
	}
	if n := r.p.listenerCount(); n < len(pooled) {
		t.Fatalf("%d subscriptions for %d connections", n, len(pooled))
	}

	// Entra issues a new token: both passwords are valid during the overlap.
	r.acl(">" + r.tokens[1])
	mark := r.mon.len()
	r.refresh()
	eventually(t, 10*time.Second, "an AUTH on every pooled connection", func() bool {
		r.useConns(client, 4) // go-redis re-AUTHs a marked connection when it passes through the pool
		authed := r.mon.authsSince(mark)
		for addr := range pooled {
			if !authed[addr] {
				return false
			}
		}
		return true
	})
	if calls, failed := r.authStats(); failed != 0 || calls < len(pooled) {
		t.Fatalf("server AUTH stats: %d calls, %d failed; want >= %d calls, none failed", calls, failed, len(pooled))
	}

	// The old token is withdrawn.
	r.acl("<" + r.tokens[0])
	old := r.client(&redis.Options{Username: testOID, Password: r.tokens[0], MaxRetries: -1})
	if err := old.Ping(r.ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("old token after removal: %v, want WRONGPASS", err)
	}
	_, refused := r.authStats() // the refused attempts of the old-token client above
	for range 3 {
		r.useConns(client, 4)
	}
	if err := client.Set(r.ctx, "after-rotation", "ok", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for addr := range pooled {
		if !r.clients("")[addr] {
			t.Errorf("pooled connection %s was closed during the rotation; it should have been re-authenticated", addr)
		}
	}
	if _, failed := r.authStats(); failed != refused {
		t.Fatalf("%d AUTH commands of the pooled connections failed", failed-refused)
	}
	// A connection dialed now authenticates with the new token.
	fresh := r.client(&redis.Options{StreamingCredentialsProvider: r.p})
	if err := fresh.Ping(r.ctx).Err(); err != nil {
		t.Fatalf("new connection after rotation: %v", err)
	}
}

// The control: a provider that only authenticates new connections (the
// func-style CredentialsProvider) leaves pooled connections on the token they
// were dialed with. This is why slotlock passes the streaming provider, and it
// shows that the AUTH detector above can tell the difference.
func TestFuncProviderDoesNotReauthenticatePooledConnections(t *testing.T) {
	r := newRotation(t)
	client := r.client(&redis.Options{CredentialsProviderContext: r.p.Credentials})
	r.useConns(client, 4)
	pooled := r.clients("")
	r.acl(">" + r.tokens[1])
	mark := r.mon.len()
	r.refresh()
	for range 5 {
		r.useConns(client, 4)
	}
	r.mon.sync(r.admin)
	authed := r.mon.authsSince(mark)
	for addr := range pooled {
		if authed[addr] {
			t.Fatalf("connection %s re-authenticated without a streaming provider; the control is wrong", addr)
		}
	}
}

// monitor reads a MONITOR stream and records which client address sent
// which command.
type monitor struct {
	mu     sync.Mutex
	events []monEvent
}

type monEvent struct{ addr, cmd string }

var monLine = regexp.MustCompile(`^\+\d+\.\d+ \[\d+ ([^\]]+)\] "([^"]+)"`)

func startMonitor(t *testing.T, addr string, cfg *tls.Config) *monitor {
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	br := bufio.NewReader(conn)
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := br.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("MONITOR: %q %v", line, err)
	}
	m := &monitor{}
	go func() {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if s := monLine.FindStringSubmatch(line); s != nil {
				m.mu.Lock()
				m.events = append(m.events, monEvent{addr: s[1], cmd: strings.ToUpper(s[2])})
				m.mu.Unlock()
			}
		}
	}()
	return m
}

func (m *monitor) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.events)
}

// authsSince returns the addresses that sent AUTH after event number mark.
func (m *monitor) authsSince(mark int) map[string]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]bool{}
	for _, e := range m.events[mark:] {
		if e.cmd == "AUTH" {
			out[e.addr] = true
		}
	}
	return out
}

// sync waits until the stream has caught up with a marker command.
func (m *monitor) sync(admin *redis.Client) {
	key := fmt.Sprintf("monitor-sync-%d", time.Now().UnixNano())
	admin.Exists(context.Background(), key)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		m.mu.Lock()
		n := len(m.events)
		seen := n > 0 && m.events[n-1].cmd == "EXISTS"
		m.mu.Unlock()
		if seen {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func fields(line string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Fields(line) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
