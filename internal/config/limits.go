package config

import (
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"
)

// Ceilings on what a configuration may ask for. Each bounds what a value
// costs when it is wrong: a lease that outlives its dead holder, a retry
// loop that spins, a key the stores carry on every command. They are
// listed in docs/configuration.md ("Limits").
const (
	// MaxLockTTL: a replica that dies holding a lease keeps its job
	// locked this long.
	MaxLockTTL = time.Hour
	// MaxDialTimeout and MaxOpTimeout: a node that does not answer holds
	// every claim up this long.
	MaxDialTimeout = time.Minute
	MaxOpTimeout   = 10 * time.Second
	// MaxShutdownGrace: what SIGTERM waits for at most.
	MaxShutdownGrace = time.Hour
	// MaxJobTimeout: a week; a run is canceled after its timeout.
	MaxJobTimeout = 7 * 24 * time.Hour
	// MaxRetries and the backoff's range: retries stay a handful of
	// attempts, each a real wait, not a spin.
	MaxRetries = 100
	MinBackoff = 10 * time.Millisecond
	MaxBackoff = time.Hour
	// MaxKeyPrefix: the prefix starts every key on every node.
	MaxKeyPrefix = 64
	// maxEcho is how much of a refused value (or a job name) an error
	// quotes: enough to recognise it, not a wall of text.
	maxEcho = 80
)

// keyPrefixForm is the form of redis.key_prefix: it starts every key in
// the stores, so it stays printable and brace-free (braces would break
// the per-job hash tag).
var keyPrefixForm = regexp.MustCompile(`^[A-Za-z0-9._:/-]+$`)

// echo quotes s for an error, cut to maxEcho bytes (on a rune boundary)
// with the full length said.
func echo(s string) string {
	if len(s) <= maxEcho {
		return strconv.Quote(s)
	}
	cut := maxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}
