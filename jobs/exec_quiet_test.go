package jobs

import (
	"context"
	"testing"
)

func init() {
	extraHelpers["quiet"] = func() int { return 0 }
	extraHelpers["whisper"] = func() int { print("."); return 0 }
}

// TestExecQuietSuccessAtDebug: a command that succeeds without a byte of
// output has its exec.output line at debug (run.succeeded says the rest);
// one that printed anything, even to stderr, keeps it at info.
func TestExecQuietSuccessAtDebug(t *testing.T) {
	for mode, level := range map[string]string{"quiet": "DEBUG", "whisper": "INFO"} {
		run, logs := testRun(t)
		if err := mustJob(t, "exec", helperCommand(mode)).Run(context.Background(), run); err != nil {
			t.Fatal(err)
		}
		line := logs.Event(t, "exec.output")
		if line["level"] != level || line["exit_code"] != 0.0 || line["job"] != "nightly-report" {
			t.Errorf("%s: exec.output line: %v, want level %s", mode, line, level)
		}
	}
}
