package a2abridge

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
)

// fetch GETs url (with If-None-Match inm, if set) and returns the answer
// and its body.
func fetch(t *testing.T, url, inm string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if inm != "" {
		req.Header.Set("If-None-Match", inm)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TestNodeCardBudget: after a sybil run the node's card was 15 MB; now it
// stays under MaxNodeCardBytes, lists the node's own agent first, says
// what it left out and where the rest are, and is still signed.
func TestNodeCardBudget(t *testing.T) {
	tn := newTestNode(t)
	tn.sybilAgents(t, 6, 50, 8<<10)
	tn.ownAgent(t, "urn:own:weather", "Own weather")
	resp, body := fetch(t, tn.srv.URL+WellKnownCard, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", WellKnownCard, resp.Status, body)
	}
	if len(body) > MaxNodeCardBytes {
		t.Errorf("the node's card is %d bytes, over its budget of %d", len(body), MaxNodeCardBytes)
	}
	var c AgentCard
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyCard(c, tn.key.Public().(ed25519.PublicKey)); err != nil {
		t.Errorf("the card's signature: %v", err)
	}
	if n := len(c.Skills); n == 0 || n >= 301 {
		t.Fatalf("the card lists %d skills, want some of the 301 agents", n)
	}
	if want := tn.self.String() + "/urn:own:weather"; c.Skills[0].ID != want {
		t.Errorf("first skill %q, want the node's own agent %q", c.Skills[0].ID, want)
	}
	if want := fmt.Sprintf("This card lists %d of the 301 agents", len(c.Skills)); !strings.Contains(c.Description, want) || !strings.Contains(c.Description, PathAgents) {
		t.Errorf("description %q does not say %q and where the rest are", c.Description, want)
	}
	for _, s := range c.Skills {
		if len(s.Description) > maxSkillDescription {
			t.Fatalf("skill %s: description of %d bytes in the node's card", s.ID, len(s.Description))
		}
	}
	// The agent's own card has its description whole.
	_, body = fetch(t, tn.srv.URL+AgentPath(tn.sybilPub(t), "urn:sybil:0:0")+agentCardFile, "")
	var own AgentCard
	if err := json.Unmarshal(body, &own); err != nil || len(own.Description) != 8<<10 {
		t.Errorf("the agent's own card: description of %d bytes (%v), want 8 KiB", len(own.Description), err)
	}
}

// sybilPub is the publisher of urn:sybil:0:0.
func (tn *testNode) sybilPub(t *testing.T) peer.ID {
	t.Helper()
	res, err := tn.dir.Search(directory.Query{Text: "Sybil 0/0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Entries {
		if e.ThingID == "urn:sybil:0:0" {
			return e.Publisher
		}
	}
	t.Fatal("no urn:sybil:0:0")
	return ""
}

// TestCardsETag: the node's card, an agent's card and a page of the
// index carry a strong ETag and Cache-Control: no-cache, answer 304 to
// If-None-Match with it while the directory is the same, and 200 with a
// new ETag once it changed.
func TestCardsETag(t *testing.T) {
	tn := newTestNode(t)
	tn.ownAgent(t, "urn:own:a", "A")
	for _, path := range []string{WellKnownCard, AgentPath(tn.self, "urn:own:a"), AgentPath(tn.self, "urn:own:a") + agentCardFile, PathAgents, PathAgents + "?limit=5"} {
		t.Run(path, func(t *testing.T) {
			first, body := fetch(t, tn.srv.URL+path, "")
			etag := first.Header.Get("ETag")
			if first.StatusCode != http.StatusOK || !strings.HasPrefix(etag, `"`) || first.Header.Get("Cache-Control") != "no-cache" {
				t.Fatalf("GET: %s, ETag %q, Cache-Control %q", first.Status, etag, first.Header.Get("Cache-Control"))
			}
			if nm, b := fetch(t, tn.srv.URL+path, etag); nm.StatusCode != http.StatusNotModified || len(b) != 0 {
				t.Errorf("If-None-Match %s: %s with %d bytes, want 304", etag, nm.Status, len(b))
			}
			tn.ownAgent(t, "urn:own:a", "A, changed for "+path) // a new version of the agent
			again, b2 := fetch(t, tn.srv.URL+path, etag)
			if again.StatusCode != http.StatusOK || again.Header.Get("ETag") == etag || string(b2) == string(body) {
				t.Errorf("after a change: %s, ETag %q (was %q)", again.Status, again.Header.Get("ETag"), etag)
			}
		})
	}
}

// TestNodeCardRendersOnce: concurrent GETs of the node's card render it
// once (each render reads every agent's TD once), and later GETs of the
// same directory not at all.
func TestNodeCardRendersOnce(t *testing.T) {
	tn := newTestNode(t)
	tn.sybilAgents(t, 4, 25, 1<<10)
	tn.things.reads.Store(0)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if resp, body := fetch(t, tn.srv.URL+WellKnownCard, ""); resp.StatusCode != http.StatusOK {
				t.Errorf("GET: %s %s", resp.Status, body)
			}
		})
	}
	wg.Wait()
	fetch(t, tn.srv.URL+WellKnownCard, "")
	if got := tn.things.reads.Load(); got != 100 {
		t.Errorf("21 GETs of the card read %d TDs; one render reads the 100 agents' once", got)
	}
	tn.bridge.Refresh() // what the node may see changed
	fetch(t, tn.srv.URL+WellKnownCard, "")
	if got := tn.things.reads.Load(); got != 200 {
		t.Errorf("after Refresh, %d TD reads; want the card rendered again (200)", got)
	}
}

// TestAgentIndexPages: the index pages (limit, and a page ends early at
// MaxIndexPageBytes); following next lists every agent once.
func TestAgentIndexPages(t *testing.T) {
	tn := newTestNode(t)
	for i := range 150 {
		tn.ownAgent(t, fmt.Sprintf("urn:own:%03d", i), strings.Repeat("t", 4000)+fmt.Sprint(i))
	}
	seen := map[string]bool{}
	pages := 0
	for next := tn.srv.URL + PathAgents + "?limit=100"; next != ""; pages++ {
		resp, body := fetch(t, next, "")
		var idx AgentIndex
		if err := json.Unmarshal(body, &idx); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s", next, resp.Status, body)
		}
		if len(body) > MaxIndexPageBytes || idx.Total != 150 || len(idx.Agents) == 0 {
			t.Fatalf("page %d: %d bytes, total %d, %d agents", pages, len(body), idx.Total, len(idx.Agents))
		}
		for _, a := range idx.Agents {
			if seen[a.ThingID] {
				t.Errorf("%s listed twice", a.ThingID)
			}
			seen[a.ThingID] = true
		}
		if idx.Next != "" && !strings.Contains(resp.Header.Get("Link"), `rel="next"`) {
			t.Errorf("no Link rel=next beside next %s", idx.Next)
		}
		next = idx.Next
	}
	if len(seen) != 150 || pages < 3 {
		t.Errorf("%d agents in %d pages; want 150 in at least 3 (100 agents of 4 KiB titles exceed a page's bytes)", len(seen), pages)
	}
	for _, q := range []string{"limit=0", "limit=1001", "offset=-1", "offset=x", "limit=1&limit=2"} {
		if resp, _ := fetch(t, tn.srv.URL+PathAgents+"?"+q, ""); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("?%s: %s, want 400", q, resp.Status)
		}
	}
}
