//go:build linux

package cli

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The watch on the configuration's directory is not woken by each write
// to another file in it (a log appended to beside the configuration),
// and still sees every way the configuration changes: written in place,
// renamed over, a ConfigMap's ..data link swapped, and a file closed
// after a write.
func TestDirWatchSkipsWritesToOtherFiles(t *testing.T) {
	dir := t.TempDir()
	w, err := newDirWatch([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var reader sync.WaitGroup
	reader.Go(w.read)
	defer reader.Wait()
	defer w.Close()
	path := func(name string) string { return filepath.Join(dir, name) }
	// until returns the events up to and including the first on want.
	until := func(want string) []string {
		t.Helper()
		var seen []string
		timeout := time.After(10 * time.Second)
		for {
			select {
			case name := <-w.events:
				seen = append(seen, filepath.Base(name))
				if name == path(want) {
					return seen
				}
			case err := <-w.errors:
				t.Fatalf("watch error: %v", err)
			case <-timeout:
				t.Fatalf("no event on %s; saw %v", want, seen)
			}
		}
	}

	log, err := os.OpenFile(path("replica.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if got := until("replica.log"); len(got) != 1 {
		t.Fatalf("creating the log: %v", got)
	}
	for range 500 {
		if _, err := log.WriteString(`{"msg":"run.started"}` + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path("config.yaml"), []byte("jobs: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range until("config.yaml") {
		if name == "replica.log" {
			t.Fatal("a write to the log woke the watch")
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	until("replica.log") // closed after a write: a file written in place is seen whole

	if err := os.WriteFile(path("config.yaml.tmp"), []byte("jobs: [{}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path("config.yaml.tmp"), path("config.yaml")); err != nil {
		t.Fatal(err)
	}
	until("config.yaml") // an editor's save: a new file renamed over the old

	if err := os.Symlink("..2026_12_03", path("..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path("..data_tmp"), path("..data")); err != nil {
		t.Fatal(err)
	}
	until("..data") // a ConfigMap update
}

// A watch whose reads fail ends with a warning that SIGHUP is left,
// rather than going quiet.
func TestConfigWatchSaysWhenItEnds(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	cw, err := watchConfig(filepath.Join(t.TempDir(), "config.yaml"), log)
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		cw.run(context.Background())
	}()
	if err := cw.w.f.SetReadDeadline(time.Now()); err != nil { // the next read fails
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch went on after its reads failed")
	}
	if !strings.Contains(out.String(), "configuration file watch ended; reload it with SIGHUP") {
		t.Errorf("log: %s", out.String())
	}
}
