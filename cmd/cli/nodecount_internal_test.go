package cli

import (
	"strings"
	"testing"
)

func TestNodeCountWarning(t *testing.T) {
	cases := []struct {
		nodes int
		says  string // "" none
	}{
		{1, "one Redis node: every lock needs it"},
		{2, "two Redis nodes: a lock needs a majority of them, both"},
		{3, ""},
		{4, "4 Redis nodes tolerate 1 down, as 3 do: a lock needs 3 of them"},
		{5, ""},
		{6, "6 Redis nodes tolerate 2 down, as 5 do: a lock needs 4 of them"},
		{7, ""},
	}
	for _, c := range cases {
		got := nodeCountWarning(c.nodes)
		if (c.says == "") != (got == "") || !strings.HasPrefix(got, c.says) {
			t.Errorf("%d nodes: %q, want it to begin %q", c.nodes, got, c.says)
		}
	}
}
