// Package ui is slotlock's read-only status page and its JSON API, served
// by the ops server when http.ui is true:
//
//	GET /                          the page: jobs, a job's slot timeline, the replicas
//	GET /api/v1/jobs               what `slotlock status --json` prints, paged
//	GET /api/v1/jobs/{job}/slots   every nominal slot of a window with its history entry
//
// The page is written by hand over the same data as the API, every value
// through the escaper html/template would use in its place (render.go,
// escape.go), with its stylesheet and a few lines of script embedded
// in the binary; every answer carries a Content-Security-Policy that lets
// the page load nothing but those two files, so even markup that escaped
// escaping could run no script. Nothing here writes to the lock stores.
//
// The page shares its replica's CPU with the scheduler, so it is cheap to
// refuse and bounded to serve: each client address and all clients
// together have a request rate (429 with Retry-After past it, decided
// before the URL is parsed), an answer is served again to every request
// for its URL for a second, and at most MaxConcurrent answers are made at
// once (503 past it) — at once while the page is little used, and in the
// part of each second where no slot is due (Locker.Yield) once it is in
// demand. Its stylesheet and script are served from memory, unlimited.
// See limits.go, cache.go and phase.go.
package ui

import (
	"context"
	"embed"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Locker is what the page and the API read.
type Backend struct {
	Locker locking.Store
	Specs  []scheduler.JobSpec
	Hash   string // the serving replica's definitions hash (Status.Hash)
	Now    func() time.Time
	// SettleAfter is how long a slot of job may lack a history entry and
	// still be pending (Scheduler.SettleAfter); nil: always pending.
	SettleAfter func(job string) time.Duration
	// MaxSlots caps the slots of one window (history.keep: older slots
	// have no entry to show); 0 or more than history.MaxWindowSlots:
	// history.MaxWindowSlots.
	MaxSlots int
	// MaxConcurrent is how many page and API requests are made at once
	// (cache misses); more are answered 503 at once, so a storm of page
	// loads cannot queue store reads behind the lock calls. 0:
	// DefaultMaxConcurrent.
	MaxConcurrent int
	// ClientRate bounds the page and API requests of one client address,
	// TotalRate those of all clients together; past either a request is
	// answered 429 with Retry-After (limits.go). Zero:
	// DefaultClientRate, DefaultTotalRate.
	ClientRate, TotalRate Rate
	// CacheFor is how long an answer is served again to requests for the
	// same URL (cache.go). 0: DefaultCacheFor; negative: no cache.
	CacheFor time.Duration
	// Yield, when not nil, is waited for before an answer is made while
	// the page is in demand (limits.go), once the request has its place
	// among MaxConcurrent: it returns when the page may use the CPU, e.g.
	// QuietPhase (phase.go); an error (the request ended) makes no
	// answer. nil: at once.
	Yield func(context.Context) error
}

// requestTimeout bounds the store reads of one request.
const requestTimeout = 15 * time.Second

// csp lets the page load its own stylesheet and script and nothing else:
// no inline script or style, no other origin, no form posts elsewhere,
// no framing.
const csp = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

//go:embed assets
var assets embed.FS

// Handler serves the page, its assets and the API; any other path is 404.
func Handler(b Backend) http.Handler {
	n := b.MaxConcurrent
	if n <= 0 {
		n = DefaultMaxConcurrent
	}
	cacheFor := b.CacheFor
	if cacheFor == 0 {
		cacheFor = DefaultCacheFor
	}
	s := &server{b: b, byName: make(map[string]scheduler.JobSpec, len(b.Specs)), busy: make(chan struct{}, n),
		limits: newLimiter(b.ClientRate, b.TotalRate), cache: &answerCache{ttl: cacheFor, answers: map[string]*answer{}}}
	for _, sp := range b.Specs {
		s.byName[sp.Name] = sp
	}
	static := http.NewServeMux()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page)
	for _, a := range []struct{ name, ctype string }{{"style.css", "text/css; charset=utf-8"}, {"refresh.js", "text/javascript; charset=utf-8"}} {
		body, err := assets.ReadFile("assets/" + a.name)
		if err != nil {
			panic(err) // embedded: cannot happen
		}
		static.HandleFunc("GET /static/"+a.name, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", a.ctype)
			w.Header().Set("Cache-Control", "public, max-age=300")
			_, _ = w.Write(body)
		})
	}
	mux.HandleFunc("GET /api/v1/jobs", s.apiJobs)
	mux.HandleFunc("GET /api/v1/jobs/{job}/slots", s.apiSlots)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	})
	made := s.limited(mux.ServeHTTP)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// Read-only: any other method, known or not, is refused
			// before it costs a token.
			h.Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "method "+strconv.Quote(r.Method)+" not allowed: the status page is read-only (GET, HEAD)")
			return
		}
		if r.URL.Path != "/" && !strings.HasPrefix(r.URL.Path, "/api/") {
			static.ServeHTTP(w, r) // embedded bytes or 404: nothing to bound
			return
		}
		if r, ok := s.admit(w, r); ok {
			s.cache.serve(w, r, s.now(), made)
		}
	})
}

type server struct {
	b      Backend
	byName map[string]scheduler.JobSpec
	busy   chan struct{} // one token per request being made (MaxConcurrent)
	limits *limiter
	cache  *answerCache
}

// maxSlots is the most slots one window lists.
func (s *server) maxSlots() int {
	if s.b.MaxSlots > 0 && s.b.MaxSlots < history.MaxWindowSlots {
		return s.b.MaxSlots
	}
	return history.MaxWindowSlots
}

func (s *server) now() time.Time {
	if s.b.Now == nil {
		return time.Now()
	}
	return s.b.Now()
}

func (s *server) settleAfter(job string) time.Duration {
	if s.b.SettleAfter == nil {
		return 1<<63 - 1
	}
	return s.b.SettleAfter(job)
}

// filterJobs returns the specs whose name contains sub, in configuration
// order.
func (s *server) filterJobs(sub string) []scheduler.JobSpec {
	if sub == "" {
		return s.b.Specs
	}
	return slices.DeleteFunc(slices.Clone(s.b.Specs), func(sp scheduler.JobSpec) bool {
		return !strings.Contains(sp.Name, sub)
	})
}

// status reads the status of specs[offset:offset+limit].
func (s *server) status(ctx context.Context, specs []scheduler.JobSpec, offset, limit int, now time.Time) (history.Status, error) {
	from := min(offset, len(specs))
	to := min(from+limit, len(specs))
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	jobs := make([]history.Job, 0, to-from)
	for _, sp := range specs[from:to] {
		jobs = append(jobs, sp.Describe())
	}
	return history.ReadStatus(ctx, s.b.Locker, jobs, s.b.Hash, now)
}

// slots reads job's timeline over [since, until].
func (s *server) slots(ctx context.Context, spec scheduler.JobSpec, since, until, now time.Time, limit int) (history.Slots, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return history.ReadSlots(ctx, s.b.Locker, spec.Describe(), history.SlotWindow{Since: since, Until: until, Now: now,
		SettleAfter: s.settleAfter(spec.Name), Max: limit})
}
