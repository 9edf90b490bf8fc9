package config

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary file contents and environment overrides to the
// loader: it must never panic (the recover in load would turn a panic into
// an "internal error", which fails here), and whatever it accepts must be
// complete: every job built, Redacted marshalable.
//
//	go test -fuzz=FuzzLoad ./internal/config
//
// The seed corpus is testdata/fuzz/FuzzLoad (real configurations, some
// broken on purpose, plus any regression found by fuzzing).
func FuzzLoad(f *testing.F) {
	f.Add([]byte("jobs: [{name: a, schedule: '@every 1s', plugin: log, params: {message: x}}]"), "SLOTLOCK_LOCK__TTL=20s")
	f.Add([]byte(""), "SLOTLOCK_REDIS__NODES=h1:1,h2:2\nSLOTLOCK_JOBS__0__ENABLED=false")
	f.Add([]byte(minimalJob), "SLOTLOCK_LOCK=x\nSLOTLOCK_LOCK__TTL__X=1\nSLOTLOCK_LOCK__TTL=2s\nSLOTLOCK_JOBS__heartbeat__PARAMS=1\nSLOTLOCK_JOBS__0__PARAMS__A__B=2")
	f.Add([]byte("a: &a [*a, *a]\nb: &b {x: *a}\njobs: [*b]\n"), "")
	f.Fuzz(func(t *testing.T, data []byte, env string) {
		var environ []string
		if env != "" {
			environ = strings.Split(env, "\n")
		}
		cfg, err := load("fuzz.yaml", data, environ)
		if err != nil {
			if cfg != nil {
				t.Fatal("Load returned both a config and an error")
			}
			errs, ok := err.(Errors)
			if !ok || len(errs) == 0 {
				t.Fatalf("error %T %v is not a non-empty Errors", err, err)
			}
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("Load panicked inside: %v", err)
			}
			return
		}
		for i, j := range cfg.Jobs {
			if j.Schedule == nil || j.Location == nil || j.Runner == nil {
				t.Fatalf("accepted job %d %q is incomplete: %+v", i, j.Name, j)
			}
		}
		if _, err := json.Marshal(cfg.Redacted()); err != nil {
			t.Fatalf("Redacted does not marshal: %v", err)
		}
	})
}
