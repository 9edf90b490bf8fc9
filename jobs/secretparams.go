package jobs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/slotlock/slotlock/internal/strictdecode"
)

// Redaction by structure. A credential's name cannot be guessed (MYSQL_PWD,
// GPG_PASSPHRASE, "--password x", a DSN "user:pw@tcp(h)/db"), but its place
// can: an exec job's env values and arguments, an http job's body. A plugin
// names those places (SecretParams); their values are hidden in every dump
// and scrubbed from every text the job logs or returns, unless the job's
// own allow-list shows them (exec show_env / show_args, http show_body,
// like http show_query for query values).

// ParamPath locates one value inside a job's params: map keys (string)
// and list indexes (int), outermost first. ParamPath{"env", "DB_PASS"} is
// params.env.DB_PASS, ParamPath{"command", 2} is params.command[2].
type ParamPath []any

// String renders the path as config errors do: "env.DB_PASS", "command[2]".
func (p ParamPath) String() string {
	var b strings.Builder
	for _, s := range p {
		switch x := s.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(x) + "]")
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(fmt.Sprint(x))
		}
	}
	return b.String()
}

// SecretParams is implemented by a Job whose params carry credentials by
// their place, whatever their names. SecretParams returns the paths of the
// values the job was configured with that must never be shown: those a
// plugin declares secret-bearing (exec: every env value and every argument
// after command[0]; http: the body), less those the job's allow-list
// shows. The configuration dump shows them as "***" (RedactParams), the
// job's log lines and errors scrub their values (Scrubber), and the
// definitions hash never shows them. A plugin without it is redacted by
// name only (RedactMap), which cannot recognise every credential.
type SecretParams interface {
	SecretParams() []ParamPath
}

// SecretValues returns the string values found at paths in params (for a
// Scrubber). A path that leads nowhere is skipped.
func SecretValues(params map[string]any, paths []ParamPath) []string {
	var out []string
	norm := strictdecode.Normalize(params)
	for _, p := range paths {
		if v, ok := lookupPath(norm, p); ok {
			collectStrings(v, &out)
		}
	}
	return out
}

func collectStrings(v any, out *[]string) {
	switch x := v.(type) {
	case string:
		*out = append(*out, x)
	case map[string]any:
		for _, e := range x {
			collectStrings(e, out)
		}
	case []any:
		for _, e := range x {
			collectStrings(e, out)
		}
	case nil:
	default:
		*out = append(*out, fmt.Sprint(x)) // a numeric PIN is a secret too
	}
}

// lookupPath finds the value at p in v (normalized: maps and lists as
// map[string]any and []any).
func lookupPath(v any, p ParamPath) (any, bool) {
	for _, s := range p {
		switch x := v.(type) {
		case map[string]any:
			k, ok := s.(string)
			if !ok {
				return nil, false
			}
			if v, ok = x[k]; !ok {
				return nil, false
			}
		case []any:
			i, ok := s.(int)
			if !ok || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// hidePaths returns a deep copy of params in which the value at every path
// is Redacted (a nil value stays nil).
func hidePaths(params map[string]any, paths []ParamPath) map[string]any {
	out, _ := strictdecode.Normalize(params).(map[string]any) // a deep copy
	for _, p := range paths {
		if len(p) == 0 {
			continue
		}
		parent, ok := lookupPath(out, p[:len(p)-1])
		if !ok {
			continue
		}
		switch x := parent.(type) {
		case map[string]any:
			if k, ok := p[len(p)-1].(string); ok && x[k] != nil {
				x[k] = Redacted
			}
		case []any:
			if i, ok := p[len(p)-1].(int); ok && i >= 0 && i < len(x) && x[i] != nil {
				x[i] = Redacted
			}
		}
	}
	return out
}
