// Package ledger is the format of the e2e ledger: one JSON line per run
// start and end, written by the ledgerjob that the replicas run and read by
// the e2e checker. Both sides use this one type, so they cannot drift apart.
package ledger

// Line is one ledger line.
type Line struct {
	Ev      string `json:"ev"` // start | end
	Job     string `json:"job"`
	Slot    string `json:"slot"`
	Replica string `json:"replica"`
	Token   string `json:"token"`
	RunID   string `json:"run_id"`
	Attempt string `json:"attempt"`
	PID     int    `json:"pid"`
	UnixNs  int64  `json:"unix_ns"`
	Outcome string `json:"outcome,omitempty"` // end only: ok | failed | canceled
}
