//go:build linux

package e2e

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Commands and a headless browser against a cluster: for the status page's
// browser test.

// freeLoopbackAddr returns a loopback address that nobody listens on now.
func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Chromium is Debian's headless chromium.
type Chromium struct {
	t       testing.TB
	path    string
	profile string
}

// FindChromium returns the browser on PATH. Without it the test is
// skipped, except under CI=true, where the test command installs it
// (.ci/test) and its absence fails the test.
func FindChromium(t testing.TB) *Chromium {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed (CI=true: .ci/test installs Debian's chromium package)")
		}
		t.Skip("chromium is not installed: apt-get install chromium (.ci/test does so)")
	}
	return &Chromium{t: t, path: path, profile: t.TempDir()}
}

// DumpDOM loads url and returns the document as the browser serializes
// it once loaded, after the page's scripts ran.
func (b *Chromium) DumpDOM(url string) string {
	b.t.Helper()
	return b.run("--dump-dom", url)
}

// Screenshot saves a PNG of url, 1400 x 1000 pixels, at path.
func (b *Chromium) Screenshot(url, path string) {
	b.t.Helper()
	b.run("--screenshot="+path, "--window-size=1400,1000", "--hide-scrollbars", url)
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		b.t.Fatalf("chromium wrote no screenshot at %s (%v)", path, err)
	}
}

// run runs the browser once, headless, with a profile of the test's own,
// and returns its stdout; the whole process tree is killed after a minute.
func (b *Chromium) run(args ...string) string {
	b.t.Helper()
	cmd := exec.Command(b.path, append([]string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
		"--disable-extensions", "--user-data-dir=" + filepath.Join(b.profile, "profile")}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	p, err := startProc("chromium", cmd)
	if err != nil {
		b.t.Fatalf("start chromium: %v", err)
	}
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.kill()
		b.t.Fatalf("chromium %v did not finish within a minute:\n%s", args, errb.String())
	}
	if code := p.exitCode(); code != 0 {
		b.t.Fatalf("chromium %v exited %d:\n%s", args, code, errb.String())
	}
	return out.String()
}
