package deploy

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v4"
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
