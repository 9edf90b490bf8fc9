package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/notify"
)

// Notifications on the page: a job's row names who its notify rules
// tell of what, and the selected job's slot timeline lists its latest
// notifications' results from the notification log (sent, failed, or
// pending: under way, or its sender died and a sweeper will resend it).

// maxNotifyRows is how many of a job's latest notifications the page lists.
const maxNotifyRows = 5

// notifyText is a job's rules: "oncall on failed, recovered · ops on missed".
func notifyText(rules []scheduler.NotifyRule) string {
	parts := make([]string, len(rules))
	for i, r := range rules {
		parts[i] = r.To + " on " + strings.Join(r.On, ", ")
	}
	return strings.Join(parts, " · ")
}

// notifyRows reads the latest notifications of spec, one line each; nil
// when it has no rules (nothing is read) or the stores do not answer.
func (s *server) notifyRows(ctx context.Context, spec scheduler.JobSpec) []string {
	if len(spec.Notify) == 0 {
		return nil
	}
	rs, err := notify.ReadRecords(ctx, s.b.Locker, spec.Name, maxNotifyRows)
	if err != nil {
		return []string{"The lock stores did not answer."}
	}
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		line := fmt.Sprintf("%s %s (slot %s) → %s: %s", r.At.UTC().Format(time.RFC3339), r.Event, r.Slot, r.To, r.State)
		if r.Attempts > 1 {
			line += fmt.Sprintf(" after %d tries", r.Attempts)
		}
		if r.By != "" {
			line += ", resent by " + r.By
		}
		out = append(out, line)
	}
	return out
}
