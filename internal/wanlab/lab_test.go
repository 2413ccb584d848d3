package main

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestLinks: the lab's topology is a ring plus chords, each pair once,
// over nodes 1..n, and connected.
func TestLinks(t *testing.T) {
	for _, n := range []int{2, 3, 6, 30, 60} {
		l := links(n)
		seen := map[[2]int]bool{}
		adj := map[int][]int{}
		for _, e := range l {
			a, b := min(e[0], e[1]), max(e[0], e[1])
			if a < 1 || b > n || a == b || seen[[2]int{a, b}] {
				t.Fatalf("n=%d: link %v is out of range, a loop or twice in %v", n, e, l)
			}
			seen[[2]int{a, b}] = true
			adj[a], adj[b] = append(adj[a], b), append(adj[b], a)
		}
		reached := map[int]bool{1: true}
		for todo := []int{1}; len(todo) > 0; todo = todo[1:] {
			for _, m := range adj[todo[0]] {
				if !reached[m] {
					reached[m] = true
					todo = append(todo, m)
				}
			}
		}
		if len(reached) != n {
			t.Errorf("n=%d: %d of %d nodes connected by %v", n, len(reached), n, l)
		}
		if n >= 3 && len(l) < n {
			t.Errorf("n=%d: %d links, want a ring at least", n, len(l))
		}
	}
	if got := len(links(30)); got != 36 {
		t.Errorf("n=30: %d links, want the ring's 30 and 6 chords", got)
	}
}

// TestRawIdentity: every raw host's identity follows from its index, so
// peers can dial each other by index; different indexes differ.
func TestRawIdentity(t *testing.T) {
	ids := map[string]int{}
	for k := 1; k <= 100; k++ {
		id := rawID(k).String()
		if j, ok := ids[id]; ok {
			t.Fatalf("raw hosts %d and %d share %s", j, k, id)
		}
		ids[id] = k
	}
	for id, k := range ids {
		if again := rawID(k).String(); again != id {
			t.Fatalf("raw host %d is %s, then %s", k, id, again)
		}
	}
	if want := "/ip4/10.78.7.2/tcp/4101/p2p/" + rawID(7).String(); rawAddr(7) != want {
		t.Errorf("rawAddr(7) = %s, want %s", rawAddr(7), want)
	}
}

// TestNodePID: nodePID finds the `lmosnode up` process of a home, not one
// of another home. The processes are this test binary run again under the
// name lmosnode (TestMain's helper mode).
func TestNodePID(t *testing.T) {
	start := func(home string) *exec.Cmd {
		cmd := exec.Command(os.Args[0])
		cmd.Args = []string{"/opt/lab/lmosnode", "up", "--mdns=false", "--home", home}
		cmd.Env = append(os.Environ(), "WANLAB_TEST_SLEEP=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	a, b := start("/lab/a"), start("/lab/b")
	for _, c := range []struct {
		home string
		cmd  *exec.Cmd
	}{{"/lab/a", a}, {"/lab/b", b}} {
		pid, err := nodePID(c.home)
		if err != nil || pid != c.cmd.Process.Pid {
			t.Errorf("nodePID(%s) = %d, %v; want %d", c.home, pid, err, c.cmd.Process.Pid)
		}
	}
	if pid, err := nodePID("/lab/c"); err == nil {
		t.Errorf("nodePID of a home no node runs: %d", pid)
	}
}

// TestMain runs the tests, or, as the helper of TestNodePID, waits to be
// killed.
func TestMain(m *testing.M) {
	if os.Getenv("WANLAB_TEST_SLEEP") != "" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}
