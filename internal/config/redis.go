package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slotlock/slotlock/locking/redlock"
)

// Redis auth modes.
const (
	AuthPassword = "password" // username/password (or none)
	AuthEntra    = "entra"    // Microsoft Entra ID tokens from a managed identity
)

// Redis configures the Redlock nodes. No nodes means in-process locks.
type Redis struct {
	Nodes        []Node `yaml:"nodes"`
	Username     string `yaml:"username" redact:"show"`
	Password     string `yaml:"password" redact:"secret"`    // after Load: also the contents of PasswordFile
	PasswordFile string `yaml:"password_file" redact:"show"` // read by Load, trailing newline trimmed
	TLS          bool   `yaml:"tls" redact:"show"`
	// AllowInsecure accepts a password sent to the nodes without TLS (an
	// error otherwise); a warning is logged at start.
	AllowInsecure bool   `yaml:"allow_insecure" redact:"show"`
	KeyPrefix     string `yaml:"key_prefix" redact:"show"`
	// Auth is AuthPassword (default) or AuthEntra.
	Auth string `yaml:"auth" redact:"show"`
	// EntraClientID is the client id of the user-assigned managed identity
	// used with AuthEntra ("" = the system-assigned identity / default
	// credential chain).
	EntraClientID string        `yaml:"entra_client_id" redact:"show"`
	DialTimeout   time.Duration `yaml:"dial_timeout" redact:"show"`
	OpTimeout     time.Duration `yaml:"op_timeout" redact:"show"`
}

// Node is one independent Redis endpoint of the quorum.
type Node struct {
	Addr string `yaml:"addr" redact:"show"` // host:port
}

func defaultRedis() Redis {
	return Redis{
		KeyPrefix:   redlock.DefaultKeyPrefix,
		Auth:        AuthPassword,
		DialTimeout: redlock.DefaultDialTimeout,
		OpTimeout:   redlock.DefaultOpTimeout,
	}
}

func (l *loader) validateRedis(c *Config) {
	r := &c.Redis
	l.validateNodes(r.Nodes)
	l.validateAuth(r)
	switch {
	case r.KeyPrefix == "":
		l.add("redis.key_prefix", errors.New("must not be empty"))
	case strings.ContainsAny(r.KeyPrefix, "{} \t\r\n"):
		l.addValue("redis.key_prefix", r.KeyPrefix, errors.New("must not contain braces or spaces (braces would break the per-job hash tag)"))
	case len(r.KeyPrefix) > MaxKeyPrefix:
		l.addValue("redis.key_prefix", r.KeyPrefix, fmt.Errorf("too long: at most %d characters, got %d (it starts every key on every node)",
			MaxKeyPrefix, len(r.KeyPrefix)))
	case !keyPrefixForm.MatchString(r.KeyPrefix):
		l.addValue("redis.key_prefix", r.KeyPrefix, errors.New("may hold only letters, digits and . _ : / -"))
	}
	positive(l, "redis.dial_timeout", r.DialTimeout)
	atMost(l, "redis.dial_timeout", r.DialTimeout, MaxDialTimeout, "a node that does not answer holds every claim up this long")
	positive(l, "redis.op_timeout", r.OpTimeout)
	atMost(l, "redis.op_timeout", r.OpTimeout, MaxOpTimeout, "a node that does not answer holds every claim up this long")
}

func (l *loader) validateNodes(nodes []Node) {
	seen := map[string]int{}
	for i, n := range nodes {
		p := fmt.Sprintf("redis.nodes[%d].addr", i)
		if n.Addr == "" {
			l.add(p, errors.New("required (host:port)"))
			continue
		}
		if valueHidden(p, n.Addr) {
			l.add(p, errConnectionString)
			continue
		}
		if err := checkAddr(n.Addr, false); err != nil {
			l.addValue(p, n.Addr, err)
			continue
		}
		if first, dup := seen[n.Addr]; dup {
			l.addValue(p, n.Addr, fmt.Errorf("duplicate of redis.nodes[%d]: each node must be an independent Redis", first))
			continue
		}
		seen[n.Addr] = i
	}
}

// validateAuth checks auth and what goes with it: the password, TLS and
// the Entra ID client id.
func (l *loader) validateAuth(r *Redis) {
	if err := want(r.Auth, AuthPassword, AuthEntra); err != nil {
		l.addValue("redis.auth", r.Auth, err)
	}
	switch r.Auth {
	case AuthPassword:
		if r.EntraClientID != "" {
			l.add("redis.entra_client_id", errors.New("only used with redis.auth: entra"))
		}
	case AuthEntra:
		if r.Password != "" && r.PasswordFile == "" {
			l.add("redis.password", errors.New("not used with redis.auth: entra (tokens replace the password)"))
		}
		if r.PasswordFile != "" {
			l.add("redis.password_file", errors.New("not used with redis.auth: entra (tokens replace the password)"))
		}
		if !r.TLS {
			l.add("redis.tls", errors.New("must be true with redis.auth: entra (tokens must not cross the network in clear text)"))
		}
		if len(r.Nodes) == 0 {
			l.add("redis.auth", errors.New("entra needs redis.nodes"))
		}
	}
	if r.Auth == AuthPassword && r.Password != "" && !r.TLS && len(r.Nodes) > 0 && !r.AllowInsecure {
		src := "redis.password"
		if r.PasswordFile != "" {
			src = "redis.password_file"
		}
		l.add("redis.tls", fmt.Errorf("must be true when a password is set (%s): without TLS the password and every lock "+
			"cross the network in clear text; set redis.allow_insecure: true to accept that", src))
	}
}
