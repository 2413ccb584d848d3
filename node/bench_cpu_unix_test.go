//go:build unix

package node_test

import (
	"syscall"
	"time"
)

// brCPUTime is the CPU time (user and system) the test process has used:
// the work of every node, backend and client in it, whatever else the
// machine runs.
func brCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
