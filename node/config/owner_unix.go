//go:build unix

package config

import (
	"os"
	"syscall"
)

// owner returns the user and group that own the file at path; had is
// false when there is none.
func owner(path string) (uid, gid int, had bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}
