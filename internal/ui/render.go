package ui

import (
	"bytes"
	"io"
	"strconv"
)

// The page's markup, written by hand over a pageView: every value passes
// through the escaper of the place it goes (escape.go) — w.text for an
// element's text and a quoted attribute, w.url for an href — and
// everything else is this file's constant markup. The golden pages in
// testdata hold what it writes for a rich, an idle, an empty and a failed
// fleet (TestPageAsTheGoldenPages).

// pageWriter is a page being written.
type pageWriter struct{ bytes.Buffer }

// raw writes markup as it is.
func (w *pageWriter) raw(parts ...string) {
	for _, p := range parts {
		w.WriteString(p)
	}
}

// text writes s escaped as an element's text or a quoted attribute value.
func (w *pageWriter) text(s string) { escapeHTML(&w.Buffer, s) }

// url writes s escaped as an href's value.
func (w *pageWriter) url(s string) { escapeURL(&w.Buffer, s) }

func (w *pageWriter) int(n int) { w.WriteString(strconv.Itoa(n)) }

// render writes the page.
func render(out io.Writer, v pageView) error {
	var w pageWriter
	w.header(v)
	w.jobs(v)
	w.raw("\n")
	if tv := v.Timeline; tv != nil {
		w.timeline(tv)
		w.raw("\n")
	}
	w.replicas(v)
	w.controls(v)
	w.raw("</main>\n<script src=\"static/refresh.js\"></script>\n</body>\n</html>\n")
	_, err := out.Write(w.Bytes())
	return err
}

