package node_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/mcpbridge"
)

// BenchmarkMCPCall: the same cross-node call (action add of a Thing on
// node A, from node B) through B's HTTP binding and through B's MCP
// endpoint (Streamable HTTP, the Go SDK client, on 2026-07-28 and on
// 2025-11-25), side by side.
//
//	go test -run '^$' -bench BenchmarkMCPCall ./node/
func BenchmarkMCPCall(b *testing.B) {
	net := testnet.New(b, 2, testnet.Options{})
	net.Link(0, 1)
	a, bn := net.Nodes[0], net.Nodes[1]
	id := testnet.UniqueID(b)
	if _, err := a.Register(matrixTD(b, id), matrixThing(make(chan string, 1))); err != nil {
		b.Fatal(err)
	}
	tool := mcpbridge.ToolName("Matrix "+id, "add", a.PeerID(), id)
	testnet.WaitFor(b, "B knows A's Thing", 30*time.Second, func() (bool, string) {
		return len(bn.MCP().ToolNames(a.PeerID(), id)) > 0, ""
	})
	b.Run("http-binding", func(b *testing.B) {
		url := "http://" + bn.APIAddr() + "/things/" + id + "/actions/add"
		for b.Loop() {
			resp, err := http.Post(url, "application/json", strings.NewReader(`{"a": 2, "b": 40}`))
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "42" {
				b.Fatalf("%d %s", resp.StatusCode, body)
			}
		}
	})
	for _, rev := range []string{mcpbridge.RevisionStateless, mcpbridge.RevisionSessions} {
		b.Run("mcp-"+rev, func(b *testing.B) {
			ctx := context.Background()
			sess, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + bn.APIAddr() + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: rev})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = sess.Close() }()
			if got := sess.InitializeResult().ProtocolVersion; got != rev {
				b.Fatalf("negotiated %s", got)
			}
			for b.Loop() {
				res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"a": 2, "b": 40}})
				if err != nil || res.IsError {
					b.Fatalf("%v %+v", err, res)
				}
			}
		})
	}
}
