package config

import (
	"errors"
	"strconv"
	"strings"

	"github.com/slotlock/slotlock/internal/strictdecode"
)

// Error is one configuration problem.
type Error struct {
	// Path is the full key path: "lock.ttl", "jobs[2].schedule",
	// "jobs[0].params.command"; "" for the file as a whole.
	Path string
	// Index is the job's index when Path is inside jobs[i], else -1.
	Index int
	// Job is the job's name when known ("" otherwise).
	Job string
	// Value, when not "", is quoted after the field in the message
	// (`schedule "0 61 * * *": ...`).
	Value string
	// Err says what is wrong.
	Err error
	// Where locates the value: "config.yaml:12:5" (file, line, column) or
	// "env SLOTLOCK_LOCK__TTL"; "" when unknown.
	Where string
}

// Error renders one line:
//
//	lock.ttl: must be greater than 3 x redis.op_timeout (300ms), got 200ms (config.yaml:18:8)
//	jobs[2] "report": schedule "0 61 * * * *": minute 61 out of range [0,59] (jobs[2].schedule, config.yaml:30:15)
//	jobs[0] "heartbeat": unknown key jobs[0].schedul (did you mean "schedule"?) (config.yaml:21:5)
//	config.yaml:3:11: invalid YAML: mapping values are not allowed in this context
func (e *Error) Error() string {
	if e.Path == "" && e.Index < 0 && e.Where != "" && e.Err != nil {
		// A problem with the file itself (YAML syntax): position first,
		// as compilers print it.
		return e.Where + ": " + e.Err.Error()
	}
	var b strings.Builder
	field := e.Path
	if e.Index >= 0 {
		b.WriteString("jobs[" + strconv.Itoa(e.Index) + "]")
		if e.Job != "" {
			b.WriteString(" " + echo(e.Job))
		}
		field = strings.TrimPrefix(strings.TrimPrefix(e.Path, "jobs["+strconv.Itoa(e.Index)+"]"), ".")
	}
	msg := ""
	if e.Err != nil {
		msg = e.Err.Error()
	}
	var uk *strictdecode.UnknownKeyError
	unknown := errors.As(e.Err, &uk)
	if unknown {
		// Name the full path; the job prefix alone would lose it.
		if e.Index >= 0 {
			b.WriteString(": ")
		}
		b.WriteString(uk.At(e.Path))
	} else {
		if field != "" {
			if b.Len() > 0 {
				b.WriteString(": ")
			}
			b.WriteString(field)
		}
		if e.Value != "" {
			b.WriteString(" " + echo(e.Value))
		}
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(msg)
	}
	// A job's field is named above in the job's words; the full key path
	// ("jobs[2].schedule") goes in the trailer too, so the line can be
	// found by either.
	var trailer []string
	if e.Index >= 0 && field != "" && !unknown {
		trailer = append(trailer, e.Path)
	}
	if e.Where != "" {
		trailer = append(trailer, e.Where)
	}
	if len(trailer) > 0 {
		b.WriteString(" (" + strings.Join(trailer, ", ") + ")")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Errors is every problem Load found. Its Error method puts one per line.
type Errors []error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.Is and errors.As look at each problem.
func (es Errors) Unwrap() []error { return es }
