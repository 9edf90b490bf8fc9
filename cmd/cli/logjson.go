package cli

import (
	"io"
	"log/slog"
)

// A replica writes a few JSON lines for every slot it runs, and at
// thousands of jobs every byte goes to a billed log store; the JSON lines
// therefore keep slog's JSON handler's fields and values (the contract
// names that handler: time, level, msg, then the attributes) but for
// time, which is UTC with microseconds, always 27 characters
// (2026-12-03T06:01:02.123456Z): a fixed width keeps the size of a line
// independent of the instant; microseconds still order a run's start
// after the end of the run before it, which at least two round trips to
// the lock stores separate (the nanoseconds slog writes add nothing),
// where milliseconds would not. The engine's own lines keep their
// message short: it is their event's name.

// jsonTimeLayout is RFC 3339 with microseconds, for UTC times.
const jsonTimeLayout = "2006-01-02T15:04:05.000000Z"

// jsonHandler is the JSON audit handler at level lv.
func jsonHandler(w io.Writer, lv slog.Level) slog.Handler {
	return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv, ReplaceAttr: compactTime})
}

// compactTime writes time as jsonTimeLayout.
func compactTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey && a.Value.Kind() == slog.KindTime {
		return slog.String(slog.TimeKey, a.Value.Time().UTC().Format(jsonTimeLayout))
	}
	return a
}
