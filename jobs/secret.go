package jobs

import "strings"

// Redacted is what secret values are replaced with in logs and in the
// redacted configuration.
const Redacted = "***"

// LooksSecret reports whether a header, parameter or environment name looks
// like it holds a credential, so its value must never be logged. It matches,
// case-insensitively: Authorization, Proxy-Authorization, Cookie,
// Set-Cookie, and names containing "token", "secret", "password", "passwd",
// "credential", "apikey", "api_key", "api-key", "signature", "private", or
// ending in "key" after a separator ("X-Api-Key", "access_key", "key").
// It errs on the side of hiding.
func LooksSecret(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case "authorization", "proxy-authorization", "cookie", "set-cookie", "key", "auth", "pass", "pwd":
		return true
	}
	for _, s := range []string{"token", "secret", "password", "passwd", "credential", "apikey", "api_key", "api-key", "signature", "private", "auth"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	for _, s := range []string{"-key", "_key", ".key"} {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// RedactMap returns a deep copy of m in which the value of every key that
// LooksSecret is replaced by Redacted, at any depth. m is not modified.
func RedactMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if LooksSecret(k) && v != nil {
			out[k] = Redacted
			continue
		}
		out[k] = redactValue(v)
	}
	return out
}

func redactValue(v any) any {
	switch x := normalize(v).(type) {
	case map[string]any:
		return RedactMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactValue(e)
		}
		return out
	default:
		return x
	}
}
