package config

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/internal/secrettest"
)

// The configuration dump (start-up line, validate -v) masks URLs the way
// the http plugin's log lines do: user info and every query value except
// show_query, credential header values whatever their name, and URLs and
// credential values inside any other plugin's params.
func TestRedactedMasksURLsAndHeaders(t *testing.T) {
	cfg := mustLoad(t, `
redis:
  nodes: [{addr: "cache-a:6380"}]
  password: `+secrettest.RedisPass+`
  tls: true
jobs:
  - name: hook
    schedule: "@every 10s"
    plugin: http
    params:
      url: "https://`+secrettest.URLUser+`:`+secrettest.URLPassword+`@fn.example/api/run?sig=`+secrettest.Sig+`&code=`+secrettest.Code+`&page=2"
      show_query: [page]
      headers:
        x-functions-key: `+secrettest.APIKey+`
        Ocp-Apim-Subscription-Key: `+secrettest.APIKey+`
        X-Slotlock-Secret: `+secrettest.SlotlockHdr+`
        Content-Type: application/json
  - name: sync
    schedule: "@every 10s"
    plugin: exec
    params:
      command: ["curl", "https://h.example/x?token=`+secrettest.Token+`", "--header", "Authorization: Bearer `+secrettest.Bearer+`"]
      env:
        STORAGE: "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=`+secrettest.EnvSecret+`"
        BUCKET: reports
`)
	b, err := json.Marshal(cfg.Redacted())
	require.NoError(t, err)
	out := string(b)
	for _, s := range secrettest.All() {
		require.NotContains(t, out, s)
	}
	for _, want := range []string{
		`"url":"https://***@fn.example/api/run?sig=***\u0026code=***\u0026page=2"`,
		`"x-functions-key":"***"`, `"Ocp-Apim-Subscription-Key":"***"`, `"X-Slotlock-Secret":"***"`,
		`"Content-Type":"application/json"`, `"command":["curl","***","***","***"]`, `"BUCKET":"***"`, `"STORAGE":"***"`,
		`"allow_insecure":false`,
	} {
		require.Contains(t, out, want)
	}
}
