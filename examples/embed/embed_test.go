package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
)

// lines collects what the job reports, from any replica, one line each.
type lines chan string

func (l lines) Write(p []byte) (int, error) {
	select {
	case l <- strings.TrimSpace(string(p)):
	default: // the test has read what it needs
	}
	return len(p), nil
}

// next waits for the next reported line.
func (l lines) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-l:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no report within 10s")
		return ""
	}
}

// TestEmbeddedService runs two replicas of the example service over three
// real Redis servers: every slot is reported once, by one of them, with a
// growing fencing token; the service's own API triggers a run, and the
// ops endpoints answer on the service's mux.
func TestEmbeddedService(t *testing.T) {
	cluster := redistest.Start(t, 3)
	out := make(lines, 64)
	ctx, stop := context.WithCancel(context.Background())
	var addrs []string
	done := make(chan error, 2)
	for _, name := range []string{"svc-a", "svc-b"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, "http://"+ln.Addr().String())
		go func() { done <- serve(ctx, service{replica: name, nodes: cluster.Addrs(), ln: ln, out: out}) }()
	}

	slots := map[string]bool{}
	var last uint64
	for range 3 {
		var slot string
		var token uint64
		if _, err := fmt.Sscanf(out.next(t), "report %s token %d", &slot, &token); err != nil {
			t.Fatal(err)
		}
		if slots[slot] || token <= last {
			t.Fatalf("slot %s (token %d) reported twice or with a token not above %d", slot, token, last)
		}
		slots[slot], last = true, token
	}

	trigger(t, addrs[1]+"/report")
	for {
		if line := out.next(t); strings.HasPrefix(line, "report manual ") {
			break
		}
	}

	for path, want := range map[string]string{
		"/ops/healthz": "ok",
		"/ops/readyz":  "ready (3 of 3 lock nodes up, 0 down)",
		"/ops/metrics": `slotlock_runs_total{job="report",outcome="succeeded"}`,
		"/ops/":        "<html",
	} {
		resp, err := http.Get(addrs[0] + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s = %d, want 200 with %q; got %.200q", path, resp.StatusCode, want, body)
		}
	}

	stop()
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
}

// trigger posts to the service's own API until it runs the job. A 409 says
// a scheduled run of the job held its lease at that moment (the trigger
// never overlaps one): the every-second job leaves room a moment later.
func trigger(t *testing.T, url string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		resp, err := http.Post(url, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK && string(body) == "reported\n":
			return
		case resp.StatusCode == http.StatusConflict && strings.Contains(string(body), "another run of the job is going on") && attempt < 10:
			time.Sleep(100 * time.Millisecond)
		default:
			t.Fatalf("POST %s = %d %q (attempt %d)", url, resp.StatusCode, body, attempt)
		}
	}
}
