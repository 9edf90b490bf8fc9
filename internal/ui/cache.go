package ui

import (
	"bytes"
	"maps"
	"net/http"
	"sync"
	"time"
)

// The answer cache: a page or API answer is kept for CacheFor (a second
// by default) and served again to every request for the same URL, and
// requests for a URL whose answer is being made wait for it instead of
// making their own. So N people (or a wall of screens) loading the same
// week window cost the stores and the CPU one read and one rendering a
// second, not N. Only 200 answers are kept; the URL is the key as sent,
// not parsed.

// DefaultCacheFor is Locker.CacheFor's default.
const DefaultCacheFor = time.Second

// maxCacheBytes bounds the bodies the cache holds (a week window's page is
// about 2.3 MB); an answer past it is served, not kept.
const maxCacheBytes = 8 << 20

// answerCache holds recent answers by URL.
type answerCache struct {
	ttl     time.Duration // <= 0: nothing is kept or shared
	mu      sync.Mutex
	size    int // bytes of the kept bodies
	answers map[string]*answer
}

// answer is one URL's answer, being made until done is closed.
type answer struct {
	done   chan struct{}
	at     time.Time // when it was asked for
	ok     bool      // a 200: kept, and served to who waited
	header http.Header
	body   []byte
}

// serve answers r from the cache, from the answer being made for its URL,
// or by render (whose answer it then keeps when it is a 200).
func (c *answerCache) serve(w http.ResponseWriter, r *http.Request, now time.Time, render http.HandlerFunc) {
	if c.ttl <= 0 {
		render(w, r)
		return
	}
	key := r.URL.Path + "?" + r.URL.RawQuery
	c.mu.Lock()
	c.expire(now)
	if a := c.answers[key]; a != nil {
		c.mu.Unlock()
		select {
		case <-a.done:
		case <-r.Context().Done():
			return
		}
		if a.ok {
			a.write(w)
			return
		}
		render(w, r) // not a 200 (a store error, a refusal): this request tries its own
		return
	}
	a := &answer{done: make(chan struct{}), at: now}
	c.answers[key] = a
	c.mu.Unlock()

	rec := &recorder{header: http.Header{}, code: http.StatusOK}
	render(rec, r)
	a.ok, a.header, a.body = rec.wrote && rec.code == http.StatusOK, rec.header, rec.body.Bytes()
	c.mu.Lock()
	if a.ok && c.size+len(a.body) <= maxCacheBytes {
		c.size += len(a.body)
	} else {
		delete(c.answers, key)
	}
	c.mu.Unlock()
	close(a.done)
	rec.writeTo(w)
}

// expire drops the answers older than ttl that are done (c.mu held).
func (c *answerCache) expire(now time.Time) {
	for k, a := range c.answers {
		if now.Sub(a.at) < c.ttl {
			continue
		}
		select {
		case <-a.done:
			delete(c.answers, k)
			c.size -= len(a.body)
		default: // still being made: its maker drops or keeps it
		}
	}
}

// write serves a kept answer.
func (a *answer) write(w http.ResponseWriter) {
	maps.Copy(w.Header(), a.header)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(a.body)
}

// recorder is an http.ResponseWriter that keeps the answer.
type recorder struct {
	header http.Header
	code   int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.wrote = true
	return r.body.Write(p)
}

// writeTo sends the recorded answer to w.
func (r *recorder) writeTo(w http.ResponseWriter) {
	maps.Copy(w.Header(), r.header)
	w.WriteHeader(r.code)
	_, _ = w.Write(r.body.Bytes())
}
