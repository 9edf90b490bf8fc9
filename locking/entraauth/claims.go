package entraauth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9/auth"
)

// ObjectID returns the "oid" claim of a JWT access token: the object id of
// the identity, which Azure Managed Redis takes as the Redis username. The
// signature is not checked (the server does that); only the payload is read.
func ObjectID(token string) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", errors.New("entraauth: token is not a JWT (want 3 dot-separated parts)")
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return "", fmt.Errorf("entraauth: token payload: %w", err)
	}
	var claims struct {
		OID string `json:"oid"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "", fmt.Errorf("entraauth: token claims: %w", err)
	}
	if claims.OID == "" {
		return "", errors.New(`entraauth: token has no "oid" claim; set the username explicitly`)
	}
	return claims.OID, nil
}

// credentials is one (username, token) pair handed to go-redis. It is a
// comparable value so a refresh that returns the held token is recognized.
type credentials struct{ username, password string }

var _ auth.Credentials = credentials{}

func (c credentials) BasicAuth() (string, string) { return c.username, c.password }

// RawCredentials returns the token (the username is derived from it).
func (c credentials) RawCredentials() string { return c.password }

// String keeps the token out of logs.
func (c credentials) String() string { return "entra(" + c.username + ", ***)" }
