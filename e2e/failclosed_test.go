//go:build linux

package e2e

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestFailClosedEmptyNodeOverride (issue #36): the configuration file names
// three Redis nodes; SLOTLOCK_REDIS__NODES set to nothing, blanks or commas
// must never start a replica on in-process locks — in a fleet every
// replica would then run every slot. `validate` and `run` exit 2 at once,
// naming the variable, and nothing runs; without the override the same
// file starts on the Redis nodes.
func TestFailClosedEmptyNodeOverride(t *testing.T) {
	requireSuite(t)
	c := NewCluster(t, bins, Spec{ProxyNode: -1, Jobs: []JobDef{tick}})
	for _, v := range []string{"", " ", ",", ",,,", " , ,"} {
		for _, cmdName := range []string{"validate", "run"} {
			cmd := exec.Command(c.bin.Slotlock, cmdName, "--config", c.config)
			cmd.Dir = c.dir
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			cmd.Env = append(cleanEnv(), "SLOTLOCK_REPLICA=failclosed", "SLOTLOCK_REDIS__NODES="+v)
			p, err := startProc("slotlock "+cmdName, cmd)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.done:
			case <-time.After(15 * time.Second):
				p.kill()
				t.Fatalf("SLOTLOCK_REDIS__NODES=%q: slotlock %s still running after 15s (started?):\n%s", v, cmdName, errb.String())
			}
			stderr := errb.String()
			if code := p.exitCode(); code != 2 {
				t.Errorf("SLOTLOCK_REDIS__NODES=%q: slotlock %s exited %d, want 2\nstdout: %s\nstderr: %s", v, cmdName, code, out.String(), stderr)
			}
			if !strings.Contains(stderr, "redis.nodes: SLOTLOCK_REDIS__NODES names no node") ||
				!strings.Contains(stderr, "would drop the 3 node(s) the file names") {
				t.Errorf("SLOTLOCK_REDIS__NODES=%q: slotlock %s: stderr does not say why:\n%s", v, cmdName, stderr)
			}
			if strings.Contains(stderr, "using in-process locks") || strings.Contains(stderr, `"lock_mode":"local`) ||
				strings.Contains(stderr, "slotlock starting") || strings.Contains(out.String(), "valid (") {
				t.Errorf("SLOTLOCK_REDIS__NODES=%q: slotlock %s went on:\nstdout: %s\nstderr: %s", v, cmdName, out.String(), stderr)
			}
		}
	}
	if runs := c.Runs(); len(runs) != 0 {
		t.Errorf("%d runs with an empty node override, want none", len(runs))
	}

	// The control: the same file, no override, runs on its nodes.
	r := c.StartReplica("r1", 0)
	deadline := time.Now().Add(10 * time.Second)
	for len(c.Runs()) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	r.Stop()
	log := tail(c.dir+"/r1.log", 1000)
	if !strings.Contains(log, `"lock_mode":"redlock(3 nodes)"`) || strings.Contains(log, "in-process") {
		t.Errorf("without the override the replica did not run on the 3 nodes:\n%s", tail(c.dir+"/r1.log", 10))
	}
	if len(c.Runs()) == 0 {
		t.Error("no run without the override")
	}
}
