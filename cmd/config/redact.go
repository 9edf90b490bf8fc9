package config

import "reflect"

// Redacted returns the effective configuration as nested maps and lists
// (ready for slog or encoding/json), every setting shown as its redact tag
// says (tree.go): secrets such as redis.password (also when it came from
// password_file or the environment) replaced by "***", and each job's
// params shown as jobs.RedactParams shows them: the value of every key that
// looks like a credential (jobs.LooksSecret: password, token, *-key,
// Authorization, ..., at any depth, e.g. exec env), every value that looks
// like one (Bearer ..., AccountKey=...), the user info and query values of
// every URL (an http job's show_query parameters stay visible) and an http
// job's header values other than the harmless ones. A secret in a URL path
// or a bare command-line argument cannot be recognised.
func (c *Config) Redacted() any {
	return tree(reflect.ValueOf(*c), true)
}
