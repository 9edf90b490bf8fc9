package readmetest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The level the docs' event table gives a run's end lines is the level the
// scheduler logs them at (the contract allows warn or error for
// run.failed, run.canceled and lock.lost; the docs must say which).
func TestDocsLogLevelsMatchTheCode(t *testing.T) {
	var code strings.Builder
	files, err := filepath.Glob(filepath.Join(root, "scheduler", "*.go"))
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		code.Write(b)
	}
	ops, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	require.NoError(t, err)
	for event, message := range map[string]string{
		"run.canceled": "run canceled",
		"run.failed":   "run failed",
		"lock.lost":    "lease lost",
	} {
		calls := regexp.MustCompile(`\.(Debug|Info|Warn|Error)\("`+regexp.QuoteMeta(message)).FindAllStringSubmatch(code.String(), -1)
		require.Len(t, calls, 1, "scheduler logs %q (%s) once", message, event)
		level := strings.ToLower(calls[0][1])
		row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(event) + "` \\| (\\w+) \\|").FindStringSubmatch(string(ops))
		require.NotNil(t, row, "docs/operations.md's event table has no row for %s", event)
		require.Equal(t, level, row[1], "docs/operations.md gives %s level %s; the scheduler logs it at %s", event, row[1], level)
	}
}
