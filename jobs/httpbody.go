package jobs

import (
	"encoding/json"
	"net/url"
	"strings"
)

// bodySecrets returns the values to scrub for an http body: the body
// whole, and, since a receiver may echo parts of it, every string in it
// when it is JSON, every value when it is a form ("a=1&password=x").
func bodySecrets(body string) []string {
	if body == "" {
		return nil
	}
	out := []string{body}
	var v any
	if err := json.Unmarshal([]byte(body), &v); err == nil {
		collectStrings(v, &out)
		return out
	}
	if strings.Contains(body, "=") && !strings.ContainsAny(body, " \n") {
		if q, err := url.ParseQuery(body); err == nil {
			for _, vs := range q {
				out = append(out, vs...)
			}
		}
	}
	return out
}
