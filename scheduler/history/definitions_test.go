package history

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// Replicas running the same definitions share one entry; each job's
// definition is taken from the latest version that names it; an entry
// stays within its bound, counting the jobs it leaves out.
func TestPublishedDefinitions(t *testing.T) {
	ctx := context.Background()
	l := locking.NewLocal(locking.Options{Replica: "r"})
	defer l.Close()
	now := time.Unix(1_800_000_000, 0)
	v1 := Definitions{Hash: "h1", Jobs: []JobDef{
		{Name: "a", Schedule: "@every 1s", Timezone: "UTC", Overlap: "forbid", Misfire: "skip", Enabled: true},
		{Name: "b", Schedule: "@daily", Timezone: "UTC", Overlap: "forbid", Misfire: "skip", Enabled: true},
	}}
	v2 := Definitions{Hash: "h2", Jobs: []JobDef{
		{Name: "a", Schedule: "@every 2s", Timezone: "Europe/Paris", Overlap: "forbid", Misfire: "skip", Enabled: true},
	}}
	for i, v := range []Definitions{v1, v1, v2, v1} { // v1 republished last, by another replica
		if err := l.AppendLog(ctx, DefinitionsFamily, v.Append(now.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	versions, err := ReadDefinitions(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != 2 || versions[0].Hash != "h1" || versions[1].Hash != "h2" || !versions[0].Published.Equal(now.Add(3*time.Second)) {
		t.Fatalf("versions = %+v", versions)
	}
	jobs, omitted := PublishedJobs(versions)
	if len(jobs) != 2 || jobs["a"].Schedule != "@every 1s" || omitted != 0 {
		t.Errorf("jobs = %+v, omitted %d", jobs, omitted)
	}
	if d := v1.Jobs[0].Differences(v2.Jobs[0]); strings.Join(d, ",") != "schedule,timezone" {
		t.Errorf("Differences = %v", d)
	}

	var big Definitions
	for i := range 5000 {
		big.Jobs = append(big.Jobs, JobDef{Name: fmt.Sprintf("job-%04d", i), Schedule: "0 */5 * * * *", Timezone: "America/Argentina/Buenos_Aires"})
	}
	a := big.Append(now.Add(10 * time.Second))
	if n := len(a.Entry.Value); n > maxDefinitionsBytes {
		t.Errorf("entry of %d bytes, bound %d", n, maxDefinitionsBytes)
	}
	if err := l.AppendLog(ctx, DefinitionsFamily, a); err != nil {
		t.Fatal(err)
	}
	versions, err = ReadDefinitions(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	if d := versions[0]; d.Omitted == 0 || len(d.Jobs)+d.Omitted != 5000 || d.Jobs[0].Name != "job-0000" {
		t.Errorf("bounded entry: %d jobs, %d omitted", len(d.Jobs), d.Omitted)
	}
}
