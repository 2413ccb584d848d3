package testnet

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// npmCI remembers, per directory, the outcome of the one `npm ci` a test
// binary runs there.
var npmCI sync.Map // dir → *npmResult

type npmResult struct {
	once sync.Once
	err  error
	out  []byte
}

// NPM prepares the npm package in dir for a test that runs JavaScript
// against nodes: it runs `npm ci` there (the versions package-lock.json
// pins) once per test binary, unless node_modules holds what the lock
// pins already (npm's node_modules/.package-lock.json, written by the
// last install, is not older than package-lock.json), and fails the test
// if that fails. It skips
// the test only when node or npm is not on PATH (CI has both).
func NPM(t testing.TB, dir string) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH: skipping a test that runs %s (CI has node and npm)", tool, dir)
		}
	}
	v, _ := npmCI.LoadOrStore(dir, &npmResult{})
	r := v.(*npmResult)
	r.once.Do(func() {
		if installed(dir) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		r.out, r.err = cmd.CombinedOutput()
	})
	if r.err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, r.err, r.out)
	}
}

// installed tells whether node_modules of dir is at least as new as its
// package-lock.json: npm ci would install the same again.
func installed(dir string) bool {
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return false
	}
	done, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	return err == nil && !done.ModTime().Before(lock.ModTime())
}
