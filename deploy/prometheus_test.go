package deploy

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v4"

	"github.com/slotlock/slotlock/deploy/internal/alertrule"
)

// ruleFile is a Prometheus rule file, as strict as Prometheus reads it.
type ruleFile struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Rules    []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readRuleFile(t *testing.T, name string) ruleFile {
	t.Helper()
	var f ruleFile
	dec := yaml.NewDecoder(bytes.NewReader(readFile(t, name)))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&f), name)
	require.NotEmpty(t, f.Groups, name)
	return f
}

const runbookURL = "https://github.com/slotlock/slotlock/blob/main/docs/operations.md#"

// Every alert has an expression, a severity the receivers route on, a
// summary, a description and a runbook in docs/operations.md; names are unique.
func TestAlertRulesStructure(t *testing.T) {
	f := readRuleFile(t, "prometheus/slotlock-alerts.yaml")
	var names []string
	for _, g := range f.Groups {
		require.NotEmpty(t, g.Name)
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "group %s: a rule without alert (recording rules live in slotlock-thresholds.yaml)", g.Name)
			require.NotContains(t, names, r.Alert, "alert %s defined twice", r.Alert)
			names = append(names, r.Alert)
			require.NotEmpty(t, strings.TrimSpace(r.Expr), r.Alert)
			if r.For != "" {
				_, err := time.ParseDuration(r.For)
				require.NoError(t, err, "%s: for", r.Alert)
			}
			require.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"], "%s: severity", r.Alert)
			require.NotEmpty(t, r.Annotations["summary"], r.Alert)
			require.NotEmpty(t, r.Annotations["description"], r.Alert)
			require.True(t, strings.HasPrefix(r.Annotations["runbook_url"], runbookURL), "%s: runbook_url %q is not a section of docs/operations.md", r.Alert, r.Annotations["runbook_url"])
		}
	}
	// The list: missed slots, failing jobs, no quorum, differing
	// definitions, no recent success (and the rest of the brief).
	for _, want := range []string{"SlotlockSlotsMissed", "SlotlockJobFailing", "SlotlockJobLastSlotFailed",
		"SlotlockNoQuorum", "SlotlockSlotsSkippedNoQuorum", "SlotlockConfigDrift", "SlotlockJobNoRecentSuccess",
		"SlotlockLeaseLost", "SlotlockRunsAbandoned", "SlotlockSchedulerNotRunning", "SlotlockRedisNodeDown"} {
		require.Contains(t, names, want)
	}

	th := readRuleFile(t, "prometheus/slotlock-thresholds.yaml")
	for _, g := range th.Groups {
		for _, r := range g.Rules {
			require.Equal(t, "slotlock:job_success_max_age_seconds", r.Record, "slotlock-thresholds.yaml holds the per-job thresholds only")
			require.NotEmpty(t, r.Labels["job"], "a threshold names its job")
		}
	}
}

// Each runbook link leads to a heading of docs/operations.md that documents
// every alert.
func TestAlertRunbookInOperations(t *testing.T) {
	readme := string(readFile(t, "../docs/operations.md"))
	anchors := map[string]string{} // anchor -> the section's text
	heads := regexp.MustCompile(`(?m)^#{2,4} (.+)$`).FindAllStringSubmatchIndex(readme, -1)
	for i, h := range heads {
		end := len(readme)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		anchors[githubAnchor(readme[h[2]:h[3]])] = readme[h[1]:end]
	}
	for _, g := range readRuleFile(t, "prometheus/slotlock-alerts.yaml").Groups {
		for _, r := range g.Rules {
			anchor := strings.TrimPrefix(r.Annotations["runbook_url"], runbookURL)
			section, ok := anchors[anchor]
			require.True(t, ok, "%s: docs/operations.md has no heading with anchor #%s", r.Alert, anchor)
			require.True(t, strings.Contains(section, "`"+r.Alert+"`"), "the section #%s of docs/operations.md does not document %s", anchor, r.Alert)
		}
	}
}

