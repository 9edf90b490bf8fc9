package scheduler

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// fakeRetrier records the ends handed over for a retry.
type fakeRetrier struct {
	mu   sync.Mutex
	ends []pendingEnd
}

func (f *fakeRetrier) retryEnd(p pendingEnd) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ends = append(f.ends, p)
}

// TestOutcomesAlone: outcomes built over a fake outage. A slot's end
// writes its done marker, its history entry and the job's record in one
// call, then says so (then); the entry reads back as the slot's outcome.
// A lease lost before its end is neither retried nor followed by then.
func TestOutcomesAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newEnv(t)
		ctx := context.Background()
		e := testEngine(t, Config{Replica: "r1", Locker: env.locker, Logger: env.sink.logger("r1"),
			Jobs: []JobSpec{everySecond(t, "tick", &recorder{now: time.Now})}})
		retry := &fakeRetrier{}
		o := newOutcomes(e, retry)
		j, _ := e.job("tick")
		slot := time.Now().Truncate(time.Second)
		claim, err := env.locker.Claim(ctx, history.SlotKey("tick", slot), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		ran := history.Entry{Slot: slotString(slot), Outcome: history.OutcomeSucceeded, Replica: "r1"}
		thens := 0
		p := pendingEnd{job: "tick", slot: slotString(slot), lease: claim, doneTTL: j.doneTTL,
			note: string(ran.Outcome), entry: logged(ran, slot), then: func() { thens++ }}
		o.recordDue(j, slot)
		p.record = j
		o.endLeaseThen(p)
		if thens != 1 || len(retry.ends) != 0 {
			t.Fatalf("then called %d times, %d retries: want one call, none", thens, len(retry.ends))
		}
		got, found, err := o.slotRecorded(ctx, "tick", slot)
		if err != nil || !found || got.Outcome != history.OutcomeSucceeded {
			t.Errorf("recorded %+v %v %v, want succeeded", got, found, err)
		}
		if v, err := o.readRecord("tick"); err != nil || v != slot.Unix() {
			t.Errorf("the job's record is %d (%v), want the slot %d", v, err, slot.Unix())
		}

		lost, err := env.locker.Acquire(ctx, history.RunKey("tick"), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		if _, err := env.locker.Acquire(ctx, history.RunKey("tick"), time.Minute); err != nil {
			t.Fatal(err) // another replica took the key over
		}
		o.endLeaseThen(pendingEnd{job: "tick", slot: slotString(slot), lease: lost, then: func() { thens++ }})
		if thens != 1 || len(retry.ends) != 0 {
			t.Errorf("a lost lease's end: then called %d times in all, %d retries; want no call, no retry", thens, len(retry.ends))
		}
	})
}
