package notify

import (
	"context"
	"encoding/json"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// The notification log: the fleet-wide log of family Family
// (<prefix>:{_notify}:log), appended to like the fleet log
// ({_fleet}:log) but apart from it — an every-second job that fails would
// otherwise push the heartbeats, which the reconciler judges slots by,
// out of that log's bounded length. Each notification has one entry: a
// pending record when its sender starts, replaced (in the same step) by
// its result, sent or failed. A pending record older than TakeOverAfter
// is a sender that died: the sweeper takes it over (sweep.go).

// Family is the lock-store family of the notification log (a job's name
// cannot start with '_'; history/keys.go holds the layout).
const Family = history.NotifyFamily

// Record states.
const (
	StatePending = "pending"
	StateSent    = ResultSent
	StateFailed  = ResultFailed
)

// logKeep bounds the notification log's entries; records older than
// history.Retention are dropped as well.
const logKeep = 10_000

// Record is one notification in the log. It holds no secret: the target
// is named, never its URL; Error is scrubbed.
type Record struct {
	Kind       string    `json:"kind"` // "notify"
	State      string    `json:"state"`
	Key        string    `json:"key"` // the Idempotency-Key
	Job        string    `json:"job"`
	Slot       string    `json:"slot"`
	RunID      string    `json:"run_id,omitempty"`
	To         string    `json:"to"`
	Event      string    `json:"event"`
	Outcome    string    `json:"outcome"`
	Reason     string    `json:"reason,omitempty"`
	ErrorClass string    `json:"error_class,omitempty"`
	Replica    string    `json:"replica,omitempty"` // the run's replica, as the entry says
	Writer     string    `json:"writer"`            // the writer of record: the first sender
	By         string    `json:"by,omitempty"`      // a sweeper that took the record over
	At         time.Time `json:"at"`                // when the outcome was written
	TakenAt    time.Time `json:"taken_at,omitzero"`
	Attempts   int       `json:"attempts,omitempty"`
	Status     int       `json:"status,omitempty"` // the receiver's last HTTP status
	Error      string    `json:"error,omitempty"`
}

const kindNotify = "notify"

// newRecord is the pending record of event ev of w for target to.
func newRecord(w scheduler.Written, to, ev, writer string, now time.Time) Record {
	e := w.Entry
	return Record{Kind: kindNotify, State: StatePending, Key: idempotencyKey(w, ev), Job: w.Job,
		Slot: jobs.SlotString(w.Slot), RunID: e.RunID, To: to, Event: ev, Outcome: string(e.Outcome),
		Reason: string(e.Reason), ErrorClass: e.ErrorClass, Replica: e.Replica, Writer: writer, At: now.UTC()}
}

// idempotencyKey is <run id or slot>:<event>: the same whoever sends it,
// first or again.
func idempotencyKey(w scheduler.Written, ev string) string {
	id := w.Entry.RunID
	if id == "" {
		id = jobs.SlotString(w.Slot)
	}
	return id + ":" + ev
}

// value is r as the log stores it.
func (r Record) value() string {
	b, _ := json.Marshal(r) // strings, numbers and times: cannot fail
	return string(b)
}

// append adds r to the log in place of replace ("" for none).
func (n *Notifier) append(r Record, replace string) (string, error) {
	v := r.value()
	now := n.cfg.Clock.Now()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	err := n.cfg.Store.AppendLog(ctx, Family, locking.LogAppend{
		Entry: locking.LogEntry{Score: r.At.Unix(), Value: v}, Replace: replace,
		Keep: logKeep, Floor: now.Add(-history.Retention).Unix()})
	return v, err
}

// storeTimeout bounds one call to the stores.
const storeTimeout = 5 * time.Second

// ReadRecords returns the notification log's records of job (all jobs
// when job is ""), newest first, at most limit (0: all), from the newest
// readScan entries of the log when limit is set: a status page's read
// stays bounded however long the log.
func ReadRecords(ctx context.Context, store locking.Store, job string, limit int) ([]Record, error) {
	scan := logKeep
	if limit > 0 {
		scan = readScan
	}
	entries, err := readLog(ctx, store, scan)
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, e := range entries {
		if job == "" || e.rec.Job == job {
			out = append(out, e.rec)
			if limit > 0 && len(out) == limit {
				break
			}
		}
	}
	return out, nil
}

type logged struct {
	rec   Record
	value string
}

// readScan bounds the entries ReadRecords reads for a limited answer.
const readScan = 1000

// readLog reads the newest n entries of the notification log, newest
// first.
func readLog(ctx context.Context, store locking.Store, n int) ([]logged, error) {
	entries, err := store.ReadLog(ctx, Family, 0, n)
	if err != nil {
		return nil, err
	}
	out := make([]logged, 0, len(entries))
	for _, e := range entries {
		var r Record
		if json.Unmarshal([]byte(e.Value), &r) != nil || r.Kind != kindNotify {
			continue // a newer version's record
		}
		out = append(out, logged{rec: r, value: e.Value})
	}
	return out, nil
}
