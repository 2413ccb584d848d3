package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// lockedBuffer is a bytes.Buffer safe for one writer and concurrent
// readers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// groupThing is a Thing restricted to group id.
func groupThing(t *testing.T, thingID, group string) *lmosproto.TD {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{
		"@context":            json.RawMessage(lmosproto.LMOSContext()),
		"@type":               []string{lmosproto.TypeTool},
		"id":                  thingID,
		"title":               "Diagnostics",
		"securityDefinitions": map[string]any{"nosec_sc": map[string]string{"scheme": "nosec"}},
		"security":            "nosec_sc",
		"lmos:groups":         []string{group},
		"properties": map[string]any{"model": map[string]any{"type": "string", "readOnly": true,
			"forms": []any{map[string]any{"href": "https://backend.example/model"}}}},
	})
	td, err := lmosproto.ParseTD(raw)
	if err != nil {
		t.Fatal(err)
	}
	return td
}

// The group commands against two real nodes: found, invite, join, show,
// post and receive, a group-scoped Thing found and called by the member,
// removal.
func TestGroupCommandsTwoNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	net := testnet.New(t, 2, testnet.Options{})
	admin, joiner := net.Nodes[0], net.Nodes[1]
	net.Link(1, 0)
	aHome, bHome := admin.Config().Home, joiner.Config().Home

	out := mustRun(t, "--home", aHome, "group", "create", "diagnostics", "--json")
	var g groupapi.GroupInfo
	if err := json.Unmarshal([]byte(out), &g); err != nil || g.ID == "" || !g.Self.Admin {
		t.Fatalf("create: %v\n%s", err, out)
	}
	token := strings.TrimSpace(mustRun(t, "--home", aHome, "group", "invite", "diagnostics", "--ttl", "1h"))
	if !strings.HasPrefix(token, "lmosgroup:") {
		t.Fatalf("invite: %q", token)
	}
	if out := mustRun(t, "--home", bHome, "group", "join", token, "--wait"); !strings.Contains(out, "joined group diagnostics ("+g.ID+")") {
		t.Fatalf("join: %q", out)
	}
	// The admin's node sees the new member and the add in the log.
	testnet.WaitFor(t, "the admin sees the member", 30*time.Second, func() (bool, string) {
		out := mustRun(t, "--home", aHome, "group", "show", g.ID)
		return strings.Contains(out, joiner.PeerID().String()+"  member"), out
	})
	show := mustRun(t, "--home", bHome, "group", "show", "diagnostics")
	for _, want := range []string{"genesis " + admin.PeerID().String(), "add " + admin.PeerID().String() + " " + joiner.PeerID().String() + " yes"} {
		if !strings.Contains(strings.Join(strings.Fields(show), " "), want) {
			t.Errorf("member's show lacks %q:\n%s", want, show)
		}
	}

	// A post reaches the member's subscription.
	ctx, cancel := context.WithCancel(context.Background())
	var subOut, subErr lockedBuffer
	done := make(chan int)
	go func() {
		root := newRootCmd()
		root.SetArgs([]string{"--home", bHome, "group", "subscribe", "diagnostics"})
		root.SetOut(&subOut)
		root.SetErr(&subErr)
		code := 0
		if err := root.ExecuteContext(ctx); err != nil {
			_, _ = subErr.Write([]byte(err.Error()))
			code = 1
		}
		done <- code
	}()
	testnet.WaitFor(t, "the member receives a post", 30*time.Second, func() (bool, string) {
		if strings.Contains(subOut.String(), ": maintenance at 18:00") {
			return true, ""
		}
		// Posted again until the subscription, attached asynchronously, gets one.
		mustRun(t, "--home", aHome, "group", "publish", "diagnostics", "maintenance at 18:00")
		return false, subOut.String() + subErr.String()
	})
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("subscribe ended with %d: %s", code, subErr.String())
	}

	// A Thing restricted to the group: the member finds it, with its
	// group, and calls it.
	thingID := testnet.UniqueID(t)
	th := interact.NewThing().OnProperty("model", func(context.Context) (lmosproto.Value, error) {
		return lmosproto.StringValue("T-1000"), nil
	}, nil)
	if _, err := admin.Register(groupThing(t, thingID, g.ID), th); err != nil {
		t.Fatal(err)
	}
	testnet.WaitFor(t, "the member learns the Thing", 30*time.Second, func() (bool, string) {
		return len(joiner.Directory().Lookup(thingID)) > 0, "not yet"
	})
	found := mustRun(t, "--home", bHome, "find", "--group", g.ID)
	if !strings.Contains(found, " diagnostics ") || !strings.Contains(found, thingID) {
		t.Errorf("member's find:\n%s", found)
	}
	if out := mustRun(t, "--home", bHome, "read", thingID, "model"); strings.TrimSpace(out) != `"T-1000"` {
		t.Errorf("member's read: %q", out)
	}

	// Removed, the member is refused and no longer lists the Thing.
	mustRun(t, "--home", aHome, "group", "remove", "diagnostics", joiner.PeerID().String())
	testnet.WaitFor(t, "the removal reaches the removed member", 30*time.Second, func() (bool, string) {
		var gi groupapi.GroupInfo
		out := mustRun(t, "--home", bHome, "group", "show", g.ID, "--json")
		return json.Unmarshal([]byte(out), &gi) == nil && !gi.Self.Member, out
	})
	if _, errOut, code := lmosnode(t, "", "--home", bHome, "read", thingID, "model"); (code != exitForbidden || !strings.Contains(errOut, "403")) && (code != exitNotFound || !strings.Contains(errOut, "no Thing")) {
		t.Errorf("removed member's read: exit %d, %q", code, errOut)
	}
	if out, _, _ := lmosnode(t, "", "--home", bHome, "find", "--group", g.ID); strings.Contains(out, thingID) {
		t.Errorf("removed member still finds the Thing:\n%s", out)
	}
	if out := mustRun(t, "--home", aHome, "group", "dissolve", "diagnostics"); !strings.Contains(out, "dissolved") {
		t.Errorf("dissolve: %q", out)
	}
}
