package config

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/notify"
)

// NotifyTarget is one entry of the top-level notify list: a webhook the
// jobs' notify rules name (docs/notifications.md).
type NotifyTarget struct {
	Name    string  `yaml:"name" redact:"show"`
	Webhook Webhook `yaml:"webhook"`
}

// Webhook is where and how a target is told. The URL and the header
// values are secrets: the dump, errors and logs never show them.
type Webhook struct {
	URL     string            `yaml:"url" redact:"secret"`
	Format  string            `yaml:"format" redact:"show"` // json | slack | teams
	Headers map[string]string `yaml:"headers" redact:"secret"`
	Timeout time.Duration     `yaml:"timeout" redact:"show"` // one try
	Retry   Retry             `yaml:"retry"`                 // tries after the first, waits doubling
}

// JobNotify is one entry of a job's notify list: who is told of which of
// its events.
type JobNotify struct {
	To string   `yaml:"to" redact:"show"`
	On []string `yaml:"on" redact:"show"` // failed, missed, abandoned, recovered
}

// Bounds of a webhook's settings: a notification that takes longer than
// a few minutes in all is late news.
const (
	maxNotifyTimeout = time.Minute
	maxNotifyRetries = 10
	maxNotifyBackoff = time.Minute
)

// notifyDefaults fills in the defaults of each webhook of the raw notify
// list before it is decoded (the list's entries have no defaults of
// their own in Defaults): format json, timeout 10s, retry 4 × 1s. A key
// written is left as written, so that retry.max: 0 means no retry.
func notifyDefaults(targets any) {
	list, _ := targets.([]any)
	for _, t := range list {
		m, _ := t.(map[string]any)
		wh, ok := m["webhook"].(map[string]any)
		if !ok {
			continue
		}
		setDefault(wh, "format", notify.FormatJSON)
		setDefault(wh, "timeout", notify.DefaultTimeout.String())
		r, ok := wh["retry"].(map[string]any)
		if !ok && wh["retry"] == nil {
			r = map[string]any{}
			wh["retry"] = r
		}
		if r != nil {
			setDefault(r, "max", notify.DefaultRetries)
			setDefault(r, "backoff", notify.DefaultBackoff.String())
		}
	}
}

func setDefault(m map[string]any, key string, v any) {
	if _, ok := m[key]; !ok {
		m[key] = v
	}
}

// NotifyTarget returns the target named name.
func (c *Config) NotifyTarget(name string) (*NotifyTarget, bool) {
	for i := range c.Notify {
		if c.Notify[i].Name == name {
			return &c.Notify[i], true
		}
	}
	return nil, false
}

// validateNotify checks the notify targets. No error quotes a URL or a
// header value.
func (l *loader) validateNotify(c *Config) {
	seen := map[string]int{}
	for i := range c.Notify {
		t := &c.Notify[i]
		base := "notify[" + strconv.Itoa(i) + "]"
		if err := scheduler.CheckName(t.Name); err != nil {
			l.addValue(base+".name", t.Name, err)
		} else if first, dup := seen[t.Name]; dup {
			l.addValue(base+".name", t.Name, fmt.Errorf("duplicate: notify[%d] has the same name", first))
		} else {
			seen[t.Name] = i
		}
		w := &t.Webhook
		if err := checkWebhookURL(w.URL); err != nil {
			l.add(base+".webhook.url", err)
		}
		oneOf(l, base+".webhook.format", w.Format, notify.Formats...)
		for name, v := range w.Headers {
			if name == "" || strings.ContainsAny(name, " \t\r\n:") {
				l.addf(base+".webhook.headers", "%q is not a header name", name)
			} else if strings.ContainsAny(v, "\r\n") {
				l.addf(base+".webhook.headers", "the value of %s holds a line break (value hidden)", name)
			}
		}
		positive(l, base+".webhook.timeout", w.Timeout)
		atMost(l, base+".webhook.timeout", w.Timeout, maxNotifyTimeout, "one try of a notification")
		if w.Retry.Max < 0 || w.Retry.Max > maxNotifyRetries {
			l.addf(base+".webhook.retry.max", "must be between 0 and %d, got %d", maxNotifyRetries, w.Retry.Max)
		}
		positive(l, base+".webhook.retry.backoff", w.Retry.Backoff)
		atMost(l, base+".webhook.retry.backoff", w.Retry.Backoff, maxNotifyBackoff, "the first wait; later ones double")
	}
}

// checkWebhookURL wants an absolute http or https URL; its errors never
// quote it (it may carry the secret).
func checkWebhookURL(raw string) error {
	if raw == "" {
		return errors.New("required: the webhook's http(s) URL")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL (value hidden: a webhook URL may carry a secret)")
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return errors.New("want an absolute http:// or https:// URL (value hidden: a webhook URL may carry a secret)")
	}
	return nil
}

// validateJobNotify checks a job's notify rules: each names a target and
// events from the list.
func (l *loader) validateJobNotify(c *Config, j *Job, add func(field, value string, err error)) {
	for k, r := range j.Notify {
		p := "notify[" + strconv.Itoa(k) + "]"
		if r.To == "" {
			add(p+".to", "", errors.New("required: the name of an entry of notify"))
		} else if _, ok := c.NotifyTarget(r.To); !ok {
			var names []string
			for _, t := range c.Notify {
				names = append(names, t.Name)
			}
			if len(names) == 0 {
				add(p+".to", r.To, errors.New("not defined: the top-level notify list is empty"))
			} else {
				add(p+".to", r.To, fmt.Errorf("not defined; notify targets: %s", strings.Join(names, ", ")))
			}
		}
		if len(r.On) == 0 {
			add(p+".on", "", fmt.Errorf("required: a list of events from %s", strings.Join(notify.Events, ", ")))
		}
		for m, ev := range r.On {
			if !slices.Contains(notify.Events, ev) {
				add(p+".on["+strconv.Itoa(m)+"]", ev, want(ev, notify.Events...))
			}
		}
	}
}

// NotifyTargets returns the targets for notify.Config.
func (c *Config) NotifyTargets() []notify.Target {
	out := make([]notify.Target, len(c.Notify))
	for i, t := range c.Notify {
		retries := t.Webhook.Retry.Max
		if retries == 0 {
			retries = -1 // notify.Target's zero is its default; the file's 0 means none
		}
		out[i] = notify.Target{Name: t.Name, URL: t.Webhook.URL, Format: t.Webhook.Format, Headers: t.Webhook.Headers,
			Timeout: t.Webhook.Timeout, Retries: retries, Backoff: t.Webhook.Retry.Backoff}
	}
	return out
}

// notifyRules are a job's rules for the scheduler (nil: none).
func notifyRules(rs []JobNotify) []scheduler.NotifyRule {
	if len(rs) == 0 {
		return nil
	}
	out := make([]scheduler.NotifyRule, len(rs))
	for i, r := range rs {
		out[i] = scheduler.NotifyRule{To: r.To, On: slices.Clone(r.On)}
	}
	return out
}

// notifySecrets are the values of the targets no error text may show.
func (c *Config) notifySecrets() []string {
	var out []string
	for _, t := range c.Notify {
		out = append(out, t.Webhook.URL)
		for _, v := range t.Webhook.Headers {
			out = append(out, v)
		}
	}
	return out
}
