package history

import "time"

// Whether the process that wrote an outcome lived to log it. A replica
// writes a skipped slot's entry and then logs the skip (slot.skipped): a
// replica killed between the two leaves the outcome in the history and
// in no log line. Nothing can make the write and the line one step, but
// the heartbeats tell which writes may have lost their line: those after
// which their writer never beat again.

// AfterWrite is what the heartbeats tell of the process that wrote an
// entry at some time.
type AfterWrite int

const (
	// WriterUnseen: no heartbeat of a process of that replica covers the
	// write (heartbeats off, or too old): nothing to go by.
	WriterUnseen AfterWrite = iota
	// WriterBeatOn: the writer beat a second or more after the write, so
	// it lived on past the line that follows the write.
	WriterBeatOn
	// WriterMayBeat: the writer has not beaten since the write and is
	// still counted alive: ask again later.
	WriterMayBeat
	// WriterSilent: the writer never beat after the write and is alive no
	// more: it may have died before logging what it wrote.
	WriterSilent
)

// AfterWrite says what the heartbeats tell, at now, of the process of
// the named replica that wrote at w (on its clock): of the replica's
// processes, the latest started by w. A heartbeat's time is rounded down
// to the second, so a beat scored a second or more after w came after it.
func (f Fleet) AfterWrite(replica string, w, now time.Time) AfterWrite {
	var writer *ReplicaInfo
	for i, r := range f.Replicas {
		if r.Replica == replica && !r.Started.After(w) && (writer == nil || r.Started.After(writer.Started)) {
			writer = &f.Replicas[i]
		}
	}
	switch {
	case writer == nil:
		return WriterUnseen
	case !writer.Seen.Before(w.Add(time.Second)):
		return WriterBeatOn
	case !now.After(writer.Seen.Add(aliveBeats * writer.beat())):
		return WriterMayBeat
	}
	return WriterSilent
}
