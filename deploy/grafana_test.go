package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v4"
)

type dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos *struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		Expr       string `json:"expr"`
		RefID      string `json:"refId"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	require.NoError(t, json.Unmarshal(readFile(t, "grafana/slotlock-dashboard.json"), &d))
	return d
}

// The dashboard imports anywhere: its data source is a template variable
// (no instance-specific uid), it has a job variable, and every panel has a
// place on the grid and at least one PromQL query.
func TestDashboardStructure(t *testing.T) {
	d := readDashboard(t)
	require.NotEmpty(t, d.Title)
	require.NotEmpty(t, d.UID)
	require.GreaterOrEqual(t, d.SchemaVersion, 36)
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	require.Equal(t, "datasource", vars["datasource"])
	require.Equal(t, "query", vars["job"])

	ids := map[int]bool{}
	queries := 0
	for _, p := range d.Panels {
		require.False(t, ids[p.ID], "panel id %d twice", p.ID)
		ids[p.ID] = true
		require.NotNil(t, p.GridPos, "panel %q has no gridPos", p.Title)
		require.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, "panel %q is wider than the grid", p.Title)
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Title)
		require.NotNil(t, p.Datasource, p.Title)
		require.Equal(t, "${datasource}", p.Datasource.UID, p.Title)
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			require.NotEmpty(t, strings.TrimSpace(tg.Expr), "panel %q: a target without expr", p.Title)
			require.NotEmpty(t, tg.RefID, p.Title)
			require.NotNil(t, tg.Datasource, p.Title)
			require.Equal(t, "${datasource}", tg.Datasource.UID, p.Title)
			queries++
		}
	}
	require.Greater(t, queries, 10)
}

// Every panel's query is valid PromQL: promtool checks them as recording
// rules, with Grafana's variables replaced by values.
func TestDashboardQueriesParse(t *testing.T) {
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	r := strings.NewReplacer("$__rate_interval", "5m", "$__range", "1h", "$__interval", "1m", "$job", ".*")
	for _, p := range readDashboard(t).Panels {
		for _, tg := range p.Targets {
			rules = append(rules, rule{fmt.Sprintf("dashboard:panel_%d_%s", p.ID, tg.RefID), r.Replace(tg.Expr)})
		}
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dashboard.yaml"), b, 0o644))
	out := runPromtool(t, dir, "check", "rules", "dashboard.yaml")
	require.Contains(t, out, fmt.Sprintf("SUCCESS: %d rules found", len(rules)))
}
