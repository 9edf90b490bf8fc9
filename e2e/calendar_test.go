//go:build linux

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestCalendarExcludesToday (issue 37): three replicas on real Redis run
// an every-second job whose calendar excludes today and tomorrow in its
// own zone (Pacific/Kiritimati, UTC+14, so that its date is not UTC's for
// ten hours a day: read in UTC, the job would run), beside an
// every-second job without a calendar. The excluded job is no slot at
// all: it never runs, no replica logs a line about it, the reconciler
// reports no slot of it missed and its history stays empty; `slotlock
// next` marks its slots excluded; a backfill over the window plans none
// of its slots. The other job runs every slot exactly once (the checker).
func TestCalendarExcludesToday(t *testing.T) {
	requireSuite(t)
	const zone = "Pacific/Kiritimati"
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	today := time.Now().In(loc)
	dates := []string{today.Format(time.DateOnly), today.AddDate(0, 0, 1).Format(time.DateOnly)}
	holiday := JobDef{Name: "holiday", Schedule: "* * * * * *", Sleep: 100 * time.Millisecond,
		Timezone: zone, Calendar: "closed"}
	c := NewCluster(t, bins, Spec{ProxyNode: -1, Jobs: []JobDef{tick, holiday},
		Calendars:      []map[string]any{{"name": "closed", "exclude": map[string]any{"dates": dates}}},
		ReconcileEvery: time.Second, ReconcileAfter: 3 * time.Second})

	if out, code := c.Command("validate"); code != 0 {
		t.Fatalf("slotlock validate: exit %d: %s", code, out)
	}
	out, code := c.Command("next", "-n", "2", "holiday")
	if code != 0 || !strings.Contains(out, "CALENDAR") ||
		!strings.Contains(out, "excluded (closed: "+dates[0]+")") || !strings.Contains(out, "excluded (closed: "+dates[1]+")") {
		t.Fatalf("slotlock next: exit %d:\n%s", code, out)
	}
	t.Logf("slotlock next holiday:\n%s", out)

	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	to := from.Add(5 * time.Second)
	// The reconciler judges a slot once it is about 6 s old (lateness and
	// recovery wait with a 1 s skew), every second; the backfill window
	// must be older than that too.
	SleepUntil(to.Add(9 * time.Second))

	backfill := func(job string) []string {
		return []string{"backfill", "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339), "--dry-run", job}
	}
	if out, code := c.Command(backfill("holiday")...); code != 0 || !strings.Contains(out, "0 to run, 0 skipped") {
		t.Errorf("backfill --dry-run holiday: exit %d, want no slot planned:\n%s", code, out)
	}
	if out, code := c.Command(backfill("tick")...); code != 0 || !strings.Contains(out, "0 to run, 6 skipped") {
		t.Errorf("backfill --dry-run tick: exit %d, want its 6 slots, all done:\n%s", code, out)
	}
	out, code = c.Command("history", "--json", "--since", from.Add(-time.Minute).Format(time.RFC3339), "holiday")
	var doc struct {
		Entries []json.RawMessage `json:"entries"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Entries) != 0 {
		t.Errorf("history of the excluded job: exit %d, want no entry:\n%s", code, out)
	}

	r := c.Check(from, to) // every slot of tick exactly once
	if r.Ran != r.Slots || r.Slots != 6 {
		t.Errorf("tick: %d of %d slots ran, want 6 of 6", r.Ran, r.Slots)
	}
	for _, run := range c.Runs() {
		if run.Job == "holiday" {
			t.Errorf("the excluded job ran: %+v", run)
		}
	}
	for _, ev := range c.Events() {
		if ev.Job == "holiday" && ev.Replica != "command" {
			t.Errorf("a replica logged a line about the excluded job: %s %s %s", ev.Replica, ev.Event, ev.Slot)
		}
	}
	if missed := EventsOf(c.Events(), "slot.missed", ""); len(missed) != 0 {
		t.Errorf("slot.missed: %+v", missed)
	}
}
