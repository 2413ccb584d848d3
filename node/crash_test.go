package node

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"

	"github.com/lmosnode/lmosnode/node/homedir"
)

// crashHomeEnv, when set, turns this test binary into the helper process
// of TestSurvivesKill9: it starts a node in that home, writes crashKeys,
// reports each acknowledged write on stdout and waits to be killed.
const crashHomeEnv = "LMOSNODE_TEST_CRASH_HOME"

const crashKeys = 50

func TestCrashHelperProcess(t *testing.T) {
	home := os.Getenv(crashHomeEnv)
	if home == "" {
		t.Skip("helper process for TestSurvivesKill9")
	}
	cfg := testConfig(t)
	cfg.Home = home
	n, err := New(cfg)
	if err != nil {
		fmt.Println("error", err)
		return
	}
	if err := n.Start(context.Background()); err != nil {
		fmt.Println("error", err)
		return
	}
	for i := range crashKeys {
		if err := n.Datastore().Put(context.Background(), crashKey(i), []byte("v")); err != nil {
			fmt.Println("error", err)
			return
		}
		fmt.Println("acked", i)
	}
	select {} // wait for SIGKILL
}

func crashKey(i int) ds.Key { return ds.NewKey(fmt.Sprintf("/test/crash/%03d", i)) }

// TestSurvivesKill9 kills a node with SIGKILL right after it acknowledged
// writes, then starts a node on the same home: every acknowledged write is
// there, and the stale api file and pebble lock do not stop the restart.
func TestSurvivesKill9(t *testing.T) {
	if os.Getenv(crashHomeEnv) != "" {
		t.Skip("in the helper process")
	}
	home := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelperProcess$")
	// The helper's own temporary directories go under this test's: it
	// is killed before it could remove them.
	cmd.Env = append(os.Environ(), crashHomeEnv+"="+home, "TMPDIR="+t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // if the test fails before the kill below
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	acked := 0
	sc := bufio.NewScanner(stdout)
	for acked < crashKeys && sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "error") {
			t.Fatalf("helper: %s", line)
		}
		if strings.HasPrefix(line, "acked") {
			acked++
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // killed: the error is expected; the cleanup's second Wait fails harmlessly
	if acked != crashKeys {
		t.Fatalf("helper acknowledged %d writes, want %d", acked, crashKeys)
	}
	if _, err := homedir.ReadAPIFile(home); err != nil {
		t.Fatalf("killed node left no api file (test premise): %v", err)
	}

	cfg := testConfig(t)
	cfg.Home = home
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := startNode(t, cfg)
	for i := range crashKeys {
		if _, err := n.Datastore().Get(ctx, crashKey(i)); err != nil {
			t.Errorf("acknowledged key %s after kill -9: %v", crashKey(i), err)
		}
	}
	if u, err := homedir.ReadAPIFile(home); err != nil || u != "http://"+n.APIAddr() {
		t.Errorf("api file after restart = %q, %v; want the new node's", u, err)
	}
}
