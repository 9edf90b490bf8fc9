package readmetest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// Every relative link of README.md and docs/*.md leads somewhere: the file
// or folder exists, and an anchor names a heading of the linked document.
func TestDocLinks(t *testing.T) {
	var broken []string
	for _, doc := range docFiles(t) {
		broken = append(broken, brokenLinks(t, doc)...)
	}
	require.Empty(t, broken, "broken links")
}

// link matches a markdown link or image target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// brokenLinks lists "doc: target (why)" for each link of doc that does not
// resolve. Links inside code (fenced or inline) are not links.
func brokenLinks(t *testing.T, doc string) []string {
	text, err := os.ReadFile(doc)
	require.NoError(t, err)
	var broken []string
	for _, line := range prose(string(text)) {
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			if why := resolve(doc, m[1]); why != "" {
				broken = append(broken, fmt.Sprintf("%s: %s (%s)", doc, m[1], why))
			}
		}
	}
	return broken
}

// resolve returns why target, linked from doc, does not resolve, or "".
func resolve(doc, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return "" // not checked: no network here
	}
	file, anchor, _ := strings.Cut(target, "#")
	path := doc
	if file != "" {
		path = filepath.Join(filepath.Dir(doc), filepath.FromSlash(file))
		if _, err := os.Stat(path); err != nil {
			return "no such file"
		}
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(path, ".md") {
		return "an anchor into a file that is not markdown"
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if !anchors(string(text))[anchor] {
		return "no heading with this anchor"
	}
	return ""
}

// prose returns the lines of a markdown text outside fenced code, with
// inline code spans blanked.
func prose(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, inlineCode.ReplaceAllString(line, "``"))
		}
	}
	return out
}

var inlineCode = regexp.MustCompile("`[^`]*`")

// anchors are the heading anchors of a markdown text as the forge makes
// them: lower case, punctuation dropped, spaces as hyphens, a repeated
// anchor numbered -1, -2, ….
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		title, ok := heading(line)
		if fenced || !ok {
			continue
		}
		a := slug(title)
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func heading(line string) (string, bool) {
	level := len(line) - len(strings.TrimLeft(line, "#"))
	if level == 0 || level > 6 || !strings.HasPrefix(line[level:], " ") {
		return "", false
	}
	return strings.TrimSpace(line[level:]), true
}

func slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for title, want := range map[string]string{
		"Overlap `replace`":                    "overlap-replace",
		"Health, readiness, metrics":           "health-readiness-metrics",
		"`exec` — run a program":               "exec--run-a-program",
		"Limits (what breaks them)":            "limits-what-breaks-them",
		"Start delay (actual start − nominal)": "start-delay-actual-start--nominal",
	} {
		require.Equal(t, want, slug(title), title)
	}
}
