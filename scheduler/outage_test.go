package scheduler

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeOutageDeps stands for outcomes, the fleet and the misfire policy
// around an outage built alone.
type fakeOutageDeps struct {
	mu        sync.Mutex
	ended     []pendingEnd
	published int
	recovered []time.Time
}

func (f *fakeOutageDeps) endLeaseThen(p pendingEnd) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended = append(f.ended, p)
}

func (f *fakeOutageDeps) tryEnd(p *pendingEnd) error {
	f.endLeaseThen(*p)
	return nil
}

func (f *fakeOutageDeps) publishOutage(from, to time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.published++
}

func (f *fakeOutageDeps) recoverOutage(j *job, first, last time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recovered = append(f.recovered, first, last)
}

// TestOutageAlone: an outage built over fakes. An end the stores refused
// is held, and a probe starts; when the stores answer (the probe's ping)
// the end is ended again, the outage published, and the slots a job
// skipped with no_quorum handed to the misfire policy, first and last.
// Without Run nothing probes: the end waits for the next majority answer.
func TestOutageAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newEnv(t)
		spec := everySecond(t, "tick", &recorder{now: time.Now})
		spec.Misfire = Misfire{Policy: MisfireRunAll, Deadline: time.Minute, Max: 10}
		e := testEngine(t, Config{Replica: "r1", Locker: env.locker, Beat: time.Second, Jobs: []JobSpec{spec}})
		deps := &fakeOutageDeps{}
		ot := newOutage(e, deps, deps, deps)
		j, _ := e.job("tick")
		first := time.Now().Truncate(time.Second)

		ot.retryEnd(pendingEnd{job: "tick"})
		time.Sleep(time.Second)
		if len(deps.ended) != 0 || !ot.down.Load() {
			t.Fatalf("without Run: %d ends, down %v; want the end held", len(deps.ended), ot.down.Load())
		}
		e.state.Store(stateRunning)
		ot.noteOutage(j, first)
		ot.noteOutage(j, first.Add(2*time.Second))
		time.Sleep(time.Second)
		e.stopOnce.Do(func() { close(e.stopping) })
		e.wg.Wait()

		if len(deps.ended) != 1 || deps.published != 1 || ot.down.Load() {
			t.Errorf("%d ends, %d outages published, down %v: want the held end ended, one outage, the stores up",
				len(deps.ended), deps.published, ot.down.Load())
		}
		if len(deps.recovered) != 2 || !deps.recovered[0].Equal(first) || !deps.recovered[1].Equal(first.Add(2*time.Second)) {
			t.Errorf("recovered %v, want the range the job skipped", deps.recovered)
		}
	})
}
