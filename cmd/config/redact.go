package config

import (
	"time"

	"github.com/slotlock/slotlock/jobs"
)

// Redacted returns the effective configuration as nested maps and lists
// (ready for slog or encoding/json), with every secret replaced by "***":
// redis.password (also when it came from password_file or the environment)
// and, inside each job's params, what jobs.RedactParams hides: the value of
// every key that looks like a credential (jobs.LooksSecret: password,
// token, *-key, Authorization, ..., at any depth, e.g. exec env), every
// value that looks like one (Bearer ..., AccountKey=...), the user info and
// query values of every URL (an http job's show_query parameters stay
// visible) and an http job's header values other than the harmless ones.
// A secret in a URL path or a bare command-line argument cannot be
// recognised.
func (c *Config) Redacted() any {
	dur := func(d time.Duration) string { return d.String() }
	secret := func(s string) string {
		if s == "" {
			return ""
		}
		return jobs.Redacted
	}
	nodes := make([]any, len(c.Redis.Nodes))
	for i, n := range c.Redis.Nodes {
		nodes[i] = map[string]any{"addr": n.Addr}
	}
	jobList := make([]any, len(c.Jobs))
	for i, j := range c.Jobs {
		params := jobs.RedactParams(j.Runner, j.Params)
		if params == nil {
			params = map[string]any{}
		}
		jobList[i] = map[string]any{
			"name":     j.Name,
			"schedule": j.Spec,
			"timezone": j.Timezone,
			"plugin":   j.Plugin,
			"enabled":  j.Enabled,
			"timeout":  dur(j.Timeout),
			"overlap":  j.Overlap,
			"misfire":  map[string]any{"policy": j.Misfire.Policy, "deadline": dur(j.Misfire.Deadline)},
			"retry":    map[string]any{"max": j.Retry.Max, "backoff": dur(j.Retry.Backoff)},
			"params":   params,
		}
	}
	return map[string]any{
		"log":  map[string]any{"level": c.Log.Level, "format": c.Log.Format},
		"http": map[string]any{"addr": c.HTTP.Addr},
		"redis": map[string]any{
			"nodes":           nodes,
			"username":        c.Redis.Username,
			"password":        secret(c.Redis.Password),
			"password_file":   c.Redis.PasswordFile,
			"tls":             c.Redis.TLS,
			"allow_insecure":  c.Redis.AllowInsecure,
			"key_prefix":      c.Redis.KeyPrefix,
			"auth":            c.Redis.Auth,
			"entra_client_id": c.Redis.EntraClientID,
			"dial_timeout":    dur(c.Redis.DialTimeout),
			"op_timeout":      dur(c.Redis.OpTimeout),
		},
		"lock":     map[string]any{"ttl": dur(c.Lock.TTL), "max_clock_skew": dur(c.Lock.MaxClockSkew)},
		"shutdown": map[string]any{"grace": dur(c.Shutdown.Grace)},
		"jobs":     jobList,
	}
}
