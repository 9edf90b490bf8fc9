// Package scaleplot draws the charts of docs/performance.md from the scale
// benchmark's own output: the markdown tables that
//
//	go test ./e2e -run TestScale -scale ... -scale.out FILE
//
// writes, kept under docs/data/ (scale-DATE-*.md; the charts show the newest
// DATE's alone, one sitting never mixed with another), and the overload chart from
// the side-by-side runs of -scale.base (round*-*.md: each binary's tables
// and the overload table). A table of bursts (-scale.every N) is drawn
// on a burst chart of its own (scale-burst.svg). No figure in a chart is
// typed by hand. Its test fails when docs/images/*.svg differ from what the data gives;
//
//	go test ./internal/scaleplot -update
//
// redraws them after a new data file is added.
package scaleplot
