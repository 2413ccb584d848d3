package directory

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// childEnv names the datastore directory of TestKillDurability's child.
const childEnv = "LMOS_DIRECTORY_KILL_CHILD"

// TestKillDurability puts records in a child process, kills it with
// SIGKILL while it is still writing, and checks that every Put it
// acknowledged survived.
func TestKillDurability(t *testing.T) {
	if dir := os.Getenv(childEnv); dir != "" {
		killChild(t, dir)
		return
	}
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillDurability$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck // already dead on the normal path
	lines := bufio.NewScanner(out)
	var acked []string
	for lines.Scan() {
		if id, ok := strings.CutPrefix(lines.Text(), "acked "); ok {
			acked = append(acked, id)
			if len(acked) == 50 {
				// Kill it in the middle of its writes.
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	_ = cmd.Wait()
	if len(acked) < 50 {
		t.Fatalf("child acknowledged only %d puts", len(acked))
	}

	ds := pebbleStore(t, dir)
	defer ds.Close()
	self := newPublisher(t, 1)
	d := open(t, ds, self.id, newClock(), Config{})
	for _, id := range acked {
		if _, ok := d.Get(self.id, id); !ok {
			t.Fatalf("acknowledged thing %s lost (%d acknowledged, %d held)", id, len(acked), d.Len())
		}
	}
	t.Logf("%d acknowledged, %d held after SIGKILL", len(acked), d.Len())
}

func killChild(t *testing.T, dir string) {
	ds := pebbleStore(t, dir)
	self := newPublisher(t, 1)
	d, err := Open(Deps{Datastore: ds, Self: self.id}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	td := thingSpec{seq: 1}.td(t)
	// The parent kills the child long before this bound; it only stops an
	// orphan.
	deadline := time.Now().Add(time.Minute)
	for i := 0; time.Now().Before(deadline); i++ {
		td := td.Clone()
		td.ID = fmt.Sprintf("urn:kill:%d", i)
		if _, err := d.Put(self.unsigned(t, td, time.Now()), nil); err != nil {
			t.Fatal(err)
		}
		fmt.Println("acked", td.ID)
	}
}
