//go:build !unix

package node_test

import "time"

// brCPUTime is not measured on this platform.
func brCPUTime() time.Duration { return 0 }
