// Package bench compares slotlock's Redlock with github.com/go-redsync/redsync/v4
// on the same redis-server processes. It is its own module so that redsync
// never enters the main module's dependencies; run it from this directory:
//
//	cd bench && go test -bench . -run '^$'
package bench
