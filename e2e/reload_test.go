//go:build linux

package e2e

import (
	"slices"
	"testing"
	"time"
)

// reload: three replicas, each with its own configuration file, take a new
// job file one by one, four seconds apart (the file rewritten; each
// replica's watch reloads it): gone removed, resched moved from */2 to
// */3, added added, tick and guard unchanged. Then r2 gets a broken file,
// which it rejects and runs on. The checker, over the ledger and the logs:
//
//   - tick and guard: every slot of the whole window exactly once;
//   - gone and resched's old schedule: every slot once up to the last
//     replica's reload (some replica still had them);
//   - resched's new schedule and added: every slot once from the first
//     replica's reload (some replica had them);
//   - no slot twice anywhere; gone ran nothing after the last reload,
//     added nothing before the first, resched only its schedule of the
//     time.
func scenarioReload(t *testing.T) {
	gone := JobDef{Name: "gone", Schedule: "*/2 * * * * *", Sleep: 200 * time.Millisecond}
	before := JobDef{Name: "resched", Schedule: "*/2 * * * * *", Sleep: 200 * time.Millisecond}
	after := JobDef{Name: "resched", Schedule: "*/3 * * * * *", Sleep: 200 * time.Millisecond}
	added := JobDef{Name: "added", Schedule: "* * * * * *", Sleep: 200 * time.Millisecond}
	c := NewCluster(t, bins, Spec{ProxyNode: -1, ConfigPerReplica: true, Jobs: []JobDef{tick, guard, gone, before}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	SleepUntil(from.Add(4 * time.Second))

	v2 := c.RenderJobs([]JobDef{tick, guard, after, added})
	var at []time.Time // when each replica had the new file in force
	for _, name := range []string{"r1", "r2", "r3"} {
		l := c.Reconfigure(name, v2)
		if str(l["event"]) != "config.reloaded" || !slices.Equal(l.Strings("added"), []string{"added"}) ||
			!slices.Equal(l.Strings("removed"), []string{"gone"}) || !slices.Equal(l.Strings("changed"), []string{"resched"}) {
			t.Fatalf("%s: %v", name, l)
		}
		at = append(at, l.Time())
		t.Logf("%s: %s took the new job file, hash %s", stamp(l.Time()), name, str(l["config_hash"]))
		time.Sleep(4 * time.Second)
	}
	broken := c.RenderJobs([]JobDef{tick, guard, {Name: "broken", Schedule: "0 61 * * * *"}})
	if l := c.Reconfigure("r2", broken); str(l["event"]) != "config.rejected" || len(l.Strings("errors")) == 0 {
		t.Fatalf("r2, broken file: %v", l)
	}
	time.Sleep(2 * time.Second)
	to := time.Now().Add(2 * time.Second).Truncate(time.Second)
	SleepUntil(to.Add(2 * time.Second))
	c.StopAll()

	const margin = time.Second
	first, last := at[0], at[len(at)-1]
	runs, events := c.Runs(), c.Events()
	for _, part := range []struct {
		from, to time.Time
		jobs     []JobDef
	}{
		{from, to, []JobDef{tick, guard}},
		{from, last.Add(-margin), []JobDef{gone, before}},
		{first.Add(margin), to, []JobDef{after, added}},
	} {
		in := c.Input(part.from, part.to)
		in.Jobs = nil
		var names []string
		for _, j := range part.jobs {
			in.Jobs = append(in.Jobs, JobExpect{Name: j.Name, Schedule: j.Schedule, Forbid: j.Forbid})
			names = append(names, j.Name+" "+j.Schedule)
		}
		in.Runs, in.Events = runs, events
		r := Check(in)
		t.Logf("%q, window %s..%s: %s", names, stamp(part.from), stamp(part.to), r)
		if err := r.Err(); err != nil {
			t.Errorf("checker: %v", err)
		}
	}
	for _, run := range runs {
		u := run.Slot.Unix()
		switch {
		case run.Manual:
		case run.Job == "gone" && run.Slot.After(last.Add(margin)):
			t.Errorf("gone ran slot %s, after every replica had removed it", slotString(run))
		case run.Job == "added" && run.Slot.Before(first.Add(-margin)):
			t.Errorf("added ran slot %s, before any replica had it", slotString(run))
		case run.Job == "resched" && u%3 != 0 && run.Slot.After(last.Add(margin)):
			t.Errorf("resched ran slot %s of its old schedule after every replica had the new one", slotString(run))
		case run.Job == "resched" && u%2 != 0 && run.Slot.Before(first.Add(-margin)):
			t.Errorf("resched ran slot %s of its new schedule before any replica had it", slotString(run))
		case run.Job == "broken":
			t.Errorf("the rejected file's job ran: %s", slotString(run))
		}
	}
	c.mu.Lock()
	errs := c.exitErrs
	c.mu.Unlock()
	for _, e := range errs {
		t.Errorf("shutdown: %s", e)
	}
	logSpread(t, runs)
}
