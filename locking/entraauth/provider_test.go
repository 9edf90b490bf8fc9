package entraauth

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func tok(t testing.TB, oid, marker string, exp time.Time) response {
	return response{tok: azcore.AccessToken{Token: jwt(t, oid, marker), ExpiresOn: exp}}
}

func TestObjectID(t *testing.T) {
	got, err := ObjectID(jwt(t, "0c6b2b4e-oid", "x"))
	if err != nil || got != "0c6b2b4e-oid" {
		t.Fatalf("ObjectID = %q, %v; want the oid claim", got, err)
	}
	// Padded base64 (some issuers pad) is accepted too.
	parts := strings.Split(jwt(t, "padded", "xy"), ".")
	for len(parts[1])%4 != 0 {
		parts[1] += "="
	}
	if got, err := ObjectID(strings.Join(parts, ".")); err != nil || got != "padded" {
		t.Fatalf("padded payload: %q, %v", got, err)
	}
	for name, token := range map[string]string{
		"no oid":     jwt(t, "", "x"),
		"not a jwt":  "opaque-secret",
		"bad base64": "a.%%%.c",
		"not json":   "a.bm90IGpzb24.c",
	} {
		if _, err := ObjectID(token); err == nil || !strings.HasPrefix(err.Error(), "entraauth: ") {
			t.Errorf("%s: err = %v, want an entraauth error", name, err)
		}
	}
}

// The first token is fetched by New for the Redis scope; the username is its
// oid; a token is replaced at 70% of its lifetime and published to every
// subscribed connection, not earlier.
func TestRefreshAtRatioOfLifetime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		src := &fakeSource{}
		src.push(tok(t, "oid-1", "t1", start.Add(time.Hour)), tok(t, "oid-1", "t2", start.Add(2*time.Hour)))
		p, err := New(t.Context(), src, Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if src.calls != 1 || !slices.Equal(src.scopes, []string{"https://redis.azure.com/.default"}) {
			t.Fatalf("New: %d calls, scopes %v; want 1 call for the Redis scope", src.calls, src.scopes)
		}
		var a, b recorder
		ca, _, err := p.Subscribe(&a)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.Subscribe(&b); err != nil {
			t.Fatal(err)
		}
		if u, pw := ca.BasicAuth(); u != "oid-1" || pw != jwt(t, "oid-1", "t1") {
			t.Fatalf("Subscribe credentials = %q/%q, want oid-1 and the first token", u, pw)
		}

		time.Sleep(42*time.Minute - time.Second)
		synctest.Wait()
		if n := src.callCount(); n != 1 || len(a.passwords()) != 0 {
			t.Fatalf("before 70%% of the lifetime: %d calls, %d updates; want none", n-1, len(a.passwords()))
		}
		time.Sleep(time.Second)
		synctest.Wait()
		want := []string{jwt(t, "oid-1", "t2")}
		if !slices.Equal(a.passwords(), want) || !slices.Equal(b.passwords(), want) {
			t.Fatalf("at 70%%: listeners got %d and %d updates, want the second token once each",
				len(a.passwords()), len(b.passwords()))
		}
		if u, pw, _ := p.Credentials(t.Context()); u != "oid-1" || pw != want[0] {
			t.Fatalf("Credentials after refresh = %q, want the new token", u)
		}
		// The next refresh is planned from the new token: 70% of its
		// 1h18m remaining lifetime after it arrived.
		time.Sleep(time.Duration(0.7*float64(78*time.Minute)) - time.Second)
		synctest.Wait()
		if n := src.callCount(); n != 2 {
			t.Fatalf("second refresh came early: %d calls", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := src.callCount(); n != 3 {
			t.Fatalf("second refresh missing: %d calls", n)
		}
	})
}

