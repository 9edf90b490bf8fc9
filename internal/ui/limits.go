package ui

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The page's limits. The page shares its replica's CPU with the
// scheduler, so what a crowd of clients (or one script in a loop) can make
// it do is bounded before it costs anything: each page or API request
// first takes a token from its client's bucket (keyed by the remote IP
// address) and from the bucket of all clients together, else it is
// answered 429 with the Retry-After the buckets need — from bytes prepared
// once, before the URL's query is parsed or a store read; then, on a cache
// miss, a place among MaxConcurrent, else 503 at once. What a refusal
// costs is a map lookup and a small write, and a client that honours
// Retry-After comes back when a token is there. The stylesheet and the
// script are embedded bytes and take no token; a method other than GET
// and HEAD is 405 before any token.
//
// The bucket of all clients also tells a person from a storm: while it
// holds at least half its burst (the page is little used) an answer is
// made at once; below that (many requests, from many clients or one) every
// answer waits for the quiet part of the second (phase.go), where it
// cannot delay a claim.

// Rate is a token bucket: PerSecond tokens a second, at most Burst held.
type Rate struct {
	PerSecond float64
	Burst     int
}

// The page's default limits. One person's browser — the page, a job's
// timeline, the JSON API, a burst of clicks, a reload every 15 s — or a
// script asking once a second stays inside them and is answered at once;
// more than that is what `slotlock status --json` and `slotlock history`
// are for. The rate of all clients together is the storm bound: what
// TestPageStorm holds to 1.1x of a quiet fleet's start delay is a request
// a second made in the quiet phase; its burst is twice a client's, so that
// one client's burst alone leaves the page answering at once.
var (
	// DefaultClientRate is Locker.ClientRate's default: a request a
	// second per client address, ten at once.
	DefaultClientRate = Rate{PerSecond: 1, Burst: 10}
	// DefaultTotalRate is Locker.TotalRate's default: a request a second
	// for all clients together, twenty at once; answered at once while
	// ten or more are left (limiter.admit).
	DefaultTotalRate = Rate{PerSecond: 1, Burst: 20}
)

// DefaultMaxConcurrent is Locker.MaxConcurrent's default.
const DefaultMaxConcurrent = 2

// maxClients bounds the client buckets held: past it, buckets that have
// refilled (as good as new) are dropped, and while it is still full a new
// address shares one overflow bucket.
const maxClients = 1024

func (r Rate) orDefault(def Rate) Rate {
	if r.PerSecond <= 0 || r.Burst <= 0 {
		return def
	}
	return r
}

// bucket is a token bucket's state.
type bucket struct {
	tokens float64
	at     time.Time // of the last refill
}

// refill adds the tokens earned since the last refill.
func (b *bucket) refill(now time.Time, r Rate) {
	if now.After(b.at) {
		b.tokens = min(float64(r.Burst), b.tokens+now.Sub(b.at).Seconds()*r.PerSecond)
		b.at = now
	}
}

// wait is how long until b holds a token.
func (b *bucket) wait(r Rate) time.Duration {
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration(math.Ceil((1 - b.tokens) / r.PerSecond * float64(time.Second)))
}

// limiter holds the client buckets and the total one.
type limiter struct {
	client, total Rate
	mu            sync.Mutex
	clients       map[string]*bucket
	all           bucket
}

func newLimiter(client, total Rate) *limiter {
	client, total = client.orDefault(DefaultClientRate), total.orDefault(DefaultTotalRate)
	return &limiter{client: client, total: total, clients: map[string]*bucket{},
		all: bucket{tokens: float64(total.Burst)}}
}

// take takes a token from key's bucket and the total one at now, or
// returns how long until both hold one (and takes none).
func (l *limiter) take(key string, now time.Time) (ok bool, retry time.Duration) {
	ok, retry, _ = l.admit(key, now)
	return ok, retry
}

// admit is take that also says whether the request may be answered at
// once (prompt): whether, its token taken, the bucket of all clients
// still holds at least half its burst — the page is little used, as by a
// person or two. Under a storm that bucket stays near empty, so every
// answer waits for the quiet phase (Locker.Yield).
func (l *limiter) admit(key string, now time.Time) (ok bool, retry time.Duration, prompt bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucketOf(key, now)
	b.refill(now, l.client)
	l.all.refill(now, l.total)
	if w := max(b.wait(l.client), l.all.wait(l.total)); w > 0 {
		return false, w, false
	}
	b.tokens--
	l.all.tokens--
	return true, 0, l.all.tokens >= float64(l.total.Burst)/2
}