// header is the document's head, the page's header with its refresh
// link, the error if any and the jobs filter form.
func (w *pageWriter) header(v pageView) {
	w.raw(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>slotlock status</title>
<link rel="stylesheet" href="static/style.css">
</head>
<body data-refresh="`)
	w.int(v.Refresh)
	w.raw("\">\n<header>\n  <h1>slotlock status</h1>\n  <p class=\"meta\">at <time id=\"at\">")
	w.text(v.At)
	w.raw("</time> · job definitions <code>")
	w.text(v.Hash)
	w.raw("</code> ·\n    ")
	if v.Refresh != 0 {
		w.raw("refreshes every ")
		w.int(v.Refresh)
		w.raw(`s (<a href="`)
		w.url(v.RefreshOff)
		w.raw(`">stop</a>)`)
	} else {
		w.raw(`<a href="`)
		w.url(v.RefreshOff)
		w.raw(`">refresh automatically</a>`)
	}
	w.raw(" ·\n    read-only; JSON at <a href=\"api/v1/jobs\">api/v1/jobs</a></p>\n</header>\n")
	if v.Error != "" {
		w.raw(`<p class="error" role="alert">`)
		w.text(v.Error)
		w.raw("</p>")
	}
	w.raw("\n<main>\n<section id=\"jobs\">\n  <h2>Jobs</h2>\n  <form method=\"get\" class=\"filter\">\n" +
		"    <label>job name contains <input type=\"search\" name=\"q\" value=\"")
	w.text(v.Query.Q)
	w.raw("\"></label>\n    ")
	w.hidden("job", v.Query.Job)
	w.raw("\n    ")
	w.hidden("since", v.Query.Since)
	w.raw("\n    ")
	if v.Query.NoRefresh {
		w.hidden("refresh", "0")
	}
	w.raw("\n    <button type=\"submit\">filter</button>\n    <span class=\"paging\">")
	w.text(v.jobsHeading())
	w.raw("\n      ")
	w.link(v.Prev, "← previous")
	w.raw("\n      ")
	w.link(v.Next, "next →")
	w.raw("</span>\n  </form>\n")
}

// hidden is the filter form's hidden input name=value; nothing for "".
func (w *pageWriter) hidden(name, value string) {
	if value == "" {
		return
	}
	w.raw(`<input type="hidden" name="`, name, `" value="`)
	w.text(value)
	w.raw(`">`)
}

// link is <a href="href">label</a>; nothing when href is "".
func (w *pageWriter) link(href, label string) {
	if href == "" {
		return
	}
	w.raw(`<a href="`)
	w.url(href)
	w.raw(`">`)
	w.text(label)
	w.raw("</a>")
}

// jobs is the jobs table.
func (w *pageWriter) jobs(v pageView) {
	w.raw("  <table class=\"jobs\">\n" +
		"    <thead><tr><th>job</th><th>schedule</th><th>next slot</th><th>paused</th><th>last outcome</th><th>running now</th></tr></thead>\n" +
		"    <tbody>\n    ")
	for i := range v.Jobs {
		w.jobRow(&v.Jobs[i])
	}
	w.raw("</tbody>\n  </table>\n</section>\n")
}

// jobRow is one row of the jobs table.
func (w *pageWriter) jobRow(j *jobRow) {
	w.raw(`<tr data-job="`)
	w.text(j.Name)
	w.raw(`"`)
	if j.Selected {
		w.raw(` class="selected"`)
	}
	w.raw(">\n      <td><a href=\"")
	w.url(j.Href)
	w.raw(`">`)
	w.text(j.Name)
	w.raw("</a>")
	if j.Disabled {
		w.raw(` <span class="tag">disabled</span>`)
	}
	w.raw("</td>\n      <td><code>")
	w.text(j.Schedule)
	w.raw(`</code> <span class="zone">`)
	w.text(j.Zone)
	w.raw("</span>")
	if j.Calendar != "" {
		w.raw("\n        <div class=\"calendar\">calendar <code>")
		w.text(j.Calendar)
		w.raw("</code> · next excluded ")
		w.text(j.NextExcluded)
		w.raw("</div>")
	}
	if j.Notify != "" {
		w.raw("\n        <div class=\"notify\">notify ")
		w.text(j.Notify)
		w.raw("</div>")
	}
	if j.Group != "" {
		w.raw("\n        <div class=\"group\">group <code>")
		w.text(j.Group)
		w.raw("</code></div>")
	}
	w.raw("</td>\n      <td title=\"")
	w.text(j.NextUTC)
	w.raw(` UTC">`)
	w.text(j.Next)
	w.raw("</td>\n      <td class=\"paused\">")
	if j.Paused != "" {
		w.raw(`<span class="tag s-paused">paused</span> `)
		w.text(j.Paused)
	} else {
		w.raw("no")
	}
	w.raw("</td>\n      <td>")
	if j.LastState != "" {
		w.raw(`<span class="dot `)
		w.text(j.LastClass)
		w.raw(`"></span> `)
	}
	w.text(j.LastText)
	w.raw("</td>\n      <td>")
	for _, r := range j.Running {
		w.raw("<div>")
		w.text(r)
		w.raw("</div>")
	}
	if len(j.Running) == 0 {
		w.raw("-")
	}
	w.raw("</td>\n    </tr>\n    ")
}

// replicas is the live replicas' table.
func (w *pageWriter) replicas(v pageView) {
	w.raw(`<section id="replicas">
  <h2>Live replicas</h2>
  <p class="meta">By their heartbeats: a process heard of within its last three beats (a replica restarted since shows once per process).</p>
  <table class="replicas">
    <thead><tr><th>replica</th><th>instance</th><th>version</th><th>job definitions</th><th>started</th><th>last seen</th><th>running</th><th>clock</th></tr></thead>
    <tbody>
    `)
	for _, r := range v.Replicas {
		w.raw("<tr")
		if r.Differs {
			w.raw(` class="differs"`)
		}
		w.raw(">\n      <td class=\"replica\">")
		w.text(r.Name)
		w.raw("</td><td><code>")
		w.text(r.Instance)
		w.raw("</code></td><td>")
		w.text(r.Version)
		w.raw("</td>\n      <td><code>")
		w.text(r.Hash)
		w.raw("</code>")
		if r.Differs {
			w.raw(` <span class="tag warn">differs from <code>`)
			w.text(v.Hash)
			w.raw("</code></span>")
		}
		w.raw("</td>\n      <td>")
		w.text(r.Started)
		w.raw("</td><td>")
		w.text(r.Seen)
		w.raw("</td><td>")
		w.int(r.Running)
		w.raw("</td><td>")
		w.text(r.Clock)
		w.raw("</td>\n    </tr>\n    ")
	}
	if len(v.Replicas) == 0 {
		w.raw("<tr><td colspan=\"8\">no replica alive</td></tr>\n    ")
	}
	w.raw("</tbody>\n  </table>\n</section>\n")
}

// controls is the control audit's table.
func (w *pageWriter) controls(v pageView) {
	w.raw(`<section id="controls">
  <h2>Control actions</h2>
  <p class="meta">Who triggered, paused, resumed or backfilled a job of this page in the last day: OS user, host and replica name of the command.</p>
  <table class="controls">
    <thead><tr><th>action</th><th>job</th><th>by</th><th>at</th><th>detail</th></tr></thead>
    <tbody>
    `)
	for _, c := range v.Controls {
		w.raw("<tr>\n      <td>")
		for i, cell := range []string{c.Action, c.Job, c.By, c.At, c.Detail} {
			if i > 0 {
				w.raw("</td><td>")
			}
			w.text(cell)
		}
		w.raw("</td>\n    </tr>\n    ")
	}
	if len(v.Controls) == 0 {
		w.raw("<tr><td colspan=\"5\">none</td></tr>\n    ")
	}
	w.raw("</tbody>\n  </table>\n</section>\n")
}