// A RefreshOn hint (azidentity sets it for long-lived tokens) decides when to
// refresh, but never later than Lead before expiry.
func TestRefreshOnHintAndLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		src := &fakeSource{}
		first := tok(t, "o", "t1", start.Add(24*time.Hour))
		first.tok.RefreshOn = start.Add(10 * time.Minute)
		second := tok(t, "o", "t2", start.Add(24*time.Hour+20*time.Minute))
		second.tok.RefreshOn = second.tok.ExpiresOn.Add(-time.Minute) // too late: Lead wins
		src.push(first, second, tok(t, "o", "t3", start.Add(48*time.Hour)))
		p, err := New(t.Context(), src, Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()

		time.Sleep(10*time.Minute - time.Second)
		synctest.Wait()
		if src.callCount() != 1 {
			t.Fatal("refreshed before the RefreshOn hint")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if src.callCount() != 2 {
			t.Fatal("no refresh at the RefreshOn hint")
		}
		// second expires at start+24h20m; the hint says 1m before, Lead (5m)
		// wins: refresh at start+24h15m.
		time.Sleep(24*time.Hour + 5*time.Minute - time.Second)
		synctest.Wait()
		if src.callCount() != 2 {
			t.Fatal("refreshed before expiry-Lead")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if src.callCount() != 3 {
			t.Fatal("no refresh at expiry-Lead")
		}
	})
}

// A source whose cache hands back the held token is asked again with backoff
// and nothing is published until a new token arrives; failures keep the
// held token in use while it is valid.
func TestUnchangedAndFailedFetchesRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		src := &fakeSource{}
		t1 := tok(t, "o", "t1", start.Add(time.Hour))
		src.push(t1, t1, t1, response{err: errors.New("imds: 503")}, tok(t, "o", "t2", start.Add(2*time.Hour)))
		p, err := New(t.Context(), src, Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		var r recorder
		if _, _, err := p.Subscribe(&r); err != nil {
			t.Fatal(err)
		}
		time.Sleep(42 * time.Minute) // 70%: same token
		synctest.Wait()
		time.Sleep(time.Second) // +1s: same token
		synctest.Wait()
		if n := src.callCount(); n != 3 || len(r.passwords()) != 0 {
			t.Fatalf("after two unchanged answers: %d calls, %d updates; want 3 calls, no update", n, len(r.passwords()))
		}
		time.Sleep(2 * time.Second) // +2s: error
		synctest.Wait()
		if _, pw, err := p.Credentials(t.Context()); err != nil || pw != t1.tok.Token {
			t.Fatalf("after a failed refresh Credentials = %v; want the held, still valid token", err)
		}
		if n := src.callCount(); n != 4 {
			t.Fatalf("calls = %d, want 4 (Credentials must not fetch while the token is valid)", n)
		}
		time.Sleep(4 * time.Second) // +4s: new token
		synctest.Wait()
		if got := r.passwords(); !slices.Equal(got, []string{jwt(t, "o", "t2")}) {
			t.Fatalf("updates = %d, want the new token once", len(got))
		}
	})
}

// Once the held token has expired (every refresh failed), new connections
// fail at once with the refresh error instead of waiting for the source
// (go-redis dials under a command's short deadline); the loop retries at
// least every 5 s, and the first token it gets is published to existing
// subscribers and handed to new ones.
func TestExpiredTokenFailsFastUntilARefreshSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		src := &fakeSource{}
		src.push(tok(t, "o", "t1", start.Add(10*time.Minute)), response{err: errors.New("imds down")})
		p, err := New(t.Context(), src, Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		var old recorder
		if _, _, err := p.Subscribe(&old); err != nil {
			t.Fatal(err)
		}
		time.Sleep(11 * time.Minute)
		synctest.Wait()
		calls := src.callCount()
		if _, _, err := p.Subscribe(&recorder{}); err == nil || !strings.Contains(err.Error(), "imds down") {
			t.Fatalf("Subscribe with an expired token and a failing source: err = %v", err)
		}
		if _, _, err := p.Credentials(t.Context()); err == nil || !strings.Contains(err.Error(), "expired") {
			t.Fatalf("Credentials returned an expired token: err = %v", err)
		}
		if n := src.callCount(); n != calls {
			t.Fatalf("Subscribe/Credentials called the token source (%d calls); only the loop may", n-calls)
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if n := src.callCount() - calls; n < 6 {
			t.Fatalf("%d refresh attempts in 30 s after expiry, want one at least every 5 s", n)
		}
		src.push(tok(t, "o", "t2", time.Now().Add(time.Hour)))
		time.Sleep(5 * time.Second)
		synctest.Wait()
		c, _, err := p.Subscribe(&recorder{})
		if err != nil {
			t.Fatalf("after the source recovered: %v", err)
		}
		if _, pw := c.BasicAuth(); pw != jwt(t, "o", "t2") {
			t.Fatal("Subscribe did not return the new token")
		}
		if got := old.passwords(); !slices.Equal(got, []string{jwt(t, "o", "t2")}) {
			t.Fatalf("existing subscriber got %d updates, want the new token", len(got))
		}
	})
}

