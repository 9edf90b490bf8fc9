package fence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
)

// The headers slotlock's http plugin puts on every request (it overrides
// headers of the same name from the job's params, so a receiver can trust
// them as far as it trusts the caller), and the one the middleware adds to
// a 409.
const (
	HeaderJob          = "X-Slotlock-Job"             // the job's name
	HeaderSlot         = "X-Slotlock-Slot"            // the slot, RFC 3339 UTC, or "manual"
	HeaderRunID        = "X-Slotlock-Run-Id"          // the run id, shared by retry attempts
	HeaderAttempt      = "X-Slotlock-Attempt"         // the attempt, from 1
	HeaderToken        = "X-Slotlock-Fencing-Token"   // the run's fencing token, decimal
	HeaderTokenHighest = "X-Slotlock-Fencing-Highest" // on a 409: the highest token accepted for the job
)

// Store keeps the highest token accepted per key for the HTTP middleware.
// Advance raises key's highest token to token, or returns a *StaleError
// (and changes nothing) when a higher one was already accepted; it must be
// atomic. Memory and Redis are Stores.
type Store interface {
	Advance(ctx context.Context, key string, token uint64) error
}

// HTTP is net/http middleware for a service that receives slotlock's http
// plugin's calls: it admits a request only if its X-Slotlock-Fencing-Token
// is not lower than the highest token already admitted for its
// X-Slotlock-Job, and raises that highest token as it admits it.
//
//   - a lower token: 409 Conflict, with X-Slotlock-Fencing-Highest and a
//     text body naming both tokens; slotlock's http plugin fails the run
//     with error class "stale_token";
//   - no X-Slotlock-Job or X-Slotlock-Fencing-Token header: 400 Bad Request,
//     unless AllowUnfenced (then the request passes unguarded);
//   - a token that is not a decimal uint64: 400 Bad Request;
//   - the Store failing: 503 Service Unavailable (fail closed: an
//     unverified write is not let through).
//
// The handler of an admitted request finds the job and token with
// FromContext. The middleware orders admissions; two requests admitted
// close together (the older first) still run the handler concurrently. When
// the handler's own write must be ordered too, pass the token on to a data
// guard (Redis or SQL) in the handler.
//
// Wrap the handler once and reuse the result; HTTP is safe for concurrent
// use.
type HTTP struct {
	// Store keeps the highest token per job. nil: an in-process Memory,
	// one per Wrap, which serves a receiver with a single instance; use a
	// Redis (or another shared Store) when the receiver runs several.
	Store Store
	// KeyPrefix is put before the job name to make the Store's key;
	// default "slotlock:http:". With a Redis store the fence key is then
	// "{slotlock:http:<job>}:fence".
	KeyPrefix string
	// AllowUnfenced lets a request without the job or token header pass
	// unguarded (for a receiver that also serves other callers). Default:
	// such a request gets 400.
	AllowUnfenced bool
	// Logger gets one warning per refused request; nil: slog.Default().
	Logger *slog.Logger
}

// Admitted is what the middleware admitted a request with.
type Admitted struct {
	Job   string
	Token uint64
}

type admittedKey struct{}

// FromContext returns the job and token a request was admitted with, from
// the context of a request that passed the HTTP middleware.
func FromContext(ctx context.Context) (Admitted, bool) {
	a, ok := ctx.Value(admittedKey{}).(Admitted)
	return a, ok
}

// Wrap returns next guarded by the middleware.
func (h HTTP) Wrap(next http.Handler) http.Handler {
	store := h.Store
	if store == nil {
		store = &Memory{}
	}
	prefix := h.KeyPrefix
	if prefix == "" {
		prefix = "slotlock:http:"
	}
	log := h.Logger
	if log == nil {
		log = slog.Default()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		job, raw := r.Header.Get(HeaderJob), r.Header.Get(HeaderToken)
		if job == "" || raw == "" {
			if h.AllowUnfenced {
				next.ServeHTTP(w, r)
				return
			}
			http.Error(w, "fence: the request needs the headers "+HeaderJob+" and "+HeaderToken, http.StatusBadRequest)
			return
		}
		token, err := strconv.ParseUint(raw, 10, 64)
		if err != nil {
			http.Error(w, "fence: "+HeaderToken+" must be a decimal integer", http.StatusBadRequest)
			return
		}
		err = store.Advance(r.Context(), prefix+job, token)
		var stale *StaleError
		switch {
		case errors.As(err, &stale):
			log.WarnContext(r.Context(), "fence: stale request refused", "job", job, "fencing_token", token,
				"highest", stale.Highest, "run_id", r.Header.Get(HeaderRunID))
			w.Header().Set(HeaderTokenHighest, strconv.FormatUint(stale.Highest, 10))
			http.Error(w, fmt.Sprintf("fence: stale fencing token %d for job %s: token %d was already accepted", token, job, stale.Highest), http.StatusConflict)
			return
		case err != nil:
			log.ErrorContext(r.Context(), "fence: token store failed; request refused", "job", job, "error", err)
			http.Error(w, "fence: the token store is unavailable", http.StatusServiceUnavailable)
			return
		}
		ctx := context.WithValue(r.Context(), admittedKey{}, Admitted{Job: job, Token: token})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
