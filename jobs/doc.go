// Package jobs holds what slotlock runs: the Job interface, the description
// of one run, the plugin registry and the built-in plugins exec, http and log.
//
// A plugin is a Factory registered under a name at init time, the way
// database/sql drivers register themselves:
//
//	func init() { jobs.Register("hello", newHello) }
//
// The configuration names the plugin of each job and hands the job's params
// to the factory once, at load time; the returned Job is then run once per
// slot (and per retry attempt). The package knows nothing of locks or cron: a
// run receives a context and a Run description that carries its fencing
// token, not a lease.
package jobs
