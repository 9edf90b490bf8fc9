//go:build linux

package e2e

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The status page in a real browser (issue 16): three replicas, a job that
// succeeds, one that fails, one paused (with a hostile reason and author),
// and slots missed while every replica was down. Headless Chromium loads
// each job's timeline; every cell's outcome must be the slot's outcome in
// `slotlock history`, a cell's detail must show the slot's run, no
// injected script may have run, and a screenshot is saved in
// $SLOTLOCK_SCREENSHOT_DIR (default testdata/out, ignored by git; the
// README's picture is e2e/testdata/status-page.png, taken by this test).
//
//	go test ./e2e -run TestStatusPageBrowser -v
func TestStatusPageBrowser(t *testing.T) {
	requireSuite(t)
	browser := FindChromium(t)
	const hostile = `<script>document.body.dataset.pwned=1</script>`
	const hostileBy = `ops<img src=x onerror="document.body.dataset.pwned=1">`
	c := NewCluster(t, bins, Spec{ProxyNode: -1, UI: true, LogLevel: "info",
		ReconcileEvery: time.Second, ReconcileAfter: 3 * time.Second,
		Jobs: []JobDef{
			{Name: "report", Schedule: "*/2 * * * * *", Log: "report written"},
			{Name: "broken", Schedule: "*/2 * * * * *", Command: []string{"/bin/false"}},
			{Name: "paused", Schedule: "*/2 * * * * *", Log: "paused job ran"},
		}})
	// The window starts after the replicas did: the reconciler judges the
	// slots from the fleet's first start on (earlier ones stay unrecorded).
	start := NextSecond(c.StartAll("r1", "r2", "r3"))
	time.Sleep(7 * time.Second)
	if _, errOut, code := c.Slotlock(hostileBy, "pause", "--reason", hostile, "paused"); code != 0 {
		t.Fatalf("slotlock pause: exit %d\n%s", code, errOut)
	}
	time.Sleep(5 * time.Second)
	c.StopAll() // every replica down: slots missed
	time.Sleep(7 * time.Second)
	c.StartAll("r1", "r2", "r3")
	// The reconciler judges a slot some seconds after it (reconcile_after,
	// raised to cover lateness): wait for the missed entries.
	deadline := time.Now().Add(40 * time.Second)
	for len(history(t, c, "broken", start, "missed")) == 0 || len(history(t, c, "report", start, "missed")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no missed slot recorded within 40s of the replicas' return")
		}
		time.Sleep(time.Second)
	}
	time.Sleep(8 * time.Second) // the rest of the outage's slots judged too
	base := "http://" + c.Replica("r2").HTTPAddr + "/"
	since := start.UTC().Format(time.RFC3339)
	want := map[string]map[string]int{ // state (and reason) counts the timelines must show at least
		"report": {"succeeded": 3, "missed": 2}, // 7 s down: three slots or more
		"broken": {"failed": 3, "missed": 2},
		"paused": {"succeeded": 2, "skipped/paused": 3},
	}
	var failed cell
	for _, job := range []string{"report", "broken", "paused"} {
		dom := browser.DumpDOM(base + "?" + url.Values{"job": {job}, "since": {since}, "refresh": {"0"}}.Encode())
		checkNoScriptRan(t, dom)
		cells := parseCells(t, dom)
		hist := map[string]entry{}
		for _, e := range history(t, c, job, start, "") {
			hist[e.Slot] = e
		}
		counts := map[string]int{}
		for _, x := range cells {
			key := x.State
			if x.Reason == "paused" {
				key += "/paused"
			}
			counts[key]++
			e, recorded := hist[x.Slot]
			switch x.State {
			case "pending", "running", "unrecorded":
				at, _ := time.Parse(time.RFC3339, x.Slot)
				if recorded && time.Since(at) > 15*time.Second {
					t.Errorf("%s %s: the page shows %s, the history %s", job, x.Slot, x.State, e.Outcome)
				}
				if x.State == "unrecorded" {
					t.Errorf("%s %s: unrecorded in a window the reconciler judged", job, x.Slot)
				}
			default:
				if !recorded || e.Outcome != x.State || e.Reason != x.Reason {
					t.Errorf("%s %s: the page shows %s (%s), the history %+v", job, x.Slot, x.State, x.Reason, e)
				}
			}
			if x.State == "failed" && failed.Slot == "" {
				failed = x
			}
		}
		for k, n := range want[job] {
			if counts[k] < n {
				t.Errorf("%s: %d cells %s, want at least %d (all: %v)", job, counts[k], k, n, counts)
			}
		}
		if job == "paused" && counts["missed"] > 0 {
			t.Errorf("paused: the slots of the outage were paused, not missed: %v", counts)
		}
		t.Logf("%s: %d cells %v", job, len(cells), counts)
	}

	// A cell's detail: the failed run as the history has it.
	if failed.Slot == "" {
		t.Fatal("no failed cell")
	}
	detailURL := base + html.UnescapeString(failed.Href)
	dom := browser.DumpDOM(detailURL)
	e := history(t, c, "broken", start, "")
	var run entry
	for _, x := range e {
		if x.Slot == failed.Slot {
			run = x
		}
	}
	for _, want := range []string{
		`<div id="detail" data-slot="` + failed.Slot + `" data-state="failed">`,
		`<td data-field="replica">` + run.Replica + `</td>`,
		`<td data-field="run id">` + run.RunID + `</td>`,
		`<td data-field="error class">` + run.ErrorClass + `</td>`,
		`<td data-field="fencing token">`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the detail of %s lacks %s", failed.Slot, want)
		}
	}
	// The hostile pause reason and author are text in the jobs table.
	if !strings.Contains(dom, "&lt;script&gt;document.body.dataset.pwned=1&lt;/script&gt;") ||
		!strings.Contains(dom, `ops&lt;img src=x onerror="document.body.dataset.pwned=1"&gt;`) {
		t.Errorf("the pause reason and author are not shown as text")
	}
	checkNoScriptRan(t, dom)

	dir := os.Getenv("SLOTLOCK_SCREENSHOT_DIR")
	if dir == "" {
		dir = filepath.Join("testdata", "out")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot, _ := filepath.Abs(filepath.Join(dir, "status-page.png"))
	browser.Screenshot(strings.TrimSuffix(detailURL, "#detail"), shot)
	t.Logf("screenshot: %s", shot)
	c.StopAll()
}

