package cli_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/internal/secrettest"
)

// The real binary notifies a failing job's runs: to a webhook that takes
// them (notify.sent, with the Idempotency-Key <run id>:failed), to one
// that refuses them (notify.failed after its retries) and to one that is
// gone. No credential of the webhooks — user info, the secret path, query
// values, header values — is in `validate -v` or in any log line, and
// /metrics counts slotlock_notifications_total by target and result.
func TestNotifyWebhooksKeepTheirSecrets(t *testing.T) {
	t.Parallel()
	var got atomic.Int32
	var key atomic.Value
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer "+secrettest.Bearer {
			got.Add(1)
			key.Store(r.Header.Get("Idempotency-Key"))
		}
	}))
	defer ok.Close()
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer refusing.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	secretURL := func(base string) string {
		return strings.Replace(base, "://", "://"+secrettest.URLUser+":"+secrettest.URLPassword+"@", 1) +
			"/services/T01/B02/" + secrettest.Token + "?sig=" + secrettest.Sig
	}
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`
log: {format: json, level: info}
http: {addr: %q}
notify:
  - name: ok
    webhook: {url: %q, headers: {Authorization: "Bearer %s"}}
  - name: refusing
    webhook: {url: %q, format: slack, retry: {max: 1, backoff: 100ms}}
  - name: gone
    webhook: {url: %q, format: teams, timeout: 1s, retry: {max: 0}}
jobs:
  - name: broken
    schedule: "* * * * * *"
    plugin: exec
    params: {command: ["/bin/false"]}
    notify:
      - {to: ok, on: [failed]}
      - {to: refusing, on: [failed]}
      - {to: gone, on: [failed]}
`, addr, secretURL(ok.URL), secrettest.Bearer, secretURL(refusing.URL), secretURL(gone.URL)))

	out, errOut, code := slotlock(t, nil, "validate", "-v", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	requireNoSecret(t, out, errOut)

	p := startReplica(t, cfg, "SLOTLOCK_REPLICA=r1")
	waitFor(t, 30*time.Second, "a notification sent and two failed", func() bool {
		return len(p.events("notify.sent")) > 0 && len(p.events("notify.failed")) > 1
	})
	_, metrics := httpGet("http://" + addr + "/metrics")
	code, _ = p.stop(t, 30*time.Second)
	require.Equal(t, 0, code)
	requireNoSecret(t, p.rawLog(), metrics)
	require.Positive(t, got.Load())
	require.Regexp(t, `^[0-9a-f]+:failed$`, key.Load())
	for _, ev := range p.events("notify.failed") {
		require.NotEmpty(t, ev["error"])
		require.Contains(t, []any{"refusing", "gone"}, ev["to"])
	}
	require.Contains(t, metrics, `slotlock_notifications_total{result="sent",to="ok"}`)
	require.Contains(t, metrics, `slotlock_notifications_total{result="failed",to="refusing"}`)
}
