package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
)

// DefinitionsHash identifies the job definitions: the first 12 hex digits
// of the SHA-256 of the jobs section as the startup line shows it
// (Redacted: a secret in a plugin's params never feeds the hash, so the
// hash cannot be used to guess it). Replicas that run the same jobs show
// the same hash in their heartbeats, `slotlock status` and
// slotlock_config_info; a deploy that changes a job changes it.
func (c *Config) DefinitionsHash() string {
	b, _ := json.Marshal(tree(reflect.ValueOf(c.Jobs), true)) // maps, strings and numbers: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}