// bucketOf is key's bucket, made full for a new key.
func (l *limiter) bucketOf(key string, now time.Time) *bucket {
	if b := l.clients[key]; b != nil {
		return b
	}
	if len(l.clients) >= maxClients {
		for k, b := range l.clients {
			if b.refill(now, l.client); b.tokens >= float64(l.client.Burst) {
				delete(l.clients, k)
			}
		}
		if len(l.clients) >= maxClients {
			key = "" // the overflow bucket
			if b := l.clients[key]; b != nil {
				return b
			}
		}
	}
	b := &bucket{tokens: float64(l.client.Burst), at: now}
	l.clients[key] = b
	return b
}

// clientKey is the address a request's tokens are counted against: its
// remote IP (not a forwarded-for header, which the client writes).
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// admit takes r's tokens, or answers 429 and returns false. The request
// it returns says whether its answer may be made at once (promptly).
func (s *server) admit(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	ok, wait, prompt := s.limits.admit(clientKey(r), s.now())
	if !ok {
		secs := strconv.Itoa(max(1, int(math.Ceil(wait.Seconds()))))
		refuse(w, r, http.StatusTooManyRequests, secs, tooManyJSON)
		return r, false
	}
	if prompt {
		r = r.WithContext(context.WithValue(r.Context(), promptKey{}, true))
	}
	return r, true
}

// promptKey marks a request whose answer is made at once, without
// waiting for Locker.Yield (limiter.admit).
type promptKey struct{}

func promptly(r *http.Request) bool {
	p, _ := r.Context().Value(promptKey{}).(bool)
	return p
}

// limited serves h when fewer than MaxConcurrent requests are being
// served, else answers 503 with Retry-After at once (no queue: a waiting
// request would only hold its connection and read stale data later).
// Unless the request is to be answered promptly, h waits for Yield first.
func (s *server) limited(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.busy <- struct{}{}:
			defer func() { <-s.busy }()
			if s.b.Yield != nil && !promptly(r) {
				from := s.now()
				if s.b.Yield(r.Context()) != nil {
					writeError(w, http.StatusServiceUnavailable, "the request ended before its answer was made")
					return
				}
				w.Header().Add("Server-Timing", quietTiming(s.now().Sub(from)))
			}
			h(w, r)
		default:
			refuse(w, r, http.StatusServiceUnavailable, "2", busyJSON)
		}
	}
}

// quietTiming is the Server-Timing entry of an answer that waited d for
// the quiet phase: a browser's developer tools show it beside the
// request, so whoever wonders why the page was slow under a storm sees
// the wait and its reason, and a client can tell an answer made at once
// (none) from one made in the quiet phase without timing it.
func quietTiming(d time.Duration) string {
	return `quiet;dur=` + strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', -1, 64) +
		`;desc="waited for the quiet part of the second"`
}

// The refusals' bodies, encoded once.
var (
	tooManyJSON = errorJSON("too many requests: this client or all clients together asked more often than the status page answers; retry after the Retry-After seconds")
	busyJSON    = errorJSON("busy: too many status requests at once; retry shortly")
)

func errorJSON(msg string) []byte {
	b, err := json.MarshalIndent(struct {
		Error string `json:"error"`
	}{msg}, "", "  ")
	if err != nil {
		panic(err) // a string: cannot happen
	}
	return append(b, '\n')
}

// refuse answers code with Retry-After secs: the page itself gets a line
// of HTML that reloads once that is over, the API body.
func refuse(w http.ResponseWriter, r *http.Request, code int, secs string, body []byte) {
	h := w.Header()
	h.Set("Retry-After", secs)
	if r.URL.Path == "/" {
		h.Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`<!doctype html><meta http-equiv="refresh" content="` + secs +
			`"><title>slotlock: busy</title><p>The status page is answering as often as it may; it reloads in ` + secs + ` s.</p>` + "\n"))
		return
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
