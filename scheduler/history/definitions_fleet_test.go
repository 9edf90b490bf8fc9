package history

import (
	"testing"
	"time"
)

// TestLargestJittersAndAllowsOverlap: of the versions published at since
// or later, each job's largest jitter and whether one runs it under
// allow; an older version (no replica republished it) does not count.
func TestLargestJittersAndAllowsOverlap(t *testing.T) {
	now := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	versions := []Definitions{
		{Published: now, Jobs: []JobDef{{Name: "a", Jitter: "10s", Overlap: "forbid"}, {Name: "b", Overlap: "forbid"}}},
		{Published: now.Add(-time.Minute), Jobs: []JobDef{{Name: "a", Jitter: "50s", Overlap: "allow"}, {Name: "b", Jitter: "bad"}}},
		{Published: now.Add(-time.Hour), Jobs: []JobDef{{Name: "a", Jitter: "5m"}, {Name: "b", Overlap: "allow"}}},
	}
	since := now.Add(-5 * time.Minute)
	j := LargestJitters(versions, since)
	if j["a"] != 50*time.Second || j["b"] != 0 {
		t.Errorf("LargestJitters = %v, want a 50s, b 0", j)
	}
	a := AllowsOverlap(versions, since)
	if !a["a"] || a["b"] {
		t.Errorf("AllowsOverlap = %v, want a only", a)
	}
	if d := (JobDef{Jitter: "10s"}).Differences(JobDef{}); len(d) != 1 || d[0] != "jitter" {
		t.Errorf("Differences = %v, want jitter", d)
	}
}
