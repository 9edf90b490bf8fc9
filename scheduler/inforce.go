package scheduler

// Config returns the configuration in force: the one New was given, with
// its defaults filled in, and Jobs the definitions in force (the latest
// Reload's), each with its defaults and its Schedule parsed. The ops
// package builds its handler from it; it is a copy: changing it changes
// nothing.
func (s *Scheduler) Config() Config {
	c := s.cfg
	order := s.jobList()
	c.Jobs = make([]JobSpec, len(order))
	for i, j := range order {
		c.Jobs[i] = j.spec
	}
	c.DefinitionsHash = s.DefinitionsHash()
	return c
}
