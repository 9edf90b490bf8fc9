package driver

import (
	"strconv"
	"strings"
	"time"
)

// A pause register keeps the pauses that ended (Pause.Past), so that work
// due during a pause is known as paused after a resume: a slot that no
// replica judged while it was paused (every replica down, or none fired
// it before the resume) is not taken for missed, and not backfilled.

// PauseSpan is a pause that ended: work due in [From, To) was paused.
type PauseSpan struct {
	From, To time.Time
}

// Bounds of Pause.Past: the register is read by every claim, so it stays
// small; a slot older than PastPauseKeep is beyond what the reconciler
// and a backfill judge by the register (they read the slot history).
const (
	MaxPastPauses = 16
	PastPauseKeep = 48 * time.Hour
)

// pastMark starts the past spans in a register's value. It follows the
// reason, the value's last field, so that a reader that knows no past
// spans still parses the current pause (its reason then ends with them);
// FormatPause keeps the mark out of a reason.
const pastMark = "\x1epast:"

// PausedAt reports whether work due at t fell within a pause: the
// current one (Covers) or one that ended (Past).
func (p Pause) PausedAt(t time.Time) bool {
	if p.Covers(t) {
		return true
	}
	for _, s := range p.Past {
		if !t.Before(s.From) && t.Before(s.To) {
			return true
		}
	}
	return false
}

// Succeed is next, the register's next value (its Version set), with the
// past pauses of p, the current value, and p's own pause when it held
// after it was written: ended at Until or by next, whichever came first.
// Spans older than PastPauseKeep before next, and beyond the
// MaxPastPauses newest, are dropped.
func (p Pause) Succeed(next Pause) Pause {
	end := next.Since()
	past := make([]PauseSpan, 0, len(p.Past)+1)
	for _, s := range p.Past {
		if end.Sub(s.To) <= PastPauseKeep {
			past = append(past, s)
		}
	}
	if p.Paused && p.Version > 0 {
		to := end
		if !p.Until.IsZero() && p.Until.Before(to) {
			to = time.UnixMilli(p.Until.UnixMilli()) // the register's precision, on every store
		}
		if from := p.Since(); to.After(from) && end.Sub(to) <= PastPauseKeep {
			past = append(past, PauseSpan{From: from, To: to})
		}
	}
	if len(past) > MaxPastPauses {
		past = past[len(past)-MaxPastPauses:]
	}
	next.Past = nil
	if len(past) > 0 {
		next.Past = past
	}
	return next
}

// formatPast is the suffix of a register's value that holds past:
// pastMark, then "<from ms>-<to ms>" for each span, comma separated.
func formatPast(past []PauseSpan) string {
	if len(past) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(pastMark)
	for i, s := range past {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(s.From.UnixMilli(), 10))
		b.WriteByte('-')
		b.WriteString(strconv.FormatInt(s.To.UnixMilli(), 10))
	}
	return b.String()
}

// cutPast splits a register's last field into the reason and its past
// spans; a span that does not parse is left out.
func cutPast(field string) (string, []PauseSpan) {
	reason, spans, found := strings.Cut(field, pastMark)
	if !found {
		return field, nil
	}
	var past []PauseSpan
	for _, s := range strings.Split(spans, ",") {
		from, to, ok := strings.Cut(s, "-")
		f, ferr := strconv.ParseInt(from, 10, 64)
		u, uerr := strconv.ParseInt(to, 10, 64)
		if ok && ferr == nil && uerr == nil && u > f {
			past = append(past, PauseSpan{From: time.UnixMilli(f), To: time.UnixMilli(u)})
		}
	}
	return reason, past
}
