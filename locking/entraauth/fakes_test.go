package entraauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/redis/go-redis/v9/auth"

	"github.com/slotlock/slotlock/locking"
)

// jwt builds an unsigned token whose payload carries oid and a marker that
// makes every token distinct.
func jwt(t testing.TB, oid, marker string) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	claims := map[string]string{"aud": "https://redis.azure.com", "jti": marker}
	if oid != "" {
		claims["oid"] = oid
	}
	return enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." + enc(claims) + ".c2ln"
}

// fakeSource answers GetToken from a queue of responses set by the test;
// when the queue is empty it repeats the last token. It records the scopes
// it was asked for.
type fakeSource struct {
	mu     sync.Mutex
	queue  []response
	last   response
	calls  int
	scopes []string
}

type response struct {
	tok azcore.AccessToken
	err error
}

func (f *fakeSource) push(rs ...response) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append(f.queue, rs...)
}

func (f *fakeSource) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeSource) GetToken(ctx context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.scopes = append(f.scopes, opts.Scopes...)
	if err := ctx.Err(); err != nil {
		return azcore.AccessToken{}, err
	}
	if len(f.queue) > 0 {
		f.last, f.queue = f.queue[0], f.queue[1:]
	}
	if f.last.err == nil && f.last.tok.Token == "" {
		return azcore.AccessToken{}, errors.New("fakeSource: no token queued")
	}
	return f.last.tok, f.last.err
}

// recorder is a CredentialsListener that records what it was sent.
type recorder struct {
	mu   sync.Mutex
	next []auth.Credentials
	errs []error
}

func (r *recorder) OnNext(c auth.Credentials) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next = append(r.next, c)
}

func (r *recorder) OnError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

func (r *recorder) passwords() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.next {
		_, p := c.BasicAuth()
		out = append(out, p)
	}
	return out
}

// fakeClock is a manual locking.Clock for tests that cannot run in a
// synctest bubble (they talk to a real redis-server).
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	ch      chan time.Time
	at      time.Time
	pending bool
}

var _ locking.Clock = (*fakeClock)(nil)

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) locking.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1), at: c.now.Add(d), pending: true}
	c.timers = append(c.timers, t)
	c.fireLocked()
	return t
}

// Advance moves the clock and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.fireLocked()
}

// pendingTimers counts timers that have not fired nor been stopped.
func (c *fakeClock) pendingTimers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if t.pending {
			n++
		}
	}
	return n
}

func (c *fakeClock) fireLocked() {
	for _, t := range c.timers {
		if t.pending && !t.at.After(c.now) {
			t.pending = false
			t.ch <- c.now
		}
	}
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.pending
	t.pending = false
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.pending
	t.at, t.pending = t.c.now.Add(d), true
	t.c.fireLocked()
	return was
}

// eventually polls cond every few milliseconds until it holds or the
// deadline passes (real time: the other side is a real server).
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
