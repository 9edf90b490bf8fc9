package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking/redistest"
)

// hostile pause reason and replica name: markup that would run a script if
// the page showed it as markup.
const (
	hostileReason  = `<script>document.body.dataset.pwned=1</script>`
	hostileReplica = `r1<img src=x onerror="document.body.dataset.pwned=1">`
)

// With http.ui the ops server serves the status page and its JSON: the
// jobs as `slotlock status --json` shows them, each job's slots joined with
// what `slotlock history --json` shows, 404 for an unknown job; the page
// shows a hostile pause reason and replica name as text. Without http.ui
// the same paths are 404.
func TestStatusPageAPI(t *testing.T) {
	t.Parallel()
	nodes := redistest.Start(t, 3)
	addr := freeAddr(t)
	base := redisNodesYAML(nodes.Addrs()) + `
log: {format: json, level: info}
shutdown: {grace: 1s}
history: {reconcile_every: 1s, reconcile_after: 3s}
jobs:
  - name: beat
    schedule: "* * * * * *"
    plugin: log
    params: {message: beat}
  - name: broken
    schedule: "* * * * * *"
    plugin: exec
    params: {command: ["/bin/false"]}
`
	cfg := writeConfig(t, base+"http: {addr: \""+addr+"\", ui: true}\n")
	p := startReplica(t, cfg, "SLOTLOCK_REPLICA="+hostileReplica)
	waitFor(t, 15*time.Second, "failed runs of broken", func() bool { return len(p.events("run.failed")) >= 3 })
	_, errOut, code := slotlock(t, []string{"SLOTLOCK_REPLICA=ops"}, "pause", "--config", cfg, "--reason", hostileReason, "beat")
	require.Equal(t, 0, code, errOut)
	waitFor(t, 5*time.Second, "a paused skip", func() bool { return len(p.events("slot.skipped")) > 0 })
	time.Sleep(1500 * time.Millisecond)
	url := "http://" + addr

	// /api/v1/jobs is the status document.
	c, body := httpGet(url + "/api/v1/jobs")
	require.Equal(t, http.StatusOK, c, body)
	type jobsDoc struct {
		Hash  string `json:"definitions_hash"`
		Total int    `json:"total"`
		Jobs  []struct {
			Job, Schedule, Timezone string
			Pause                   *struct{ By, Reason string }
			Last                    *struct{ Outcome string } `json:"last_outcome"`
		}
		Replicas []struct {
			Replica string
			Hash    string `json:"definitions_hash"`
			Differs bool
		}
	}
	var api, cli jobsDoc
	require.NoError(t, json.Unmarshal([]byte(body), &api), body)
	out, errOut, code := slotlock(t, nil, "status", "--config", cfg, "--json")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &cli), out)
	require.Equal(t, cli.Hash, api.Hash)
	require.Equal(t, 2, api.Total)
	require.Equal(t, cli.Replicas, api.Replicas)
	require.Len(t, api.Jobs, 2)
	for i := range api.Jobs {
		require.Equal(t, cli.Jobs[i].Job, api.Jobs[i].Job)
		require.Equal(t, cli.Jobs[i].Schedule, api.Jobs[i].Schedule)
		require.Equal(t, cli.Jobs[i].Pause, api.Jobs[i].Pause)
	}
	require.Equal(t, hostileReason, api.Jobs[0].Pause.Reason)
	require.Equal(t, hostileReplica, api.Replicas[0].Replica)
	require.Equal(t, "failed", api.Jobs[1].Last.Outcome)
	c, body = httpGet(url + "/api/v1/jobs?job=brok&limit=5")
	require.Equal(t, http.StatusOK, c, body)
	require.NoError(t, json.Unmarshal([]byte(body), &api), body)
	require.Equal(t, 1, api.Total)
	require.Equal(t, "broken", api.Jobs[0].Job)

	// /api/v1/jobs/{job}/slots is every slot with its history entry.
	type entry struct {
		Slot, Outcome, Reason, Replica string
		RunID                          string `json:"run_id"`
		Token                          uint64 `json:"fencing_token"`
		ErrorClass                     string `json:"error_class"`
	}
	first := map[string]string{} // each job's first slot run
	for _, e := range p.events("run.started") {
		if j := e["job"].(string); first[j] == "" {
			first[j] = e["slot"].(string)
		}
	}
	for _, job := range []string{"broken", "beat"} {
		c, body = httpGet(url + "/api/v1/jobs/" + job + "/slots?since=20s")
		require.Equal(t, http.StatusOK, c, body)
		var sl struct {
			Job          string
			Since, Until time.Time
			Truncated    bool
			Slots        []struct {
				Slot, State string
				Entry       *entry
			}
		}
		require.NoError(t, json.Unmarshal([]byte(body), &sl), body)
		require.Equal(t, job, sl.Job)
		require.False(t, sl.Truncated)
		require.InDelta(t, 20, len(sl.Slots), 1, "one per second")
		out, errOut, code = slotlock(t, nil, "history", "--config", cfg, "--json", "--since", sl.Since.Format(time.RFC3339), job)
		require.Equal(t, 0, code, errOut)
		var h struct{ Entries []entry }
		require.NoError(t, json.Unmarshal([]byte(out), &h), out)
		hist := map[string]entry{}
		for _, e := range h.Entries {
			hist[e.Slot] = e
		}
		states := map[string]int{}
		for i, v := range sl.Slots {
			states[v.State]++
			if i > 0 {
				require.Less(t, sl.Slots[i-1].Slot, v.Slot, "oldest first")
			}
			e, ok := hist[v.Slot]
			if v.Entry != nil {
				require.True(t, ok, "slot %s has an entry the history has not", v.Slot)
				require.Equal(t, e, *v.Entry)
				require.Equal(t, e.Outcome, v.State)
				continue
			}
			at, err := time.Parse(time.RFC3339, v.Slot)
			require.NoError(t, err)
			if ok { // recorded since the slots were read
				require.Less(t, sl.Until.Sub(at), 5*time.Second, "slot %s: %s in the API, %s in the history", v.Slot, v.State, e.Outcome)
			}
			require.Contains(t, []string{"pending", "running", "unrecorded"}, v.State)
			if v.State == "unrecorded" {
				require.Less(t, v.Slot, first[job], "an unrecorded slot after the replica's first run of %s", job)
			}
		}
		if job == "broken" {
			require.GreaterOrEqual(t, states["failed"], 3, states)
			for _, e := range hist {
				require.Equal(t, "error", e.ErrorClass)
			}
		} else {
			require.Positive(t, states["skipped"], states)
			require.Positive(t, states["succeeded"], states)
		}
	}
	c, body = httpGet(url + "/api/v1/jobs/nosuch/slots")
	require.Equal(t, http.StatusNotFound, c)
	require.JSONEq(t, `{"error": "no job named \"nosuch\" in the configuration"}`, body)
	c, body = httpGet(url + "/api/v1/jobs/beat/slots?since=yesterday")
	require.Equal(t, http.StatusBadRequest, c, body)

	// The page shows the hostile texts as text.
	resp, err := http.Get(url + "/?job=beat&since=1m")
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'")
	html := string(b)
	require.NotContains(t, html, hostileReason)
	require.NotContains(t, html, "<img")
	require.Equal(t, 1, strings.Count(html, "<script"), "the page's own script only")
	require.Contains(t, html, "&lt;script&gt;document.body.dataset.pwned=1&lt;/script&gt;")
	require.Contains(t, html, `r1&lt;img src=x onerror=&#34;document.body.dataset.pwned=1&#34;&gt;`)
	require.Contains(t, html, `data-state="skipped" data-reason="paused"`)

	// Off unless enabled.
	addr2 := freeAddr(t)
	p2 := startReplica(t, writeConfig(t, base+"http: {addr: \""+addr2+"\"}\n"), "SLOTLOCK_REPLICA=r2")
	waitFor(t, 10*time.Second, "r2's ops server", func() bool { c, _ := httpGet("http://" + addr2 + "/healthz"); return c == 200 })
	for _, path := range []string{"/", "/api/v1/jobs", "/api/v1/jobs/beat/slots", "/static/style.css"} {
		c, _ := httpGet("http://" + addr2 + path)
		require.Equal(t, http.StatusNotFound, c, path)
	}
	p2.stop(t, 30*time.Second)
	p.stop(t, 30*time.Second)
}
