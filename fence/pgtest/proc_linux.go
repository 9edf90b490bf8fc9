package pgtest

import "syscall"

// sysProcAttr runs the process as cred (nil: as this process's user) and
// kills it when the process that started it dies without running its
// cleanups (a test binary killed by -timeout).
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred}
}
