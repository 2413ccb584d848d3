package node_test

// The overhead of a cross-node call through the A2A bridge against the
// same call through the HTTP binding (issue 13), in one run:
//
//	go test -run '^$' -bench BridgeA2A ./node
//
// Node A owns an agent (Go handlers: action "chat" answers its input in
// upper case); a client of node B calls it through B's HTTP binding (POST
// /things/{id}/actions/chat) and through B's A2A bridge (JSON-RPC
// SendMessage to B's endpoint for the agent, answered with the completed
// task). Both go B → libp2p → A's engine → handler.

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/internal/benchtab"
	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/a2abridge"
)

func BenchmarkBridgeA2ACrossNode(b *testing.B) {
	hc := brHTTPClient(b)
	a, c := brPair(b)
	id := testnet.UniqueID(b)
	a2aAgent(b, a, id)
	brWaitKnown(b, c, id)

	viaHTTP := "http://" + c.APIAddr() + "/things/" + url.PathEscape(id) + "/actions/chat"
	viaA2A := "http://" + c.APIAddr() + a2abridge.AgentPath(a.PeerID(), id)
	httpCall := func(int) error {
		resp, err := hc.Post(viaHTTP, "application/json", strings.NewReader(`"hello"`))
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil && (resp.StatusCode != http.StatusOK || string(body) != `"HELLO"`) {
			err = fmt.Errorf("POST %s: %s %s", viaHTTP, resp.Status, body)
		}
		return err
	}
	// rpc is a JSON-RPC call of body (with header A2A-Version: version,
	// unless empty) whose answer must contain want.
	rpc := func(body, version, want string) func(int) error {
		return func(int) error {
			req, _ := http.NewRequest(http.MethodPost, viaA2A, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if version != "" {
				req.Header.Set("A2A-Version", version)
			}
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && !bytes.Contains(got, []byte(want)) {
				err = fmt.Errorf("%s: %s", body, got)
			}
			return err
		}
	}
	a2aCall := rpc(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hello"}]}}}`,
		a2abridge.ProtocolVersion, `"TASK_STATE_COMPLETED"`)
	a2a03Call := rpc(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hello"}]}}}`,
		"", `"state":"completed"`)
	for _, check := range []func(int) error{httpCall, a2aCall, a2a03Call} {
		if err := check(0); err != nil {
			b.Fatal(err)
		}
	}
	cases := []struct {
		name, label string
		op          func(int) error
	}{
		{"http-binding", "", httpCall},
		{"a2a", "A2A SendMessage via B → A (Go handler)", a2aCall},
		{"a2a-0.3", "A2A 0.3 message/send via B → A (Go handler)", a2a03Call},
	}
	figs := map[string]*brFigures{}
	for _, cs := range cases {
		f := &brFigures{}
		figs[cs.name] = f
		b.Run(cs.name+"/c1", func(b *testing.B) { brSequential(b, func() error { return cs.op(0) }, f) })
		b.Run(cs.name+"/c64", func(b *testing.B) { brParallel(b, cs.op, f) })
	}
	base := figs["http-binding"]
	const baseline = "HTTP binding via B (POST action) → A"
	for _, cs := range cases[1:] {
		f := figs[cs.name]
		if base.p50 == 0 || base.opsPerS == 0 || f.p50 == 0 || f.opsPerS == 0 {
			continue // filtered out by -bench
		}
		benchtab.Print(benchtab.Row{Row: "13", Case: cs.label, Metric: "p50 (c=1)", Unit: "µs", LMOS: us(f.p50), Base: us(base.p50), Baseline: baseline})
		benchtab.Print(benchtab.Row{Row: "13", Case: cs.label, Metric: "p99 (c=1)", Unit: "µs", LMOS: us(f.p99), Base: us(base.p99), Baseline: baseline})
		benchtab.Print(benchtab.Row{Row: "13", Case: cs.label, Metric: "throughput (c=64)", Unit: "ops/s", LMOS: f.opsPerS, Base: base.opsPerS, Baseline: baseline})
	}
}
