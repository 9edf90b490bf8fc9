package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/scheduler"
)

// `overlap: replace` (issue #15 item 2) loads, reaches the scheduler's
// spec as is, and the scheduler accepts it.
func TestOverlapReplaceLoads(t *testing.T) {
	cfg := mustLoad(t, "jobs:\n"+job("overlap: replace"))
	require.Equal(t, scheduler.OverlapReplace, cfg.Jobs[0].Overlap)
	specs := cfg.JobSpecs()
	require.Equal(t, scheduler.OverlapReplace, specs[0].Overlap)
	require.NoError(t, specs[0].Validate())
}
