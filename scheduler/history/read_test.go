package history_test

import (
	"strings"
	"testing"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// TestParseSince: a time written is a time given. The zero time
// (0001-01-01T00:00:00Z), which reads as "unset" once parsed, and any
// other time before 1970 are refused rather than taken for "no bound"
// (history --since, the status page's since and until).
func TestParseSince(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		err  string
	}{
		{"", time.Time{}, ""},
		{"24h", now.Add(-24 * time.Hour), ""},
		{"2026-12-01T00:00:00Z", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), ""},
		{"1970-01-01T00:00:00Z", time.Unix(0, 0).UTC(), ""},
		{"0001-01-01T00:00:00Z", time.Time{}, "before 1970-01-01T00:00:00Z"},
		{"1969-12-31T23:59:59Z", time.Time{}, "before 1970-01-01T00:00:00Z"},
		{"-1h", time.Time{}, "must not be negative"},
		{"yesterday", time.Time{}, "want a duration"},
	} {
		got, err := history.ParseSince(tc.in, now)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && !got.Equal(tc.want):
			t.Errorf("%q: %s, want %s", tc.in, got, tc.want)
		}
	}
}
