package scheduler

import (
	"context"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// attempts is the component that runs slot attempts (attempt.go): it makes
// each attempt, takes its leases, runs it and carries out its verdict. It
// keeps no state across attempts beyond the shared services: each attempt
// owns its leases from the claim to the exit. What an attempt needs of
// the other components it reaches through the interfaces below, each
// defined here, where it is used.
type attempts struct {
	*engine
	locks      attemptLocks
	outcomes   attemptOutcomes
	settlement attemptSettlement
	control    pauseKeeper
	misfire    attemptMisfire
	outage     storesWatch
	fleet      runList
	pastFleet  pastFleet // what a backfill judges a missed slot by
}

// attemptLocks takes the attempt's leases: its claim and job lease, and
// its group's permit (locks.go, group.go).
type attemptLocks interface {
	claimAcquirer
	permit(job string, s locking.Semaphore, from int, p retryPolicy) (*locking.Lease, error)
}

// attemptOutcomes ends the attempt's leases with the slot's outcome, and
// reads what the history records of the slot (outcomes.go).
type attemptOutcomes interface {
	endLease(job, slot string, l *locking.Lease, doneTTL time.Duration, note string)
	endLeaseThen(p pendingEnd)
	endHandled(p pendingEnd, j *job, t time.Time)
	recordHandled(j *job, t time.Time)
	slotRecorded(ctx context.Context, job string, t time.Time) (history.Entry, bool, error)
}

// attemptSettlement settles an abandoned claim: one the stores pointed
// to, or one the attempt's claim took over (settlement.go).
type attemptSettlement interface {
	orphanSettler
	settleAbandoned(j *job, t time.Time, lease *locking.Lease)
}

// pauseKeeper notes the pause state an attempt saw, and pauses a job
// after its failures (control_pause.go).
type pauseKeeper interface {
	notePause(j *job, p locking.Pause)
	pauseOnFailure(j *job)
}

// attemptMisfire is the misfire policy as the attempt meets it: a slot won too
// late goes to it, and run_once asks it whether the outage was recovered
// already (misfire.go, misfire_outage.go).
type attemptMisfire interface {
	handle(j *job, late lateRange)
	outageRecovered(j *job, t time.Time) (time.Time, string)
}

// storesWatch is the outage as the attempt meets it: told when the
// stores answer or a fired slot lost its quorum,
// and to end a job's held ends before its job lease is taken
// (outage.go).
type storesWatch interface {
	quorumSeen()
	noteOutage(j *job, t time.Time)
	flushPending(job string)
}

// runList keeps the runs going on here, for the heartbeats (fleet.go).
type runList interface {
	runStarted(r history.RunInfo)
	runEnded(id string)
}
