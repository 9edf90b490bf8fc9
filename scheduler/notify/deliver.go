package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Events of the audit log (CONTRACT: notify.sent, notify.failed).
const (
	evSent   = "notify.sent"
	evFailed = "notify.failed"
)

// Headers of a request besides the target's own.
const (
	headerKey    = "Idempotency-Key"
	headerJob    = "X-Slotlock-Job"
	headerEvent  = "X-Slotlock-Event"
	headerResend = "X-Slotlock-Resend" // "true": a sweeper's resend of a notification whose sender died
)

// notify sends event p of w: the pending record, the delivery, the
// result in its place.
func (n *Notifier) notify(w scheduler.Written, p pair) {
	if p.maybe && !n.recovered(w) {
		return
	}
	r := newRecord(w, p.to, p.event, n.cfg.Replica, n.cfg.Clock.Now())
	pending, err := n.append(r, "")
	if err != nil {
		// Sent all the same: the record is what lets another replica
		// resend it should this one die now, and its absence only widens
		// that window.
		n.cfg.Logger.Warn("could not record a pending notification; sending it without", "event", evFailed,
			"job", r.Job, "slot", r.Slot, "run_id", r.RunID, "to", r.To, "notify_event", r.Event,
			"error", n.scrub.String(err.Error()), "pending", true)
		pending = ""
	}
	n.finish(n.deliver(r, false), pending)
}

// deliver sends r to its target, retrying with backoff, and returns r
// with its result (State, Attempts, Status, Error).
func (n *Notifier) deliver(r Record, resend bool) Record {
	t, ok := n.targets[r.To]
	if !ok {
		r.State, r.Error = StateFailed, "no notify target named "+strconv.Quote(r.To)+" on this replica"
		return r
	}
	body, err := render(t.Format, r)
	if err != nil {
		r.State, r.Error = StateFailed, err.Error()
		return r
	}
	for try := 1; ; try++ {
		r.Attempts = try
		status, err := n.post(t, r, body, resend)
		r.Status = status
		if err == nil {
			r.State, r.Error = StateSent, ""
			return r
		}
		r.Error = n.scrub.String(err.Error())
		if try > t.Retries || !retryable(status) {
			r.State = StateFailed
			return r
		}
		timer := n.cfg.Clock.NewTimer(backoff(t.Backoff, try))
		<-timer.C()
	}
}

// post makes one try: nil error for a 2xx answer.
func (n *Notifier) post(t Target, r Record, body []byte, resend bool) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), t.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return 0, errors.New("the webhook URL does not parse") // never the URL itself
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "slotlock")
	for k, v := range t.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set(headerKey, r.Key)
	req.Header.Set(headerJob, r.Job)
	req.Header.Set(headerEvent, r.Event)
	if resend {
		req.Header.Set(headerResend, "true")
	}
	resp, err := n.cfg.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text would name the URL, which may carry the secret
		}
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so the connection is reused
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("the receiver answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return resp.StatusCode, nil
}

// retryable: no answer, or one that says try later.
func retryable(status int) bool {
	return status == 0 || status == http.StatusRequestTimeout || status == http.StatusTooEarly ||
		status == http.StatusTooManyRequests || status >= 500
}

// finish replaces the pending record with r's result, and logs and
// counts it. A result the stores did not take leaves the record pending:
// a sweeper will resend it, and the key lets the receiver drop it.
func (n *Notifier) finish(r Record, pending string) {
	_, err := n.append(r, pending)
	n.cfg.Metrics.Notification(r.To, r.State)
	attrs := []any{"job", r.Job, "slot", r.Slot, "run_id", r.RunID, "to", r.To, "notify_event", r.Event,
		"idempotency_key", r.Key, "attempts", r.Attempts}
	if r.By != "" {
		attrs = append(attrs, "resend", true, "writer", r.Writer)
	}
	if err != nil {
		attrs = append(attrs, "record_error", n.scrub.String(err.Error()))
	}
	if r.State == StateSent {
		n.cfg.Logger.Info("notification sent", append([]any{"event", evSent}, attrs...)...)
		return
	}
	if r.Status != 0 {
		attrs = append(attrs, "status", r.Status)
	}
	n.cfg.Logger.Error("notification could not be delivered", append([]any{"event", evFailed, "error", r.Error}, attrs...)...)
}

// recovered reports whether w, a success, follows a bad outcome: the
// newest earlier entry in the job's history that is a run's outcome or a
// miss (succeeded, failed, missed, abandoned, or canceled by its
// timeout) is not a success. Skipped and other canceled entries are
// passed over. Unknown (the stores do not answer): no.
func (n *Notifier) recovered(w scheduler.Written) bool {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	log, err := n.cfg.Store.ReadLog(ctx, w.Job, 0, recoveredLook)
	if err != nil {
		n.cfg.Logger.Warn("could not read the job's history to tell whether it recovered", "event", evFailed,
			"job", w.Job, "slot", w.Entry.Slot, "run_id", w.Entry.RunID, "notify_event", EventRecovered,
			"error", n.scrub.String(err.Error()))
		return false
	}
	for _, le := range log { // newest first
		if le.Score >= w.Slot.Unix() {
			continue
		}
		e, ok := history.ParseEntry(le)
		if !ok {
			continue
		}
		if e.Outcome == history.OutcomeSucceeded {
			return false
		}
		if len(entryEvents(e)) > 0 {
			return true
		}
	}
	return false
}

// recoveredLook is how many of the newest history entries recovered
// reads: the slot just written is among the newest but for a backfill.
const recoveredLook = 50
