package config

import "reflect"

// Redacted returns the effective configuration as nested maps and lists
// (ready for slog or encoding/json), every setting shown as its redact tag
// says (tree.go): secrets such as redis.password (also when it came from
// password_file or the environment) replaced by "***", and each job's
// params shown as jobs.RedactParams shows them: first by structure, the
// values the plugin declares secret-bearing (jobs.SecretParams: every exec
// env value and argument after the program, an http body and header
// values other than the harmless ones) unless the job's allow-list shows
// them (show_env, show_args, show_body); then by name and shape, the value
// of every key that looks like a credential (jobs.LooksSecret), every
// value that looks like one (Bearer ..., AccountKey=...) and the user info
// and query values of every URL (an http job's show_query parameters stay
// visible). A secret in a URL path cannot be recognised.
func (c *Config) Redacted() any {
	return tree(reflect.ValueOf(*c), true)
}
