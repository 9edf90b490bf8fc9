package history

// Exported for the tests of package history_test, which parse schedules
// with package scheduler (itself importing this package).
var (
	NewestSlots = newestSlots
	SlotsIn     = slotsIn
)
