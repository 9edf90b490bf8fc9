package cli

import (
	"context"
	"io"
	"log/slog"
)

// A replica writes a few JSON lines for every slot it runs, and at
// thousands of jobs every byte goes to a billed log store; the JSON lines
// therefore leave out what they would repeat. Their fields and values
// are slog's JSON handler's, but for two:
//   - time is UTC with microseconds, always 27 characters
//     (2026-12-03T06:01:02.123456Z): a fixed width keeps the size of a
//     line independent of the instant; microseconds still order a run's
//     start after the end of the run before it, which at least two
//     round trips to the lock stores separate (the nanoseconds slog
//     writes add nothing), where milliseconds would not;
//   - msg is left out when it only repeats the line's event (the run's
//     own lines say "run.started" once, in event); a message that says
//     more than the event, as a log job's, stays.

// jsonTimeLayout is RFC 3339 with microseconds, for UTC times.
const jsonTimeLayout = "2006-01-02T15:04:05.000000Z"

// jsonHandler is the JSON audit handler at level lv.
func jsonHandler(w io.Writer, lv slog.Level) slog.Handler {
	return eventMessage{slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv, ReplaceAttr: compactJSON})}
}

// compactJSON writes time as jsonTimeLayout and drops an empty message.
func compactJSON(groups []string, a slog.Attr) slog.Attr {
	if len(groups) != 0 {
		return a
	}
	switch {
	case a.Key == slog.TimeKey && a.Value.Kind() == slog.KindTime:
		return slog.String(slog.TimeKey, a.Value.Time().UTC().Format(jsonTimeLayout))
	case a.Key == slog.MessageKey && a.Value.Kind() == slog.KindString && a.Value.String() == "":
		return slog.Attr{}
	}
	return a
}

// eventMessage empties a record's message when it equals the record's
// own event attribute (compactJSON then drops it). Only the record's
// attributes are looked at: an event given to Logger.With is not the
// line's, and its message is kept.
type eventMessage struct{ slog.Handler }

func (h eventMessage) Handle(ctx context.Context, r slog.Record) error {
	if r.Message != "" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key != "event" {
				return true
			}
			if a.Value.Kind() == slog.KindString && a.Value.String() == r.Message {
				r.Message = ""
			}
			return false
		})
	}
	return h.Handler.Handle(ctx, r)
}

func (h eventMessage) WithAttrs(as []slog.Attr) slog.Handler {
	return eventMessage{h.Handler.WithAttrs(as)}
}

func (h eventMessage) WithGroup(name string) slog.Handler {
	return eventMessage{h.Handler.WithGroup(name)}
}
