package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
)

// TestKilledBackfillIsNeverRunAgain, with real processes: every replica
// down across a few slots, the reconciler reports them missed; a
// `slotlock backfill` is SIGKILLed 0.3 s into a gap slot's body, before
// its start was confirmed; the replica settles the slot (missed,
// may_have_started); after every done marker expired, a second backfill
// of the same window refuses the slot — the body ran once — and names the
// entry that decided it, which `slotlock history` shows too. (The slot's
// history holds the reconciler's plain missed beside the settler's
// verdict: a second backfill once ran the body again.)
func TestKilledBackfillIsNeverRunAgain(t *testing.T) {
	t.Parallel()
	nodes := redistest.Start(t, 3)
	ledger := filepath.Join(t.TempDir(), "ledger")
	// op_timeout above its default: the evidence is the subject, not a
	// loaded host's slow replies (a plan whose reads all miss 100 ms at
	// once fails with no quorum).
	cfg := writeConfig(t, redisNodesYAML(nodes.Addrs())+fmt.Sprintf(`  op_timeout: 500ms
log: {format: json, level: debug}
http: {addr: ""}
lock: {ttl: 2s, max_clock_skew: 500ms}
shutdown: {grace: 10s}
history: {reconcile_after: 1s, reconcile_every: 1s}
jobs:
  - name: gap
    schedule: "*/2 * * * * *"
    plugin: exec
    params:
      inherit_env: [SLOW]
      command: ["/bin/sh", "-c", "echo \"$SLOTLOCK_SLOT start\" >> %s; if [ -n \"$SLOW\" ]; then sleep 3; fi"]
`, ledger))
	r1 := startReplica(t, cfg, "SLOTLOCK_REPLICA=r1")
	waitFor(t, 15*time.Second, "a first run", func() bool { return len(r1.events("run.started")) > 0 })
	if code, _ := r1.stop(t, 15*time.Second); code != 0 {
		t.Fatalf("r1 exit %d", code)
	}
	time.Sleep(7 * time.Second) // every replica down across a few slots
	r2 := startReplica(t, cfg, "SLOTLOCK_REPLICA=r2")
	var slot string
	waitFor(t, 30*time.Second, "the reconciler reporting a gap slot missed", func() bool {
		for _, e := range r2.events("slot.missed") {
			if e["may_have_started"] == nil {
				slot, _ = e["slot"].(string)
				return true
			}
		}
		return false
	})

	// The first backfill dies 0.3 s into the slot's body.
	bf := exec.Command(binary, "backfill", "--config", cfg, "--from", slot, "--to", slot, "gap")
	bf.Env = append(os.Environ(), "SLOTLOCK_REPLICA=bf1", "SLOW=1")
	bf.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var bfOut strings.Builder
	bf.Stdout, bf.Stderr = &bfOut, &bfOut
	defer func() {
		if t.Failed() {
			t.Logf("first backfill:\n%s", bfOut.String())
		}
	}()
	if err := bf.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the backfilled body to start", func() bool { return ledgerCounts(t, ledger)[slot] > 0 })
	time.Sleep(300 * time.Millisecond)
	_ = syscall.Kill(-bf.Process.Pid, syscall.SIGKILL)
	_ = bf.Wait()

	// The replica's next claims point to the dead claim: settled as may
	// have started.
	waitFor(t, 30*time.Second, "the killed backfill's slot settled", func() bool {
		for _, e := range r2.events("slot.missed") {
			if e["slot"] == slot && e["may_have_started"] == true {
				return true
			}
		}
		return false
	})
	time.Sleep(8 * time.Second) // every done marker of the slot expires

	out, errOut, code := slotlock(t, []string{"SLOTLOCK_REPLICA=bf2", "SLOW=1"},
		"backfill", "--config", cfg, "--from", slot, "--to", slot, "gap")
	if code != 0 {
		t.Fatalf("second backfill: exit %d\n%s\n%s", code, out, errOut)
	}
	plan, _ := backfillTable(t, out)
	if plan[slot][0] != "skip" || plan[slot][1] != "missed (unknown, may have started)" ||
		!strings.Contains(out, "— may have run; entry of run ") {
		t.Errorf("second backfill of %s: %v, want refused by the settler's entry:\n%s", slot, plan[slot], out)
	}
	if n := ledgerCounts(t, ledger)[slot]; n != 1 {
		t.Errorf("the body of %s started %d times, want once", slot, n)
	}
	hist, _, code := slotlock(t, nil, "history", "--config", cfg, "--since", "10m", "gap")
	if code != 0 || !strings.Contains(hist, slot) {
		t.Fatalf("history: exit %d\n%s", code, hist)
	}
	for _, l := range strings.Split(hist, "\n") {
		if strings.HasPrefix(l, slot) && !strings.Contains(l, "may have started") && !strings.Contains(l, "may_have_started") {
			t.Errorf("history of %s does not say it may have started: %q", slot, l)
		}
	}
	r2.stop(t, 15*time.Second)
}
