package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The bodies: a generic JSON document (Message), and presets that Slack
// (an incoming webhook: text plus blocks) and Microsoft Teams (an
// incoming webhook or workflow: a MessageCard) display as they are.

// Message is the generic JSON body (format json).
type Message struct {
	Job        string    `json:"job"`
	Slot       string    `json:"slot"`
	RunID      string    `json:"run_id,omitempty"`
	Event      string    `json:"event"`   // failed, missed, abandoned, recovered
	Outcome    string    `json:"outcome"` // the slot's history outcome
	Reason     string    `json:"reason,omitempty"`
	ErrorClass string    `json:"error_class,omitempty"`
	Replica    string    `json:"replica,omitempty"` // the replica that ran it (abandoned: the dead run's)
	Sender     string    `json:"sender"`            // the replica that wrote the outcome and sends this
	Time       time.Time `json:"time"`              // when the outcome was written
	Key        string    `json:"idempotency_key"`
}

func message(r Record) Message {
	return Message{Job: r.Job, Slot: r.Slot, RunID: r.RunID, Event: r.Event, Outcome: r.Outcome, Reason: r.Reason,
		ErrorClass: r.ErrorClass, Replica: r.Replica, Sender: r.Writer, Time: r.At, Key: r.Key}
}

// render is r's body in format f.
func render(f string, r Record) ([]byte, error) {
	switch f {
	case FormatJSON, "":
		return json.Marshal(message(r))
	case FormatSlack:
		return json.Marshal(slackBody(r))
	case FormatTeams:
		return json.Marshal(teamsBody(r))
	}
	return nil, fmt.Errorf("unknown format %q", f)
}

// summary is one line about r: "job nightly: slot 2026-11-29T10:00:05Z failed (error_class: exit)".
func summary(r Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "slotlock job %s: slot %s %s", r.Job, r.Slot, r.Event)
	if r.Event == EventRecovered {
		b.WriteString(" (it succeeded after a bad outcome)")
	} else if detail := detailOf(r); detail != "" {
		b.WriteString(" (" + detail + ")")
	}
	return b.String()
}

func detailOf(r Record) string {
	var parts []string
	if r.Reason != "" {
		parts = append(parts, "reason: "+r.Reason)
	}
	if r.ErrorClass != "" {
		parts = append(parts, "error_class: "+r.ErrorClass)
	}
	return strings.Join(parts, ", ")
}

// facts are the message's fields for a card, in a fixed order.
func facts(r Record) [][2]string {
	out := [][2]string{{"Job", r.Job}, {"Slot", r.Slot}, {"Event", r.Event}, {"Outcome", r.Outcome}}
	for _, f := range [][2]string{{"Reason", r.Reason}, {"Error class", r.ErrorClass}, {"Run id", r.RunID},
		{"Replica", r.Replica}, {"Sent by", r.Writer}} {
		if f[1] != "" {
			out = append(out, f)
		}
	}
	return out
}

// slackBody: text (the notification's fallback) and blocks (a header
// and the facts as fields).
func slackBody(r Record) map[string]any {
	var fields []map[string]any
	for _, f := range facts(r) {
		fields = append(fields, map[string]any{"type": "mrkdwn", "text": "*" + f[0] + "*\n" + slackEscape(f[1])})
	}
	return map[string]any{
		"text": slackEscape(summary(r)),
		"blocks": []map[string]any{
			{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": slackEscape(summary(r))}},
			{"type": "section", "fields": fields[:min(len(fields), 10)]}, // Slack takes at most 10 fields
		},
	}
}

// slackEscape escapes what Slack's mrkdwn reads as markup.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// teamsBody is a MessageCard: what Teams' incoming webhooks and the
// "post to a channel when a webhook request is received" workflow show.
func teamsBody(r Record) map[string]any {
	var fs []map[string]string
	for _, f := range facts(r) {
		fs = append(fs, map[string]string{"name": f[0], "value": f[1]})
	}
	color := "D13438" // red: failed, missed, abandoned
	if r.Event == EventRecovered {
		color = "2EB886"
	}
	return map[string]any{
		"@type": "MessageCard", "@context": "https://schema.org/extensions",
		"summary": summary(r), "themeColor": color, "title": summary(r),
		"sections": []map[string]any{{"facts": fs}},
	}
}
