// Package notify sends a job's notifications — failed, missed, abandoned,
// recovered — to webhooks, once per event across a fleet of replicas.
//
// Once: the scheduler calls Notifier.Written only on the replica whose
// write of a slot's outcome entry succeeded (scheduler.Notifier says
// which writes those are), so exactly one replica starts each
// notification. That replica first appends a pending record to the
// notification log (the fleet-wide family Family), then delivers it with
// retries and backoff, then replaces the record with its result: sent, or
// failed (counted in slotlock_notifications_total, logged as
// notify.failed). A replica that dies between its pending record and the
// result leaves the record pending; the sweeper (Run) of whichever
// replica holds the sweeper's lease takes it over once it is older than
// TakeOverAfter and sends it again — with the same Idempotency-Key and
// X-Slotlock-Resend: true, so a receiver can drop what it already got.
// The window that is left: a replica killed after its outcome write and
// before its pending record reached a majority (one store round trip)
// loses that notification (docs/notifications.md).
//
// Every request carries Idempotency-Key: <run id or slot>:<event>. The
// webhook's URL and header values are secrets: they never appear in a log
// line, an error, a record or a metric; a target is named by its name.
package notify

import (
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Events a job's rule may ask for (scheduler.NotifyRule.On).
const (
	EventFailed    = "failed"
	EventMissed    = "missed"
	EventAbandoned = "abandoned"
	EventRecovered = "recovered"
)

// Events lists every event, in the order the docs give them.
var Events = []string{EventFailed, EventMissed, EventAbandoned, EventRecovered}

// Formats of a webhook's body.
const (
	FormatJSON  = "json"
	FormatSlack = "slack"
	FormatTeams = "teams"
)

// Formats lists every format.
var Formats = []string{FormatJSON, FormatSlack, FormatTeams}

// Results: the result label of slotlock_notifications_total and a
// record's state once delivered or given up.
const (
	ResultSent   = "sent"
	ResultFailed = "failed"
)

// Target is one webhook (the top-level notify list).
type Target struct {
	Name    string
	URL     string            // a secret: never logged
	Format  string            // FormatJSON (""), FormatSlack, FormatTeams
	Headers map[string]string // values are secrets
	// Timeout bounds one try (default 10s); a failed try is retried up to
	// Retries times (default 4; negative: none), after Backoff * 2^(n-1)
	// (default 1s).
	Timeout time.Duration
	Retries int
	Backoff time.Duration
}

// Defaults of a Target.
const (
	DefaultTimeout = 10 * time.Second
	DefaultRetries = 4
	DefaultBackoff = time.Second
)

func (t Target) withDefaults() Target {
	if t.Format == "" {
		t.Format = FormatJSON
	}
	if t.Timeout <= 0 {
		t.Timeout = DefaultTimeout
	}
	if t.Retries == 0 {
		t.Retries = DefaultRetries
	}
	if t.Retries < 0 {
		t.Retries = 0
	}
	if t.Backoff <= 0 {
		t.Backoff = DefaultBackoff
	}
	return t
}

// budget bounds how long one delivery to t takes: every try's timeout
// and every wait between tries.
func (t Target) budget() time.Duration {
	d := time.Duration(t.Retries+1) * t.Timeout
	for i := 1; i <= t.Retries; i++ {
		d += backoff(t.Backoff, i)
	}
	return d
}

// Metrics counts notifications by target and result (ResultSent,
// ResultFailed): slotlock_notifications_total. ops.Metrics implements it.
type Metrics interface {
	Notification(to, result string)
}

// Config configures a Notifier. Targets and Store are required.
type Config struct {
	Targets []Target
	// Store holds the notification log and the sweeper's lease, and
	// answers the recovered question (the job's history): the scheduler's
	// Locker.
	Store   locking.Locker
	Replica string        // this replica, in records and bodies
	Clock   locking.Clock // default locking.SystemClock(0)
	Logger  *slog.Logger  // notify.sent and notify.failed; default slog.Default()
	Metrics Metrics       // nil: none
	// Secrets are more values no log line may show (the Redis password);
	// the targets' URLs and header values are added.
	Secrets []string
	Client  *http.Client // default: no redirects followed (a try's timeout is the target's)
	// TakeOverAfter is how old a pending record must be before a sweeper
	// takes it over: default the longest delivery (Target's retries) plus
	// takeOverMargin. SweepEvery is how often a replica tries to be the
	// sweeper: default a third of TakeOverAfter, at most 30s.
	TakeOverAfter, SweepEvery time.Duration
}

// Notifier sends notifications; it implements scheduler.Notifier. Safe
// for concurrent use.
type Notifier struct {
	cfg     Config
	targets map[string]Target
	scrub   *jobs.Scrubber
	wg      sync.WaitGroup
}

var _ scheduler.Notifier = (*Notifier)(nil)

// New returns a Notifier for cfg (defaults filled in).
func New(cfg Config) *Notifier {
	if cfg.Clock == nil {
		cfg.Clock = locking.SystemClock(0)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	var longest time.Duration
	cfg.Targets = slices.Clone(cfg.Targets)
	for i := range cfg.Targets {
		cfg.Targets[i] = cfg.Targets[i].withDefaults()
		longest = max(longest, cfg.Targets[i].budget())
	}
	if cfg.TakeOverAfter <= 0 {
		cfg.TakeOverAfter = longest + takeOverMargin
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = min(30*time.Second, cfg.TakeOverAfter/3)
	}
	n := &Notifier{cfg: cfg, targets: map[string]Target{}}
	secrets := slices.Clone(cfg.Secrets)
	for _, t := range cfg.Targets {
		n.targets[t.Name] = t
		secrets = append(secrets, targetSecrets(t)...)
	}
	n.scrub = jobs.NewScrubber(secrets...)
	return n
}

// takeOverMargin is how much longer than its longest delivery a pending
// record waits before it is taken over: its sender may still be writing
// the result to the stores.
const takeOverMargin = 10 * time.Second

// Written starts the notifications the job's rules ask for about w's
// entry, in the background (scheduler.Notifier).
func (n *Notifier) Written(w scheduler.Written) {
	for _, p := range n.events(w) {
		n.wg.Add(1)
		go func() { // one per target: a slow receiver delays no other
			defer n.wg.Done()
			n.notify(w, p)
		}()
	}
}

// Wait waits for the notifications started so far (tests, and a clean
// shutdown that wants them out).
func (n *Notifier) Wait() { n.wg.Wait() }

// WaitFor is Wait for at most d (on the real clock: a stopping process);
// false when some are still under way. Their records stay pending, for a
// sweeper to take over.
func (n *Notifier) WaitFor(d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		n.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// events are the (target, event) pairs w's rules ask for.
func (n *Notifier) events(w scheduler.Written) []pair {
	evs := entryEvents(w.Entry)
	var out []pair
	for _, r := range w.Rules {
		for _, ev := range evs {
			if slices.Contains(r.On, ev) {
				out = append(out, pair{to: r.To, event: ev})
			}
		}
		if slices.Contains(r.On, EventRecovered) && w.Entry.Outcome == history.OutcomeSucceeded {
			out = append(out, pair{to: r.To, event: EventRecovered, maybe: true})
		}
	}
	return out
}

type pair struct {
	to, event string
	maybe     bool // recovered: only if the job's previous outcome was bad
}

// entryEvents maps an outcome entry to its event: failed (a failed run,
// or one canceled by its timeout: the job did not finish), missed,
// abandoned. A success may be recovered (pair.maybe); other outcomes
// (canceled for a shutdown, a lost lease or a newer slot) are none.
func entryEvents(e history.Entry) []string {
	switch {
	case e.Outcome == history.OutcomeFailed,
		e.Outcome == history.OutcomeCanceled && e.Reason == history.ReasonTimeout:
		return []string{EventFailed}
	case e.Outcome == history.OutcomeMissed:
		return []string{EventMissed}
	case e.Outcome == history.OutcomeAbandoned:
		return []string{EventAbandoned}
	}
	return nil
}

// backoff is the wait after failed try n (1-based): base * 2^(n-1), at
// most a minute.
func backoff(base time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}

// targetSecrets are the values of t that no text may show: its URL whole,
// its path and query (a Slack or Teams webhook's secret is its path), its
// user info, and its header values.
func targetSecrets(t Target) []string {
	out := []string{t.URL}
	if u, err := url.Parse(t.URL); err == nil {
		for _, v := range []string{u.EscapedPath(), u.Path, u.RawQuery} {
			if len(v) >= 8 { // "/" or "/hook" says nothing, and hiding them would garble every text
				out = append(out, v)
			}
		}
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
		if u.User != nil {
			out = append(out, u.User.Username())
		}
	}
	for _, v := range t.Headers {
		out = append(out, v)
	}
	return out
}

type nopMetrics struct{}

func (nopMetrics) Notification(string, string) {}
