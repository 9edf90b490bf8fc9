package config

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/scheduler"
)

const notifyYAML = `
notify:
  - name: oncall
    webhook:
      url: https://hooks.example/services/T000/B000/s3cr3tpath
      format: slack
      headers: {Authorization: "Bearer tok-abcdef"}
  - name: ops-json
    webhook: {url: "http://receiver.local:9000/hook", retry: {max: 0}}
jobs:
  - name: nightly
    schedule: "@every 10s"
    plugin: log
    params: {message: hi}
    notify:
      - to: oncall
        on: [failed, recovered]
`

// The keys as the contract fixes them become the notifier's targets and
// the job's rules; unwritten webhook settings take their defaults, and
// retry.max: 0 means no retry.
func TestNotifyLoads(t *testing.T) {
	cfg, err := Load(writeFiles(t, map[string]string{"config.yaml": notifyYAML}), nil)
	require.NoError(t, err)
	targets := cfg.NotifyTargets()
	require.Len(t, targets, 2)
	require.Equal(t, "slack", targets[0].Format)
	require.Equal(t, 10*time.Second, targets[0].Timeout)
	require.Equal(t, 4, targets[0].Retries)
	require.Equal(t, time.Second, targets[0].Backoff)
	require.Equal(t, "json", targets[1].Format)
	require.Equal(t, -1, targets[1].Retries, "retry.max: 0 is no retry")
	require.Equal(t, []scheduler.NotifyRule{{To: "oncall", On: []string{"failed", "recovered"}}}, cfg.JobSpecs()[0].Notify)
	// The scheduler scrubs the URL and the header value from every error.
	sc := cfg.SchedulerConfig()
	require.Contains(t, sc.Secrets, "Bearer tok-abcdef")
	require.Contains(t, sc.Secrets, "https://hooks.example/services/T000/B000/s3cr3tpath")
	// The dump hides them.
	b, err := json.Marshal(cfg.Redacted())
	require.NoError(t, err)
	dump := string(b)
	require.NotContains(t, dump, "s3cr3tpath")
	require.NotContains(t, dump, "tok-abcdef")
}

// Each problem names the key path, the job where there is one, and the
// file position; none quotes the URL or a header value.
func TestNotifyErrors(t *testing.T) {
	lines := calendarErrs(t, map[string]string{"config.yaml": `
notify:
  - name: oncall
    webhook:
      url: "ftp://user:hunter2secret@x/y"
      format: email
      headers: {"X-Key": "a\nb-hunter3"}
      retry: {max: 11}
  - name: oncall
    webhook: {url: "https://ok.example/h"}
jobs:
  - name: nightly
    schedule: "@every 10s"
    plugin: log
    params: {message: hi}
    notify:
      - to: pager
        on: [failed, exploded]
      - to: oncall
`})
	text := strings.Join(lines, "\n")
	require.NotContains(t, text, "hunter2secret")
	require.NotContains(t, text, "hunter3")
	for _, want := range []string{
		"notify[0].webhook.url", "notify[0].webhook.format", "notify[0].webhook.headers", "notify[0].webhook.retry.max",
		"notify[1].name", "jobs[0].notify[0].to", "jobs[0].notify[0].on[1]", "jobs[0].notify[1].on",
	} {
		require.Contains(t, text, want)
	}
	for _, l := range lines {
		if strings.Contains(l, "jobs[0].notify[0].to") {
			require.Contains(t, l, "nightly")
			require.Contains(t, l, "pager")
			require.Contains(t, l, "oncall", "the error lists the targets defined")
			require.Contains(t, l, "config.yaml:17:", "the file position: %s", l)
		}
		if strings.Contains(l, "on[1]") {
			require.Contains(t, l, "exploded")
			require.Contains(t, l, "want failed, missed, abandoned or recovered")
		}
	}
}

// A job's rules are part of its definition (a reload changes the job and
// its hash); a target is a setting that waits for a restart.
func TestNotifyReload(t *testing.T) {
	a, err := Load(writeFiles(t, map[string]string{"config.yaml": notifyYAML}), nil)
	require.NoError(t, err)
	rules := strings.Replace(notifyYAML, "on: [failed, recovered]", "on: [failed]", 1)
	b, err := Load(writeFiles(t, map[string]string{"config.yaml": rules}), nil)
	require.NoError(t, err)
	_, _, changed := a.DiffJobs(b)
	require.Equal(t, []string{"nightly"}, changed)
	require.NotEqual(t, a.DefinitionsHash(), b.DefinitionsHash())
	require.Empty(t, a.RestartNeeded(b))

	target := strings.Replace(notifyYAML, "format: slack", "format: teams", 1)
	c, err := Load(writeFiles(t, map[string]string{"config.yaml": target}), nil)
	require.NoError(t, err)
	_, _, changed = a.DiffJobs(c)
	require.Empty(t, changed)
	require.NotEmpty(t, a.RestartNeeded(c))
}