// githubAnchor is the id GitHub gives a heading: lower case, punctuation
// dropped, spaces as hyphens.
func githubAnchor(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// promtool parses every rule and PromQL expression the way Prometheus
// does, lints them, runs the unit tests in slotlock-alerts_test.yaml, and
// checks the example prometheus.yml with the rule files it loads.
func TestAlertRulesPromtool(t *testing.T) {
	out := runPromtool(t, "prometheus", "check", "rules", "slotlock-alerts.yaml", "slotlock-thresholds.yaml")
	require.Contains(t, out, "SUCCESS")
	out = runPromtool(t, "prometheus", "test", "rules", "slotlock-alerts_test.yaml")
	require.Contains(t, out, "SUCCESS")
	runPromtool(t, "prometheus", "check", "config", "prometheus.yml")
}

// The unit tests fire every alert at least once, so none is untested.
func TestAlertRulesAllUnitTested(t *testing.T) {
	var tests struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	require.NoError(t, yaml.Unmarshal(readFile(t, "prometheus/slotlock-alerts_test.yaml"), &tests))
	require.Contains(t, tests.RuleFiles, "slotlock-alerts.yaml")
	var fired []string
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fired = append(fired, a.Alertname)
			}
		}
	}
	for _, g := range readRuleFile(t, "prometheus/slotlock-alerts.yaml").Groups {
		for _, r := range g.Rules {
			require.True(t, slices.Contains(fired, r.Alert), "slotlock-alerts_test.yaml never expects %s to fire", r.Alert)
		}
	}
}

// Each job's SlotlockJobNoRecentSuccess threshold follows from its own
// schedule, in every configuration the example Prometheus scrapes or the
// thresholds file names (the repository's config.yaml and the local
// cluster's deploy/local/demo.yaml): at least k intervals plus two scrape
// intervals (the success gauge is up to one scrape old, and the rule is
// evaluated up to one evaluation interval later), so a healthy job never
// fires. Jobs without a recording rule get the rule's 25-hour default.
func TestNoRecentSuccessThresholdsFollowSchedules(t *testing.T) {
	const k = 3
	var prom struct {
		Global struct {
			ScrapeInterval     string `yaml:"scrape_interval"`
			EvaluationInterval string `yaml:"evaluation_interval"`
		} `yaml:"global"`
	}
	require.NoError(t, yaml.Unmarshal(readFile(t, "prometheus/prometheus.yml"), &prom))
	scrape, err := time.ParseDuration(prom.Global.ScrapeInterval)
	require.NoError(t, err)
	eval, err := time.ParseDuration(prom.Global.EvaluationInterval)
	require.NoError(t, err)
	allowance := 2 * max(scrape, eval)
	require.Regexp(t, `(?m)^\s*0 \* max by \(job\) \(slotlock_job_last_success_timestamp_seconds\) \+ 90000$`, string(readFile(t, "prometheus/slotlock-alerts.yaml")),
		"the rule's default threshold is no longer 25 hours; update this test")
	const defaultAge = 25 * time.Hour

	listed := map[string]time.Duration{}
	for _, g := range readRuleFile(t, "prometheus/slotlock-thresholds.yaml").Groups {
		for _, r := range g.Rules {
			m := regexp.MustCompile(`^vector\(([0-9 *+]+)\)$`).FindStringSubmatch(r.Expr)
			require.NotNil(t, m, "%s: the threshold is not vector(<seconds>)", r.Labels["job"])
			listed[r.Labels["job"]] = time.Duration(arith(t, m[1])) * time.Second
		}
	}
	seen := map[string]bool{}
	for _, file := range []string{"../config.yaml", "local/demo.yaml"} {
		var cfg struct {
			Jobs []struct {
				Name     string `yaml:"name"`
				Schedule string `yaml:"schedule"`
				Timezone string `yaml:"timezone"`
			} `yaml:"jobs"`
		}
		require.NoError(t, yaml.Unmarshal(readFile(t, file), &cfg), file)
		require.NotEmpty(t, cfg.Jobs, file)
		for _, j := range cfg.Jobs {
			seen[j.Name] = true
			interval := longestInterval(t, j.Schedule, j.Timezone)
			age, ok := listed[j.Name]
			if !ok {
				age = defaultAge
			}
			require.GreaterOrEqual(t, age, k*interval+allowance, "%s: %s (%q, every %s): threshold %s is below %d intervals + %s; SlotlockJobNoRecentSuccess would fire on a healthy fleet",
				file, j.Name, j.Schedule, interval, age, k, allowance)
		}
	}
	for name := range listed {
		require.True(t, seen[name], "slotlock-thresholds.yaml has a threshold for %s, which neither config.yaml nor deploy/local/demo.yaml runs", name)
	}
}

// arith evaluates a sum of products of integers ("3 * 10 + 30").
func arith(t *testing.T, expr string) int64 {
	t.Helper()
	var sum int64
	for _, term := range strings.Split(expr, "+") {
		p := int64(1)
		for _, f := range strings.Split(term, "*") {
			n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			require.NoError(t, err, expr)
			p *= n
		}
		sum += p
	}
	return sum
}

// longestInterval is alertrule.LongestInterval, failing t on an error.
func longestInterval(t *testing.T, spec, zone string) time.Duration {
	t.Helper()
	d, err := alertrule.LongestInterval(spec, zone)
	require.NoError(t, err, spec)
	return d
}
