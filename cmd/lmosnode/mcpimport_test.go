package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/mcpbridge"
)

type greetIn struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

// goMCPServer is an MCP server built with the Go SDK, served on
// 127.0.0.1: tool greet (structured output, two progress notifications).
func goMCPServer(t *testing.T) (*mcp.Server, string, func()) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets someone.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, greetOut, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				for i, m := range []string{"thinking", "writing"} {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i + 1), Message: m})
				}
			}
			return nil, greetOut{Greeting: "Hello, " + in.Name}, nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
	go func() { _ = srv.Serve(ln) }()
	stop := func() {
		_ = srv.Close()
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	}
	t.Cleanup(stop)
	return s, "http://" + ln.Addr().String() + "/mcp", stop
}

// TestMCPImport: an MCP server built with the Go SDK, imported on node A
// with `lmosnode mcp import`, is called from node B through the HTTP
// binding and through B's MCP endpoint (with its progress); a tool added
// to the server becomes a Thing, and when the server goes away its
// Things are withdrawn.
func TestMCPImport(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	bin := buildBinary(t)
	server, url, stopServer := goMCPServer(t)
	net := testnet.New(t, 2, testnet.Options{})
	net.Link(0, 1)
	a, b := net.Nodes[0], net.Nodes[1]

	out := runOK(t, bin, "mcp", "import", url, "--home", a.Config().Home)
	if !strings.Contains(out, "connected") || !strings.Contains(out, "greet") {
		t.Fatalf("mcp import printed %q", out)
	}
	infos := a.MCPImports().List()
	if len(infos) != 1 || len(infos[0].Things) != 1 {
		t.Fatalf("imports: %+v", infos)
	}
	thingID := infos[0].Things[0].ThingID
	if !strings.Contains(runOK(t, bin, "mcp", "imports", "--home", a.Config().Home), thingID) {
		t.Error("mcp imports does not list the Thing")
	}
	testnet.WaitFor(t, "B knows the imported tool", 30*time.Second, func() (bool, string) {
		return len(b.MCP().ToolNames(a.PeerID(), thingID)) == 1, ""
	})

	// B's HTTP binding.
	resp, err := http.Post("http://"+b.APIAddr()+"/things/"+thingID+"/actions/greet", "application/json", strings.NewReader(`{"name": "B"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != `{"greeting":"Hello, B"}` {
		t.Fatalf("HTTP binding: %d %s", resp.StatusCode, body)
	}

	// B's MCP endpoint, with the server's progress relayed as LMOS
	// running statuses and back.
	progress := make(chan string, 8)
	cl := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params.Message },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + b.APIAddr() + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sess.Close() }()
	params := &mcp.CallToolParams{Name: b.MCP().ToolNames(a.PeerID(), thingID)[0], Arguments: map[string]any{"name": "MCP"}}
	params.SetProgressToken("g")
	res, err := sess.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("B's MCP: %v %+v", err, res)
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"greeting":"Hello, MCP"}` {
		t.Errorf("B's MCP: structuredContent %s", sc)
	}
	for _, want := range []string{`running: "thinking"`, `running: "writing"`} {
		if got := <-progress; got != want {
			t.Errorf("progress %q, want %q", got, want)
		}
	}

	// A new tool on the server: a new Thing on A.
	mcp.AddTool(server, &mcp.Tool{Name: "shout", Description: "Shouts."}, func(_ context.Context, _ *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, greetOut, error) {
		return nil, greetOut{Greeting: strings.ToUpper(in.Name)}, nil
	})
	testnet.WaitFor(t, "the new tool is a Thing on A", 30*time.Second, func() (bool, string) {
		infos := a.MCPImports().List()
		return len(infos) == 1 && len(infos[0].Things) == 2, ""
	})

	// The server goes away: its Things are withdrawn on A and, through
	// their tombstones, from B's tools.
	stopServer()
	testnet.WaitFor(t, "the Things are withdrawn", 60*time.Second, func() (bool, string) {
		_, own := a.Directory().Get(a.PeerID(), thingID)
		return !own && len(b.MCP().ToolNames(a.PeerID(), thingID)) == 0, a.MCPImports().List()[0].State
	})
	runOK(t, bin, "mcp", "remove", mcpbridge.Source{URL: url}.ID(), "--home", a.Config().Home)
	if len(a.MCPImports().List()) != 0 {
		t.Error("the import was not removed")
	}
}
