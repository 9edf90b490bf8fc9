package ui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// QuietPhase returns at once inside [from, to) of a second, else at the
// next from; a request that ends while waiting gets its error.
func TestQuietPhase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		yield := QuietPhase(time.Now, 500*time.Millisecond, 900*time.Millisecond)
		ctx := context.Background()
		base := time.Now().Truncate(time.Second).Add(time.Second)
		for _, c := range []struct{ at, back time.Duration }{
			{0, 500 * time.Millisecond},
			{499 * time.Millisecond, 500 * time.Millisecond},
			{500 * time.Millisecond, 500 * time.Millisecond},
			{899 * time.Millisecond, 899 * time.Millisecond},
			{900 * time.Millisecond, 1500 * time.Millisecond},
		} {
			time.Sleep(time.Until(base.Add(c.at)))
			require.NoError(t, yield(ctx))
			require.Equal(t, c.back, time.Since(base), "called at %v", c.at)
			base = base.Add(2 * time.Second)
		}
		time.Sleep(time.Until(base))
		ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, yield(ctx), context.DeadlineExceeded)
	})
}

// The page makes its answer only once Yield lets it, holding its place
// among MaxConcurrent meanwhile; a request that ends while waiting makes
// none, and that answer is not kept.
func TestAnswerWaitsForYield(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		s := &server{busy: make(chan struct{}, 1), b: Backend{Yield: func(ctx context.Context) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}}
		made := 0
		h := s.limited(func(w http.ResponseWriter, r *http.Request) { made++ })
		done := make(chan struct{})
		go func() { defer close(done); h(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/jobs", nil)) }()
		synctest.Wait()
		require.Equal(t, 0, made, "waiting for Yield")
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest("GET", "/api/v1/jobs", nil))
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, "the waiting request holds its place")
		close(release)
		<-done
		require.Equal(t, 1, made)

		ctx, cancel := context.WithCancel(context.Background())
		s.b.Yield = func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
		c := &answerCache{ttl: time.Second, answers: map[string]*answer{}}
		go cancel()
		rec = httptest.NewRecorder()
		c.serve(rec, httptest.NewRequest("GET", "/", nil).WithContext(ctx), time.Now(), h)
		require.Equal(t, http.StatusServiceUnavailable, rec.Code)
		require.Equal(t, 1, made)
		require.Empty(t, c.answers)
	})
}
