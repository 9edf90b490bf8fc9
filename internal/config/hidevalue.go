package config

import (
	"errors"
	"strings"

	"github.com/slotlock/slotlock/jobs"
)

// A config error quotes the offending value so the operator can find it,
// except where the value may be a credential: under a secret-bearing key
// (redis.password, redis.username: a user name is half a credential), or
// a value that carries one by its shape. The shape that matters most is a
// Redis address pasted as a connection string: Azure's
// "host:6380,password=KEY,ssl=True" or a URL "redis://user:pw@host:6380",
// given to SLOTLOCK_REDIS__NODES; the error must not put KEY on stderr
// (and in config.rejected on every hot reload).

// secretKeys are the setting paths whose values errors never show.
var secretKeys = map[string]bool{"redis.password": true, "redis.username": true}

// valueHidden reports whether an error about the value at path must not
// quote it.
func valueHidden(path, value string) bool {
	if secretKeys[path] {
		return true
	}
	lv := strings.ToLower(value)
	if strings.HasPrefix(path, "redis.") && strings.Contains(value, "@") { // user:pw@host, not "@daily"
		return true
	}
	return strings.Contains(lv, "password=") || strings.Contains(lv, "pwd=") ||
		jobs.ValueLooksSecret(value) || jobs.MaskValue(value) != value
}

// errConnectionString is the error for a Redis address that is a
// connection string or carries a credential.
var errConnectionString = errors.New("want host:port; this looks like a connection string or URL carrying a credential " +
	"(value hidden): give only host:port here, and the password in redis.password, redis.password_file or SLOTLOCK_REDIS__PASSWORD")

// shownValue is value, or "" when an error must not quote it.
func shownValue(path, value string) string {
	if valueHidden(path, value) {
		return ""
	}
	return value
}
