package azure

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v4"

	"github.com/slotlock/slotlock/deploy/internal/alertrule"
)

// alertRule is an entry of alerts/rules.json, which alerts.bicep turns into
// one scheduledQueryRule each.
type alertRule struct {
	Name        string   `json:"name"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Severity    *int     `json:"severity"`
	Every       string   `json:"every"`
	Window      string   `json:"window"`
	Range       string   `json:"range"`
	Dimensions  []string `json:"dimensions"`
}

func readRules(t *testing.T) []alertRule {
	t.Helper()
	var rules []alertRule
	dec := json.NewDecoder(strings.NewReader(read(t, "alerts/rules.json")))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&rules))
	require.NotEmpty(t, rules)
	return rules
}

// Every rule has its query file, alerts.bicep loads exactly those files
// under the rule's name, and no query file is left without a rule.
func TestAlertRulesHaveTheirQueries(t *testing.T) {
	rules := readRules(t)
	bicep := read(t, "alerts.bicep")
	loads := map[string]string{}
	for _, m := range regexp.MustCompile(`'([a-z-]+)': loadTextContent\('alerts/([a-z-]+)\.kql'\)`).FindAllStringSubmatch(bicep, -1) {
		loads[m[1]] = m[2]
	}
	files, err := filepath.Glob("alerts/*.kql")
	require.NoError(t, err)
	var names []string
	for _, r := range rules {
		require.NotContains(t, names, r.Name, "rules.json names %s twice", r.Name)
		names = append(names, r.Name)
		require.Equal(t, r.Name, loads[r.Name], "alerts.bicep does not load alerts/%s.kql as '%s'", r.Name, r.Name)
		require.FileExists(t, filepath.Join("alerts", r.Name+".kql"))
	}
	require.Len(t, loads, len(rules), "alerts.bicep loads queries no rule uses")
	require.Len(t, files, len(rules), "a query file under alerts/ has no entry in rules.json")

	// The module is deployed, on the workspace that holds the logs.
	res := read(t, "resources.bicep")
	require.Contains(t, res, "module alerts 'alerts.bicep'")
	require.Regexp(t, `workspaceId: logs\.id`, res)
	require.Contains(t, read(t, "main.parameters.json"), `"alertEmail": { "value": "${SLOTLOCK_ALERT_EMAIL=}" }`)
}

// The rule settings are what Azure Monitor accepts, and each query reads
// as far back as the rule lets it (a query's own ago() longer than the
// rule's time range would silently see less).
func TestAlertRuleSettings(t *testing.T) {
	for _, r := range readRules(t) {
		t.Run(r.Name, func(t *testing.T) {
			require.NotEmpty(t, r.Title)
			require.NotEmpty(t, r.Description)
			require.NotNil(t, r.Severity)
			require.True(t, *r.Severity >= 0 && *r.Severity <= 4, "severity %d: Azure Monitor takes 0 (critical) to 4 (verbose)", *r.Severity)
			every, window := isoDuration(t, r.Every), isoDuration(t, r.Window)
			require.GreaterOrEqual(t, window, every, "windowSize below evaluationFrequency leaves gaps")
			span := window
			if r.Range != "" {
				span = isoDuration(t, r.Range)
				require.LessOrEqual(t, span, 48*time.Hour, "overrideQueryTimeRange is at most P2D")
			}
			q := read(t, filepath.Join("alerts", r.Name+".kql"))
			agos := regexp.MustCompile(`TimeGenerated > ago\((\d+)([mhd])\)`).FindAllStringSubmatch(q, -1)
			require.Len(t, agos, 1, "the query filters TimeGenerated once, with ago()")
			require.Equal(t, span, kqlDuration(t, agos[0][1], agos[0][2]), "the query's ago() differs from the rule's time range")
			require.NotEmpty(t, r.Dimensions)
			// A dimension is a column of the query's result: the last
			// summarize names it.
			last := q[strings.LastIndex(q, "| summarize"):]
			for _, d := range r.Dimensions {
				require.Regexp(t, `\bby\b[^|]*\b`+d+`\b`, last, "dimension %s is not a column the query groups by", d)
			}
		})
	}
}

// Each query reads slotlock's JSON lines from the Container Apps table and
// names only events the scheduler really logs.
func TestAlertQueriesNameRealEvents(t *testing.T) {
	events := schedulerEvents(t)
	docs := documents(t)
	for _, r := range readRules(t) {
		q := read(t, filepath.Join("alerts", r.Name+".kql"))
		require.Contains(t, q, "ContainerAppConsoleLogs_CL", r.Name)
		require.Contains(t, q, "parse_json(Log_s)", r.Name)
		// e.time is a syntax error in KQL (time is a keyword).
		require.NotRegexp(t, `\be\.(time|by)\b`, q, "%s: write e[\"time\"], e[\"by\"]", r.Name)
		named := regexp.MustCompile(`"([a-z]+\.[a-z_]+)"`).FindAllStringSubmatch(q, -1)
		require.NotEmpty(t, named, "%s names no event", r.Name)
		for _, m := range named {
			require.Contains(t, events, m[1], "%s: %q is not an event of scheduler/events.go", r.Name, m[1])
		}
		require.True(t, strings.Contains(docs, "deploy/azure/alerts/"+r.Name+".kql"), "neither README.md nor docs/ lists deploy/azure/alerts/%s.kql", r.Name)
	}
}

// schedulerEvents returns the string constants of scheduler/events.go that
// look like event names (slot.missed, run.failed, ...).
func schedulerEvents(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../../scheduler/events.go", nil, 0)
	require.NoError(t, err)
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && regexp.MustCompile(`^[a-z]+\.[a-z_]+$`).MatchString(s) {
				out = append(out, s)
			}
		}
		return true
	})
	require.Contains(t, out, "run.failed", "scheduler/events.go holds no event names any more")
	slices.Sort(out)
	return out
}

var isoPattern = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?)?$`)

