package jobs

// What the http plugin keeps secret: credentials never sent over plain
// http://, the values its lines and errors must not show, and the params
// its configuration dump hides.

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// credentialHeaders always carry credentials.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie"}

// checkInsecure refuses credentials over plain http:// unless
// allow_insecure: they would cross the network in clear text.
func checkInsecure(p httpParams) error {
	u, err := url.Parse(p.URL)
	if err != nil || u.Scheme != "http" || p.AllowInsecure {
		return nil
	}
	var what []string
	if u.User != nil {
		what = append(what, "the URL's user info")
	}
	for k := range p.Headers {
		ck := http.CanonicalHeaderKey(k)
		if slices.Contains(credentialHeaders, ck) || slices.ContainsFunc(p.SecretHeaders, func(s string) bool {
			return http.CanonicalHeaderKey(s) == ck
		}) {
			what = append(what, "header "+ck)
		}
	}
	if len(what) == 0 {
		return nil
	}
	slices.Sort(what)
	return fmt.Errorf("url: credentials (%s) would be sent over plain http:// in clear text: use https://, "+
		"or set params.allow_insecure: true to accept that", strings.Join(what, ", "))
}

// httpSecrets lists the configured values that must never be logged: the
// URL's user info, its query values not named in show_query (raw and
// decoded), and the header values that are not shown.
func httpSecrets(p httpParams) []string {
	var out []string
	if u, err := url.Parse(p.URL); err == nil {
		if u.User != nil {
			pw, _ := u.User.Password()
			out = append(out, u.User.Username(), pw)
		}
		for _, part := range strings.Split(u.RawQuery, "&") {
			k, v, _ := strings.Cut(part, "=")
			if name, err := url.QueryUnescape(k); err == nil && slices.Contains(p.ShowQuery, name) {
				continue
			}
			out = append(out, v)
			if dv, err := url.QueryUnescape(v); err == nil {
				out = append(out, dv)
			}
		}
	}
	if !p.ShowBody {
		out = append(out, bodySecrets(p.Body)...)
	}
	for k, v := range p.Headers {
		if !headerShown(k) {
			out = append(out, v)
			if _, cred, ok := strings.Cut(v, " "); ok { // "Bearer <token>"
				out = append(out, cred)
			}
		}
	}
	return out
}

// SecretParams hides the body (unless show_body) and every header value
// that is not a harmless one (headerShown).
func (j *httpJob) SecretParams() []ParamPath {
	var out []ParamPath
	if !j.p.ShowBody {
		out = append(out, ParamPath{"body"})
	}
	for k := range j.p.Headers {
		if !headerShown(k) {
			out = append(out, ParamPath{"headers", k})
		}
	}
	return out
}

// RedactParams shows the params in the configuration dump as the log lines
// show them: URLs masked except the show_query parameters, header values
// hidden except the harmless ones.
func (j *httpJob) RedactParams(params map[string]any) map[string]any {
	out := RedactMap(params, j.p.ShowQuery...)
	if h, ok := out["headers"].(map[string]any); ok {
		for k, v := range h {
			if !headerShown(k) && v != nil {
				h[k] = Redacted
			}
		}
	}
	return out
}

// mask makes a text fit for a log line or an error: URLs masked, the
// configured secrets scrubbed.
func (j *httpJob) mask(text string) string {
	return j.scrub.String(text)
}

// maskErr is err with a masked message; errors.Is and errors.As still see
// the original.
func (j *httpJob) maskErr(err error) error {
	return &maskedError{msg: j.mask(err.Error()), err: err}
}

// maskURLError masks the URL inside a *url.Error (as url.Parse returns),
// so a factory error never carries a password or a query value.
func maskURLError(err error, show []string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: MaskURL(ue.URL, show...), Err: ue.Err}
	}
	return err
}
