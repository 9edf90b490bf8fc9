// Package jobs holds what slotlock runs: the Job interface, the description
// of one run, the plugin registry and the built-in plugins exec, http and
// log. It knows nothing of locks or cron: a run receives a context and a
// [Run] that carries its fencing token, not a lease.
//
// # A function as a job
//
// In a service that embeds the scheduler, a job is a function of the
// service ([Func]), put in a scheduler.JobSpec:
//
//	report := jobs.Func(func(ctx context.Context, run jobs.Run) error {
//		return sendReport(ctx, run.Slot, run.FencingToken)
//	})
//
// The function is called once per attempt of each slot its replica wins.
// ctx ends on the job's timeout, a lost lease or shutdown
// (context.Cause says which): return promptly then. A nil return is
// success; an error fails the attempt, and a panic is recovered
// ([Execute], [PanicError]). Hand run.FencingToken to what you write to, so
// a stale run's write can be refused (package fence).
//
// # A plugin
//
// A job named in the configuration file comes from a plugin: a [Factory]
// registered under a name at init time, the way database/sql drivers
// register themselves, and imported by your own binary (package cli):
//
//	func init() { jobs.Register("hello", newHello) }
//
//	func newHello(params map[string]any) (jobs.Job, error) {
//		var p struct{ Greeting string `yaml:"greeting"` }
//		if err := jobs.DecodeParams(params, &p); err != nil {
//			return nil, err // names the key: greting: unknown key (did you mean "greeting"?)
//		}
//		return jobs.Func(func(ctx context.Context, run jobs.Run) error {
//			run.Log().InfoContext(ctx, p.Greeting)
//			return nil
//		}), nil
//	}
//
// The factory runs once per job when the configuration is loaded (also
// under `slotlock validate`): it checks everything and starts nothing.
// Test a plugin without a scheduler: [Lookup] its factory, then run one
// attempt with [Execute].
//
// # Secrets and traces
//
// A plugin whose params carry credentials by their place says so
// ([SecretParams]); decode them with [DecodeParamsHiding] and scrub its log
// lines and errors with a [Scrubber] of their [SecretValues]. The masking
// helpers ([MaskURL], [RedactMap], [RedactHeaders]) are the ones the
// configuration dump and the built-in plugins use. A run's ctx carries its
// span when tracing is on: [TraceEnv] and [InjectTrace] hand it on to a
// program or a request. A plugin whose run outlives its cancel for a while
// implements [Graceful].
//
// docs/plugins.md is the full guide.
package jobs