// isoDuration parses the ISO 8601 durations Azure Monitor takes (PT5M,
// PT1H, P1D).
func isoDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	m := isoPattern.FindStringSubmatch(s)
	require.NotNil(t, m, "%q is not an ISO 8601 duration of days, hours and minutes", s)
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute} {
		if m[i+1] != "" {
			n, _ := strconv.Atoi(m[i+1])
			d += time.Duration(n) * unit
		}
	}
	require.Positive(t, d, s)
	return d
}

func kqlDuration(t *testing.T, n, unit string) time.Duration {
	t.Helper()
	v, err := strconv.Atoi(n)
	require.NoError(t, err)
	return time.Duration(v) * map[string]time.Duration{"m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[unit]
}

// Every log alert rule skips query validation: its table,
// ContainerAppConsoleLogs_CL, exists only after the first log line, so on a
// new workspace validation rejects the rule and `azd provision` fails.
func TestLogAlertRulesSkipQueryValidation(t *testing.T) {
	rules := resourcesOfType(t, allBicep(t), "Microsoft.Insights/scheduledQueryRules")
	require.NotEmpty(t, rules)
	for _, r := range rules {
		require.Regexp(t, `(?m)^\s*kind: 'LogAlert'$`, r.body, "%s: %s", r.file, r.symbol)
		require.Regexp(t, `(?m)^\s*skipQueryValidation: true$`, r.body, "%s: %s must set skipQueryValidation: true", r.file, r.symbol)
	}
}

// documents is README.md and every page of docs/, joined.
func documents(t *testing.T) string {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	var b strings.Builder
	for _, p := range append([]string{"../../README.md"}, pages...) {
		b.WriteString(read(t, p))
	}
	return b.String()
}

// The no-recent-success threshold of every job in slotlock.yaml follows
// from the job's own schedule: at least k intervals (its longest gap
// between slots over a year) plus the Log Analytics ingestion allowance,
// so a healthy job never pages. Where k intervals do not fit in the
// query's 2-day range (a daily job), one interval plus the allowance. And
// every threshold is under that range, or the alert could never fire.
func TestNoRecentSuccessThresholdsFollowSchedules(t *testing.T) {
	const (
		k         = 3
		ingestion = 10 * time.Minute // Microsoft: typically 20 s to 3 min, unbounded
		queryDays = 48 * time.Hour   // the rule's range, P2D
	)
	q := read(t, "alerts/no-recent-success.kql")
	for _, want := range []string{"3 x the job's longest interval", "+ 10m", "ingestion"} {
		require.Contains(t, q, want, "the query's header no longer states the rule the test checks")
	}
	def := regexp.MustCompile(`(?m)^let default_max_age = (\d+)([mhd]);$`).FindStringSubmatch(q)
	require.NotNil(t, def, "no default_max_age")
	defaultAge := kqlDuration(t, def[1], def[2])
	table := regexp.MustCompile(`(?s)datatable\(job: string, max_age: timespan\) \[(.*?)\n\];`).FindStringSubmatch(q)
	require.NotNil(t, table, "no thresholds datatable")
	listed := map[string]time.Duration{}
	for _, m := range regexp.MustCompile(`"([a-z0-9._-]+)", (\d+)([mhd])`).FindAllStringSubmatch(table[1], -1) {
		listed[m[1]] = kqlDuration(t, m[2], m[3])
	}
	require.NotEmpty(t, listed)

	jobs := configJobs(t, "slotlock.yaml")
	require.NotEmpty(t, jobs)
	for name := range listed {
		require.Contains(t, jobs, name, "no-recent-success.kql lists %s, which slotlock.yaml does not run", name)
	}
	for _, name := range append(slices.Sorted(maps.Keys(listed)), "(default)") {
		age := listed[name]
		if name == "(default)" {
			age = defaultAge
		}
		require.Less(t, age, queryDays, "%s: a threshold of 2d or more never fires (the query reads 2 days back)", name)
	}
	for name, j := range jobs {
		interval := longestInterval(t, j.Schedule, j.Timezone)
		want := k*interval + ingestion
		if want >= queryDays {
			want = interval + ingestion
		}
		age, ok := listed[name]
		if !ok {
			age = defaultAge
		}
		require.GreaterOrEqual(t, age, want, "%s (%q, every %s): threshold %s is below %d intervals + %s of ingestion delay; the alert would fire on a healthy fleet",
			name, j.Schedule, interval, age, k, ingestion)
	}
}

// configJob is what the threshold checks read of a job in a slotlock
// configuration file.
type configJob struct {
	Schedule string `yaml:"schedule"`
	Timezone string `yaml:"timezone"`
}

// configJobs returns the jobs of a slotlock configuration file by name.
func configJobs(t *testing.T, file string) map[string]configJob {
	t.Helper()
	var cfg struct {
		Jobs []struct {
			Name      string `yaml:"name"`
			configJob `yaml:",inline"`
		} `yaml:"jobs"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(read(t, file)), &cfg), file)
	out := map[string]configJob{}
	for _, j := range cfg.Jobs {
		out[j.Name] = j.configJob
	}
	return out
}

// longestInterval is alertrule.LongestInterval, failing t on an error.
func longestInterval(t *testing.T, spec, zone string) time.Duration {
	t.Helper()
	d, err := alertrule.LongestInterval(spec, zone)
	require.NoError(t, err, spec)
	return d
}
