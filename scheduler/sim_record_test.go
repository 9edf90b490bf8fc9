package scheduler_test

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/slotlock/slotlock/jobs"
)

// What the simulation records: the ledger of runs, as the jobs saw them,
// and the audit events, as the replicas logged them. Both drop what a dead
// process would not have written.

// runRec is one run as its job saw it.
type runRec struct {
	job, slot, replica, runID string // slot "manual" for a trigger
	inst                      *instance
	token                     uint64
	start, end                time.Time // end zero: never ended (its process died)
}

// auditRec is one audit event (a log line with an event attribute).
type auditRec struct {
	at                       time.Time
	inst                     *instance
	event, job, slot, reason string
	runID, holder, firstSlot string
	bySlot                   string // run.canceled and slot.skipped reason replaced
	missed                   int64
	mayHaveStarted           bool // slot.missed: its winner stopped before confirming its start
	replica                  string
	tokenAttr                uint64
	errText                  string
	level                    slog.Level
}

type record struct {
	mu     sync.Mutex
	runs   []*runRec
	audits []auditRec
}

func (r *record) addRun(x *runRec) {
	r.mu.Lock()
	r.runs = append(r.runs, x)
	r.mu.Unlock()
}

func (r *record) endRun(x *runRec, at time.Time) {
	r.mu.Lock()
	x.end = at
	r.mu.Unlock()
}

// simJob is the simulation's plugin: it works for its duration on the
// replica's clock (or until its context ends) and records its run.
type simJob struct {
	rec  *record
	inst *instance
	dur  func(slot time.Time) time.Duration
}

func (j *simJob) Run(ctx context.Context, run jobs.Run) error {
	if !j.inst.gate.Wait() {
		return context.Canceled
	}
	x := &runRec{job: run.Job, slot: run.SlotString(), replica: run.Replica, runID: run.RunID,
		inst: j.inst, token: run.FencingToken, start: time.Now()}
	if run.Attempt == 1 {
		j.rec.addRun(x)
	}
	t := time.NewTimer(j.dur(run.Slot))
	defer t.Stop()
	var err error
	select {
	case <-t.C:
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	if j.inst.gate.Wait() && run.Attempt == 1 {
		j.rec.endRun(x, time.Now())
	}
	return err
}

// auditHandler keeps the audit events of one process, in memory: a paused
// process writes nothing until it resumes, a dead one nothing at all.
type auditHandler struct {
	rec   *record
	inst  *instance
	attrs []slog.Attr
}

func (h *auditHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *auditHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &auditHandler{rec: h.rec, inst: h.inst, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

func (h *auditHandler) WithGroup(string) slog.Handler { return h }

func (h *auditHandler) Handle(_ context.Context, r slog.Record) error {
	if !h.inst.gate.Wait() {
		return nil
	}
	a := auditRec{at: time.Now(), inst: h.inst, level: r.Level}
	set := func(at slog.Attr) {
		v := at.Value.Resolve()
		switch at.Key {
		case "event":
			a.event = v.String()
		case "job":
			a.job = v.String()
		case "slot":
			a.slot = v.String()
		case "reason":
			a.reason = v.String()
		case "run_id":
			a.runID = v.String()
		case "holder":
			a.holder = v.String()
		case "first_slot":
			a.firstSlot = v.String()
		case "by_slot":
			a.bySlot = v.String()
		case "missed":
			a.missed = v.Int64()
		case "replica":
			a.replica = v.String()
		case "may_have_started":
			a.mayHaveStarted = v.Bool()
		case "error":
			a.errText = v.String()
		}
	}
	for _, at := range h.attrs {
		set(at)
	}
	r.Attrs(func(at slog.Attr) bool { set(at); return true })
	if a.event == "" {
		return nil
	}
	h.rec.mu.Lock()
	h.rec.audits = append(h.rec.audits, a)
	h.rec.mu.Unlock()
	return nil
}
