package node_test

// The overhead of a cross-node call through the Agora and AITP endpoints
// against the same call through the HTTP binding:
//
//	go test -run '^$' -bench BridgeAgora ./node
//
// Node A owns an agent (Go handlers: action "chat" answers its input in
// upper case); a client of node B calls it through B's HTTP binding, an
// Agora request to B (natural language, single round) and a message of
// an AITP thread on B. All go B → libp2p → A's engine → handler.

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/agora"
	"github.com/lmosnode/lmosnode/node/aitp"
)

func BenchmarkBridgeAgoraCrossNode(b *testing.B) {
	hc := brHTTPClient(b)
	a, c := brPair(b)
	id := testnet.UniqueID(b)
	a2aAgent(b, a, id)
	brWaitKnown(b, c, id)
	post := func(url, body, want string) func() error {
		return func() error {
			resp, err := hc.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				return err
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && (resp.StatusCode != http.StatusOK || !strings.Contains(string(got), want)) {
				err = fmt.Errorf("POST %s: %s %s", url, resp.Status, got)
			}
			return err
		}
	}
	base := "http://" + c.APIAddr()
	// A thread keeps at most aitp.DefaultMaxMessages: a new one every 250
	// messages.
	var thread string
	sent := 0
	aitpMessage := func() error {
		if sent%250 == 0 {
			thread = aitpThread(b, hc, base+aitp.AgentPath(a.PeerID(), id))
		}
		sent++
		return post(thread+"/messages", `{"role":"user","content":"hello"}`, `"role":"user"`)()
	}
	for _, cs := range []struct {
		name string
		op   func() error
	}{
		{"http-binding", post(base+"/things/"+url.PathEscape(id)+"/actions/chat", `"hello"`, `"HELLO"`)},
		{"agora", post(base+agora.AgentPath(a.PeerID(), id), `{"protocolHash":null,"body":"hello"}`, `"body":"HELLO"`)},
		// A thread's message waits for the reply: an invocation per
		// message (the action is not a session).
		{"aitp-message", aitpMessage},
	} {
		if err := cs.op(); err != nil {
			b.Fatal(err)
		}
		b.Run(cs.name+"/c1", func(b *testing.B) { brSequential(b, cs.op, &brFigures{}) })
	}
}

// aitpThread creates an AITP thread with the agent at agent and returns
// its URL.
func aitpThread(b *testing.B, hc *http.Client, agent string) string {
	b.Helper()
	resp, err := hc.Post(agent+"/v1/thread", "application/json", strings.NewReader(`{"messages":[]}`))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	_, rest, ok := strings.Cut(string(body), `"id":"`)
	id, _, _ := strings.Cut(rest, `"`)
	if resp.StatusCode != http.StatusOK || !ok {
		b.Fatalf("create thread: %s %s", resp.Status, body)
	}
	return agent + "/v1/threads/" + id
}
