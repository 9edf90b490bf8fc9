// Package readmetest keeps the documents (README.md and docs/*.md) true to
// the code. It has no code of its own; its tests
//
//   - keep every Go block marked
//
//     <!-- example: jobs/example_test.go as package hello ... -->
//
//     equal to the runnable example it comes from, as a reader would write
//     it: the package renamed, the Example functions left out, and only the
//     imports the rest uses (`go test ./internal/readmetest -update`
//     rewrites the blocks from the examples);
//
//   - resolve every relative link and anchor: a file or folder that exists,
//     a heading of the linked document.
package readmetest