// entry is a history entry as `slotlock history --json` prints it.
type entry struct {
	Slot, Outcome, Reason, Replica string
	RunID                          string `json:"run_id"`
	ErrorClass                     string `json:"error_class"`
}

func history(t *testing.T, c *Cluster, job string, since time.Time, outcome string) []entry {
	t.Helper()
	args := []string{"--json", "--limit", "1000", "--since", since.UTC().Format(time.RFC3339), job}
	if outcome != "" {
		args = append(args, "--outcome", outcome)
	}
	out, errOut, code := c.Slotlock("test", "history", args...)
	if code != 0 {
		t.Fatalf("slotlock history %s: exit %d\n%s", job, code, errOut)
	}
	var doc struct{ Entries []entry }
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("slotlock history %s: %v\n%s", job, err, out)
	}
	return doc.Entries
}

// cell is one timeline cell of the DOM.
type cell struct{ Class, Href, Slot, State, Reason string }

var cellRE = regexp.MustCompile(`<a class="c ([^"]*)" href="([^"]*)" title="[^"]*" data-slot="([^"]*)" data-state="([^"]*)"(?: data-reason="([^"]*)")?></a>`)

func parseCells(t *testing.T, dom string) []cell {
	t.Helper()
	var out []cell
	for _, m := range cellRE.FindAllStringSubmatch(dom, -1) {
		out = append(out, cell{Class: m[1], Href: m[2], Slot: m[3], State: m[4], Reason: m[5]})
	}
	if len(out) == 0 {
		t.Fatalf("no timeline cell in the page:\n%s", dom)
	}
	if n := strings.Count(dom, `data-slot=`); n < len(out) {
		t.Fatalf("%d cells parsed of %d", len(out), n)
	}
	return out
}

// checkNoScriptRan fails when the DOM shows an injected script's work:
// the flag it sets on <body>, or a script element other than the page's.
func checkNoScriptRan(t *testing.T, dom string) {
	t.Helper()
	if strings.Contains(dom, "data-pwned") {
		t.Error("an injected script ran: <body> has data-pwned")
	}
	if n := strings.Count(dom, "<script"); n != 1 {
		t.Errorf("%d script elements in the DOM, want the page's one", n)
	}
	if strings.Contains(dom, "<img") {
		t.Error("an injected <img> element is in the DOM")
	}
}

