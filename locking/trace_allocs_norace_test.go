//go:build !race

package locking_test

// localAcquireReleaseAllocs is what Acquire+Release of the in-process
// store allocated at the commit before tracing existed (go1.26, amd64).
const localAcquireReleaseAllocs = 11
