package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// The JSON API. Every answer is one JSON document; an error is
// {"error": "..."} with 400 (a bad parameter), 404 (an unknown job or
// path) or 503 (the lock stores did not answer).

// Jobs listed by /api/v1/jobs without ?limit=, and at most with it.
const (
	defaultAPIJobs = 100
	maxAPIJobs     = 1000
)

// defaultWindow is the slot window without ?since=.
const defaultWindow = time.Hour

// jobsDoc is /api/v1/jobs: the document `slotlock status --json` prints,
// for the jobs of one page, with the paging.
type jobsDoc struct {
	history.Status
	Total  int    `json:"total"` // jobs that match the filter
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
	Filter string `json:"filter,omitempty"`
}

// apiJobs: ?job=SUBSTRING&limit=N&offset=N.
func (s *server) apiJobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := intParam(q, "limit", defaultAPIJobs, 1, maxAPIJobs)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	offset, err := intParam(q, "offset", 0, 0, 1<<31-1)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	specs := s.filterJobs(q.Get("job"))
	st, err := s.status(r.Context(), specs, offset, limit, s.now())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "the lock stores did not answer")
		return
	}
	writeJSON(w, http.StatusOK, jobsDoc{Status: st, Total: len(specs), Offset: offset, Limit: limit, Filter: q.Get("job")})
}

// apiSlots: ?since=DUR|TIME&until=DUR|TIME&limit=N.
func (s *server) apiSlots(w http.ResponseWriter, r *http.Request) {
	spec, ok := s.byName[r.PathValue("job")]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no job named %q in the configuration", r.PathValue("job")))
		return
	}
	q := r.URL.Query()
	now := s.now()
	since, until, err := window(q.Get("since"), q.Get("until"), now)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	limit, err := intParam(q, "limit", s.maxSlots(), 1, s.maxSlots())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	sl, err := s.slots(r.Context(), spec, since, until, now, limit)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "the lock stores did not answer")
		return
	}
	writeJSON(w, http.StatusOK, sl)
}

// window reads since and until (each "" for its default: an hour ago,
// and now) as ParseSince does.
func window(sinceParam, untilParam string, now time.Time) (since, until time.Time, err error) {
	since, until = now.Add(-defaultWindow), now
	if sinceParam != "" {
		if since, err = history.ParseSince(sinceParam, now); err != nil {
			return since, until, fmt.Errorf("since: %w", err)
		}
	}
	if untilParam != "" {
		if until, err = history.ParseSince(untilParam, now); err != nil {
			return since, until, fmt.Errorf("until: %w", err)
		}
	}
	if until.Before(since) {
		return since, until, fmt.Errorf("until (%s) is before since (%s)", until.UTC().Format(time.RFC3339), since.UTC().Format(time.RFC3339))
	}
	return since, until, nil
}

// intParam reads q's name as an integer in [lo, hi], def when absent.
func intParam(q url.Values, name string, def, lo, hi int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s: want an integer from %d to %d, got %q", name, lo, hi, v)
	}
	return n, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, struct {
		Error string `json:"error"`
	}{msg})
}