// The status page answers a person at once (issue 36): three replicas
// running a job every second, nothing else asking for the page. Headless
// Chromium loads the page, a job's timeline and the JSON API — each with
// the stylesheet and script the page names — through a recording proxy
// in front of replica r2, and then a script asks the slots API once a
// second, as `while sleep 1; do curl …; done` does. No request may be
// refused (429, 503) and none may wait for the quiet part of a second:
// an answer that did says so in its Server-Timing header (`quiet`), so
// the check does not depend on how fast this host answers; the time each
// answer took, from the proxy's receipt of the request to the end of the
// answer, is logged.
//
//	go test ./e2e -run TestStatusPageAtOnce -v
func TestStatusPageAtOnce(t *testing.T) {
	requireSuite(t)
	browser := FindChromium(t)
	c := NewCluster(t, bins, Spec{ProxyNode: -1, UI: true, LogLevel: "info",
		Jobs: []JobDef{{Name: "beat", Schedule: "* * * * * *", Log: "beat"}}})
	c.StartAll("r1", "r2", "r3")
	target := &url.URL{Scheme: "http", Host: c.Replica("r2").HTTPAddr}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(target.String() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("r2 not ready within 20 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(4 * time.Second) // some slots to show

	rec := &answerLog{}
	proxy := httptest.NewServer(rec.wrap(httputil.NewSingleHostReverseProxy(target)))
	defer proxy.Close()
	base := proxy.URL + "/"

	dom := browser.DumpDOM(base + "?refresh=0")
	if !strings.Contains(dom, `<section id="controls">`) {
		t.Errorf("the page did not load:\n%s", dom)
	}
	dom = browser.DumpDOM(base + "?" + url.Values{"job": {"beat"}, "since": {"1m"}, "refresh": {"0"}}.Encode())
	checkNoScriptRan(t, dom)
	if cells := parseCells(t, dom); len(cells) < 30 {
		t.Errorf("the timeline of the last minute has %d cells", len(cells))
	}
	for _, api := range []string{"api/v1/jobs", "api/v1/jobs/beat/slots?since=1m"} {
		if dom := browser.DumpDOM(base + api); !strings.Contains(dom, `"beat"`) {
			t.Errorf("%s: no job in the answer:\n%s", api, dom)
		}
	}
	for _, path := range []string{"/", "/static/style.css", "/static/refresh.js", "/api/v1/jobs/beat/slots"} {
		if rec.count(path) == 0 {
			t.Errorf("the browser never asked for %s", path)
		}
	}

	// A script asking once a second.
	client := &http.Client{Timeout: 5 * time.Second}
	for range 10 {
		resp, err := client.Get(base + "api/v1/jobs/beat/slots?since=10m")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		time.Sleep(time.Second)
	}

	for _, a := range rec.all() {
		t.Logf("%s: %d in %v", a.path, a.code, a.took)
		if a.gone {
			continue // the browser, done with the page, dropped it (a favicon)
		}
		if a.code == http.StatusTooManyRequests || a.code == http.StatusServiceUnavailable || a.code >= 500 {
			t.Errorf("%s: answered %d", a.path, a.code)
		}
		if a.quiet != "" {
			t.Errorf("%s: answered %d after %v, having waited for the quiet phase (Server-Timing %s)", a.path, a.code, a.took, a.quiet)
		}
	}
	t.Logf("%d answers, slowest %v", len(rec.all()), rec.slowest())
	c.StopAll()
}

// answerLog records each request a handler answered: its path, code and
// how long it took, to the end of the body.
type answerLog struct {
	mu      sync.Mutex
	answers []answered
}

type answered struct {
	path  string
	code  int
	took  time.Duration
	gone  bool   // the client went away before the answer was done
	quiet string // its Server-Timing entry for a wait for the quiet phase, "" none
}

func (l *answerLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		cw := &codeWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(cw, r)
		l.mu.Lock()
		l.answers = append(l.answers, answered{path: r.URL.Path, code: cw.code, took: time.Since(start), gone: r.Context().Err() != nil, quiet: quietEntry(cw.Header().Values("Server-Timing"))})
		l.mu.Unlock()
	})
}

// quietEntry is the Server-Timing entry that says an answer waited for
// the quiet phase (internal/ui), "" when none does.
func quietEntry(timings []string) string {
	for _, v := range timings {
		for e := range strings.SplitSeq(v, ",") {
			if e = strings.TrimSpace(e); e == "quiet" || strings.HasPrefix(e, "quiet;") {
				return e
			}
		}
	}
	return ""
}

func (l *answerLog) all() []answered {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.answers)
}

func (l *answerLog) count(path string) int {
	n := 0
	for _, a := range l.all() {
		if a.path == path {
			n++
		}
	}
	return n
}

func (l *answerLog) slowest() time.Duration {
	var d time.Duration
	for _, a := range l.all() {
		if !a.gone {
			d = max(d, a.took)
		}
	}
	return d
}

// codeWriter keeps the status code written through it.
type codeWriter struct {
	http.ResponseWriter
	code int
}

func (w *codeWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}
