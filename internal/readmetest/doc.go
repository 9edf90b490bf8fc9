// Package readmetest keeps the README's Go code blocks equal to the
// runnable examples they come from. It has no code of its own: its test
// reads README.md, finds every block marked
//
//	<!-- example: jobs/example_test.go as package hello ... -->
//
// and fails when the block differs from that file as a reader would write
// it: the package renamed, the Example functions left out, and only the
// imports the rest uses. `go test ./internal/readmetest -update` rewrites
// the blocks from the examples.
package readmetest
