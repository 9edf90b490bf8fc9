package notify

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/scheduler"
)

var onFailed = scheduler.NotifyRule{To: "t", On: []string{EventFailed}}

// A receiver that answers 503 twice is tried again after 1s, then 2s
// (the backoff doubles, on the injected clock), and the third try is
// recorded sent.
func TestRetriesWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &receiver{code: func(n int) int {
			if n <= 2 {
				return http.StatusServiceUnavailable
			}
			return http.StatusOK
		}}
		f := newFixture(t, Config{Client: &http.Client{Transport: rec},
			Targets: []Target{{Name: "t", URL: "https://hooks.example/x", Retries: 4, Backoff: time.Second}}})
		f.n.Written(failedRun(onFailed))
		f.n.Wait()
		reqs := rec.requests()
		require.Len(t, reqs, 3)
		require.Equal(t, time.Second, reqs[1].at.Sub(reqs[0].at))
		require.Equal(t, 2*time.Second, reqs[2].at.Sub(reqs[1].at))
		for _, g := range reqs {
			require.Equal(t, "run-1:failed", g.header.Get("Idempotency-Key"), "every try carries the same key")
		}
		rs := f.records(t)
		require.Len(t, rs, 1)
		require.Equal(t, StateSent, rs[0].State)
		require.Equal(t, 3, rs[0].Attempts)
		require.Equal(t, 1, f.metrics.get("t/sent"))
	})
}

// A notification that cannot be delivered after its retries is recorded
// failed in the notification log, counted and logged as notify.failed —
// never dropped silently; a permanent refusal (a 4xx) is not retried.
func TestUndeliverableIsRecordedAndCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			code, tries int
		}{{http.StatusInternalServerError, 3}, {http.StatusForbidden, 1}} {
			rec := &receiver{code: func(int) int { return c.code }}
			f := newFixture(t, Config{Client: &http.Client{Transport: rec},
				Targets: []Target{{Name: "t", URL: "https://hooks.example/x", Retries: 2, Backoff: time.Second}}})
			f.n.Written(failedRun(onFailed))
			f.n.Wait()
			require.Len(t, rec.requests(), c.tries, "status %d", c.code)
			rs := f.records(t)
			require.Len(t, rs, 1)
			require.Equal(t, StateFailed, rs[0].State)
			require.Equal(t, c.code, rs[0].Status)
			require.Equal(t, 1, f.metrics.get("t/failed"))
			require.Contains(t, f.log.String(), `"event":"notify.failed"`)
		}
	})
}

// The webhook URL (its path is a Slack webhook's secret; user info and
// query too) and the header values appear in no log line, record or
// error, whether the receiver refuses or cannot be reached.
func TestSecretsNeverShown(t *testing.T) {
	const path, query, header = "/services/T0001/B0002/pathsecret123", "sig=querysecret456", "Bearer headersecret789"
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer refusing.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // connection refused: the client's error would quote the URL
	for _, base := range []string{refusing.URL, gone.URL} {
		u := strings.Replace(base, "http://", "http://user:pwsecret000@", 1) + path + "?" + query
		f := newFixture(t, Config{Targets: []Target{{Name: "t", URL: u, Retries: -1,
			Headers: map[string]string{"Authorization": header}}}})
		f.n.Written(failedRun(onFailed))
		f.n.Wait()
		rs := f.records(t)
		require.Len(t, rs, 1)
		require.Equal(t, StateFailed, rs[0].State)
		require.NotEmpty(t, rs[0].Error)
		text := f.log.String() + rs[0].value()
		for _, secret := range []string{"pathsecret123", "querysecret456", "headersecret789", "pwsecret000"} {
			require.NotContains(t, text, secret)
		}
		require.Contains(t, f.log.String(), `"to":"t"`, "the target is named by its name")
	}
}

// A sender that died after recording its notification pending: the
// sweeper takes the record over once it is older than TakeOverAfter,
// sends it again with the same key and X-Slotlock-Resend, and records
// the result in its place; the next pass finds nothing to do. A record
// younger than that is left to its sender.
func TestSweeperTakesOverPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &receiver{}
		f := newFixture(t, Config{Client: &http.Client{Transport: rec}, TakeOverAfter: time.Minute,
			Targets: []Target{{Name: "t", URL: "https://hooks.example/x"}}})
		dead := newRecord(failedRun(onFailed), "t", EventFailed, "r0", time.Now())
		_, err := f.n.append(dead, "")
		require.NoError(t, err)
		ctx := context.Background()
		require.Zero(t, f.n.Sweep(ctx), "a young pending record is its sender's")
		time.Sleep(time.Minute)
		require.Equal(t, 1, f.n.Sweep(ctx))
		f.n.Wait()
		reqs := rec.requests()
		require.Len(t, reqs, 1)
		require.Equal(t, "run-1:failed", reqs[0].header.Get("Idempotency-Key"))
		require.Equal(t, "true", reqs[0].header.Get("X-Slotlock-Resend"))
		rs := f.records(t)
		require.Len(t, rs, 1, "the pending record was replaced, not kept beside the result")
		require.Equal(t, StateSent, rs[0].State)
		require.Equal(t, "r0", rs[0].Writer)
		require.Equal(t, "r1", rs[0].By)
		time.Sleep(2 * time.Minute)
		require.Zero(t, f.n.Sweep(ctx))
		require.Len(t, rec.requests(), 1)
	})
}
