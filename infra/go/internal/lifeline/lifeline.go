// Package lifeline ties a kit process to the process that started it: when
// MIRRORHUB_LIFELINE=1 is set, the kernel sends SIGKILL to this process as soon as
// its parent dies, so a crashed test run never leaves API servers or etcd behind.
package lifeline

import (
	"os"
	"syscall"
)

// Hold arms the parent-death signal if the kit asked for it.
func Hold() {
	if os.Getenv("MIRRORHUB_LIFELINE") != "1" {
		return
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0); errno != 0 {
		return
	}
	// The parent may have died before the signal was armed.
	if os.Getppid() == 1 {
		os.Exit(1)
	}
}
