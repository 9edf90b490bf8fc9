package redistest

import "syscall"

// sysProcAttr kills the server when the process that started it dies
// without running its cleanups (a test binary killed by -timeout).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