func TestSubscribeIsIdempotentAndUnsubscribes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		src := &fakeSource{}
		src.push(tok(t, "o", "t1", start.Add(time.Hour)), tok(t, "o", "t2", start.Add(2*time.Hour)),
			tok(t, "o", "t3", start.Add(3*time.Hour)))
		p, err := New(t.Context(), src, Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		var r recorder
		_, un1, _ := p.Subscribe(&r)
		_, un2, _ := p.Subscribe(&r)
		if n := p.listenerCount(); n != 1 {
			t.Fatalf("same listener twice: %d subscriptions", n)
		}
		time.Sleep(42 * time.Minute)
		synctest.Wait()
		if n := len(r.passwords()); n != 1 {
			t.Fatalf("one listener subscribed twice got %d updates, want 1", n)
		}
		if err := un2(); err != nil {
			t.Fatal(err)
		}
		if err := un1(); err != nil { // second call: safe no-op
			t.Fatal(err)
		}
		if n := p.listenerCount(); n != 0 {
			t.Fatalf("after unsubscribe: %d subscriptions", n)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(r.passwords()); n != 1 {
			t.Fatalf("unsubscribed listener got %d updates", n)
		}
	})
}

func TestNewFailsWithoutUsableToken(t *testing.T) {
	for name, r := range map[string]response{
		"source error": {err: errors.New("no identity")},
		"no oid":       tok(t, "", "t", time.Now().Add(time.Hour)),
		"expired":      tok(t, "o", "t", time.Now().Add(-time.Minute)),
	} {
		src := &fakeSource{}
		src.push(r)
		if p, err := New(context.Background(), src, Options{Logger: quiet}); err == nil {
			p.Close()
			t.Errorf("%s: New succeeded", name)
		}
	}
	// With an explicit username a token without an oid claim is usable.
	src := &fakeSource{}
	src.push(response{tok: azcore.AccessToken{Token: "opaque", ExpiresOn: time.Now().Add(time.Hour)}})
	p, err := New(context.Background(), src, Options{Logger: quiet, Username: "app"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if u, pw, _ := p.Credentials(context.Background()); u != "app" || pw != "opaque" {
		t.Fatalf("Credentials = %q/%q", u, pw)
	}
	if _, err := New(context.Background(), src, Options{RefreshRatio: 1.5}); err == nil {
		t.Error("RefreshRatio 1.5 accepted")
	}
}

func TestCloseStopsRefreshing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{}
		src.push(tok(t, "o", "t1", time.Now().Add(time.Hour)))
		p, err := New(t.Context(), src, Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal("second Close:", err)
		}
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		if n := src.callCount(); n != 1 {
			t.Fatalf("GetToken called %d times after Close", n-1)
		}
		if _, _, err := p.Subscribe(&recorder{}); !errors.Is(err, ErrClosed) {
			t.Fatalf("Subscribe after Close: %v", err)
		}
	})
}

// A retry wait armed while the token was still valid must not run past its
// expiry: with a one-minute backoff armed 9 s before expiry, the next
// attempt comes at expiry, not 51 s after it (then every 5 s).
func TestRetryWaitEndsAtExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		src := &fakeSource{}
		src.push(tok(t, "o", "t1", start.Add(10*time.Minute+30*time.Second)), response{err: errors.New("imds down")})
		p, err := New(t.Context(), src, Options{Logger: quiet, RetryMin: time.Minute, RetryMax: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		// Refresh due at 0.7 x 630 s = 7m21s; failing attempts then at
		// 8m21s, 9m21s, 10m21s (a minute apart), the token expiring at 10m30s.
		time.Sleep(10*time.Minute + 29*time.Second)
		synctest.Wait()
		before := src.callCount()
		time.Sleep(6 * time.Second)
		synctest.Wait()
		if src.callCount() == before {
			t.Fatalf("no refresh attempt within 5 s of the token's expiry (%d attempts so far)", before)
		}
	})
}
