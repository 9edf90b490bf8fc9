package azure

import (
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// bicepDecl is one `resource` or `module` declaration of a Bicep file.
type bicepDecl struct {
	file    string
	kind    string // resource | module
	symbol  string
	target  string // resource: Type@version; module: the file path
	header  string // between '=' and the body's '{': for ...:, if (...)
	body    string // the object, braces included
	comment string // the // lines right above it
}

func (d bicepDecl) typ() string     { t, _, _ := strings.Cut(d.target, "@"); return t }
func (d bicepDecl) version() string { _, v, _ := strings.Cut(d.target, "@"); return v }

var declPattern = regexp.MustCompile(`(?m)^(resource|module) (\w+) '([^']+)'( existing)? =`)

// parseBicep finds every resource and module declaration with its body,
// matching braces outside strings and comments. Bicep cannot be compiled
// here (no Bicep CLI, no network to fetch one), so the template tests read
// the declarations this way.
func parseBicep(t *testing.T, file string) []bicepDecl {
	t.Helper()
	src := read(t, file)
	var out []bicepDecl
	for _, m := range declPattern.FindAllStringSubmatchIndex(src, -1) {
		d := bicepDecl{file: file, kind: src[m[2]:m[3]], symbol: src[m[4]:m[5]], target: src[m[6]:m[7]]}
		open := strings.Index(src[m[1]:], "{")
		require.GreaterOrEqual(t, open, 0, "%s: %s %s has no body", file, d.kind, d.symbol)
		d.header = strings.TrimSpace(src[m[1] : m[1]+open])
		end := matchBrace(t, src, m[1]+open)
		d.body = src[m[1]+open : end+1]
		lines := strings.Split(strings.TrimRight(src[:m[0]], "\n"), "\n")
		for i := len(lines) - 1; i >= 0 && strings.HasPrefix(strings.TrimSpace(lines[i]), "//"); i-- {
			d.comment = lines[i] + "\n" + d.comment
		}
		out = append(out, d)
	}
	return out
}

// matchBrace returns the index of the brace closing the one at open.
func matchBrace(t *testing.T, src string, open int) int {
	t.Helper()
	depth := 0
	for i := open; i < len(src); i++ {
		switch {
		case strings.HasPrefix(src[i:], "//"):
			i += strings.Index(src[i:]+"\n", "\n")
		case src[i] == '\'':
			for i++; i < len(src) && src[i] != '\''; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case src[i] == '{':
			depth++
		case src[i] == '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	t.Fatalf("unbalanced braces from offset %d", open)
	return -1
}

// allBicep parses every .bicep file of the project.
func allBicep(t *testing.T) []bicepDecl {
	t.Helper()
	files, err := filepath.Glob("*.bicep")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out []bicepDecl
	for _, f := range files {
		out = append(out, parseBicep(t, f)...)
	}
	return out
}

func resourcesOfType(t *testing.T, decls []bicepDecl, typ string) []bicepDecl {
	t.Helper()
	var out []bicepDecl
	for _, d := range decls {
		if d.kind == "resource" && strings.EqualFold(d.typ(), typ) {
			out = append(out, d)
		}
	}
	return out
}

// The parser sees bodies whole: nested objects, interpolated strings with
// braces, comments with braces, loops and conditions in the header.
func testBicepParserReadsDeclarations(t *testing.T) {
	decls := parseBicep(t, "alerts.bicep")
	require.Len(t, decls, 2)
	rule := decls[1]
	require.Equal(t, "Microsoft.Insights/scheduledQueryRules", rule.typ())
	require.Equal(t, "2023-12-01", rule.version())
	require.Equal(t, "[for r in rules:", rule.header)
	require.True(t, strings.HasSuffix(rule.body, "}"))
	require.Contains(t, rule.body, "autoMitigate: true", "the body stops before its end")
	require.NotContains(t, rule.body, "resource ", "the body runs into the next declaration")
}

// Each resource type at the API version the templates were written and
// checked against. A new type or a changed version must be looked at (and
// the README's list of what was verified updated): this table is that
// list. Azure Managed Redis needs 2025-07-01 or later: the first GA
// version with publicNetworkAccess, which private mode sets to Disabled.
func TestAPIVersions(t *testing.T) {
	t.Run("reader", testBicepParserReadsDeclarations)
	want := map[string]string{
		"Microsoft.Resources/resourceGroups":                                "2024-03-01",
		"Microsoft.OperationalInsights/workspaces":                          "2023-09-01",
		"Microsoft.App/managedEnvironments":                                 "2024-03-01",
		"Microsoft.App/containerApps":                                       "2024-03-01",
		"Microsoft.ManagedIdentity/userAssignedIdentities":                  "2023-01-31",
		"Microsoft.ContainerRegistry/registries":                            "2023-07-01",
		"Microsoft.Authorization/roleAssignments":                           "2022-04-01",
		"Microsoft.Cache/redisEnterprise":                                   "2025-07-01",
		"Microsoft.Cache/redisEnterprise/databases":                         "2025-07-01",
		"Microsoft.Cache/redisEnterprise/databases/accessPolicyAssignments": "2025-07-01",
		"Microsoft.Network/virtualNetworks":                                 "2024-05-01",
		"Microsoft.Network/privateEndpoints":                                "2024-05-01",
		"Microsoft.Network/privateEndpoints/privateDnsZoneGroups":           "2024-05-01",
		"Microsoft.Network/privateDnsZones":                                 "2020-06-01",
		"Microsoft.Network/privateDnsZones/virtualNetworkLinks":             "2020-06-01",
		"Microsoft.KeyVault/vaults":                                         "2023-07-01",
		"Microsoft.Insights/actionGroups":                                   "2023-01-01",
		"Microsoft.Insights/scheduledQueryRules":                            "2023-12-01",
	}
	seen := map[string]bool{}
	for _, d := range allBicep(t) {
		if d.kind != "resource" {
			continue
		}
		v, ok := want[d.typ()]
		require.True(t, ok, "%s: resource %s has type %s, which TestAPIVersions does not list", d.file, d.symbol, d.typ())
		require.Equal(t, v, d.version(), "%s: resource %s", d.file, d.symbol)
		seen[d.typ()] = true
	}
	var unused []string
	for typ := range want {
		if !seen[typ] {
			unused = append(unused, typ)
		}
	}
	sort.Strings(unused)
	require.Empty(t, unused, "listed but declared nowhere")
}
