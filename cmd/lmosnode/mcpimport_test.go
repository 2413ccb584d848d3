package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
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
			// Long-running: each step takes a while. (A progress
			// notification that reaches a client after the result is
			// dropped; the SDKs handle notifications apart from results.)
			if tok := req.Params.GetProgressToken(); tok != nil {
				for i, m := range []string{"thinking", "writing"} {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i + 1), Message: m})
					select {
					case <-ctx.Done():
						return nil, greetOut{}, ctx.Err()
					case <-time.After(100 * time.Millisecond):
					}
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

	// B's HTTP binding. The server's progress makes the invocation
	// long-running: 201 with a status URL, or 200 if it ended first.
	resp, err := http.Post("http://"+b.APIAddr()+"/things/"+thingID+"/actions/greet", "application/json", strings.NewReader(`{"name": "B"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		if strings.TrimSpace(string(body)) != `{"greeting":"Hello, B"}` {
			t.Fatalf("HTTP binding: %s", body)
		}
	case http.StatusCreated:
		var st struct {
			Status string          `json:"status"`
			Output json.RawMessage `json:"output"`
		}
		href := resp.Header.Get("Location")
		testnet.WaitFor(t, "the invocation completes", 30*time.Second, func() (bool, string) {
			r, err := http.Get("http://" + b.APIAddr() + href)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = r.Body.Close() }()
			if err := json.NewDecoder(r.Body).Decode(&st); err != nil {
				t.Fatal(err)
			}
			return st.Status == "completed", st.Status
		})
		if string(st.Output) != `{"greeting":"Hello, B"}` {
			t.Fatalf("HTTP binding: output %s", st.Output)
		}
	default:
		t.Fatalf("HTTP binding: %d %s", resp.StatusCode, body)
	}

	// B's MCP endpoint, with the server's progress relayed as LMOS
	// running statuses and back.
	progress := make(chan string, 8)
	cl := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params.Message },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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
		select {
		case got := <-progress:
			if got != want {
				t.Errorf("progress %q, want %q", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("no progress %q", want)
		}
	}

	// A new tool on the server: a new Thing on A. It runs until
	// cancelled.
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	mcp.AddTool(server, &mcp.Tool{Name: "hold", Description: "Holds until cancelled."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ greetIn) (*mcp.CallToolResult, greetOut, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, greetOut{}, ctx.Err()
	})
	holdID := ""
	testnet.WaitFor(t, "the new tool is a Thing on A", 30*time.Second, func() (bool, string) {
		infos := a.MCPImports().List()
		if len(infos) != 1 || len(infos[0].Things) != 2 {
			return false, ""
		}
		holdID = infos[0].Things[1].ThingID // sorted by tool: greet, hold
		return true, ""
	})
	testnet.WaitFor(t, "B lists the new tool", 30*time.Second, func() (bool, string) {
		return len(b.MCP().ToolNames(a.PeerID(), holdID)) == 1, ""
	})
	// Cancelling the call on B's MCP endpoint cancels it on the imported
	// server: MCP → cancelAction → A → MCP notifications/cancelled.
	hctx, hcancel := context.WithCancel(ctx)
	held := make(chan error, 1)
	go func() {
		_, err := sess.CallTool(hctx, &mcp.CallToolParams{Name: b.MCP().ToolNames(a.PeerID(), holdID)[0], Arguments: map[string]any{"name": "x"}})
		held <- err
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("hold did not start")
	}
	hcancel()
	select {
	case <-cancelled:
	case <-ctx.Done():
		t.Fatal("the imported server's call was not cancelled")
	}
	if err := <-held; err == nil {
		t.Error("the cancelled call returned a result")
	}

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

// mcpHelperEnv makes the test binary an MCP server on stdio
// (runMCPHelper) instead of running tests: the command the node launches
// in TestMCPImportStdio.
const mcpHelperEnv = "LMOS_TEST_MCP_HELPER"

// runMCPHelper serves MCP on stdio with the Go SDK: pid returns the
// process id, crash ends the process.
func runMCPHelper() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "helper", Version: "0.1.0"}, nil)
	type none struct{}
	type pidOut struct {
		PID int `json:"pid"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "The server's process id."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, pidOut, error) {
		return nil, pidOut{PID: os.Getpid()}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Ends the server's process."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, none, error) {
		os.Exit(3)
		return nil, none{}, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// callPID calls the helper's pid tool through n's HTTP binding.
func callPID(t *testing.T, n *node.Node, thingID string) (int, bool) {
	t.Helper()
	resp, err := http.Post("http://"+n.APIAddr()+"/things/"+thingID+"/actions/pid", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out struct {
		PID int `json:"pid"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
		return 0, false
	}
	return out.PID, true
}

// TestMCPImportStdio: a command speaking MCP on stdio, imported with
// `lmosnode mcp import -- COMMAND`, is launched by node A and called from
// node B; when it dies A relaunches it and its Things come back; a
// restarted node resumes the import from its home.
func TestMCPImportStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	bin := buildBinary(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	net := testnet.New(t, 2, testnet.Options{})
	net.Link(0, 1)
	a, b := net.Nodes[0], net.Nodes[1]
	out := runOK(t, bin, "mcp", "import", "--home", a.Config().Home, "--", "env", mcpHelperEnv+"=1", self)
	if !strings.Contains(out, "connected") {
		t.Fatalf("mcp import printed %q", out)
	}
	pidThing := ""
	for _, th := range a.MCPImports().List()[0].Things {
		if th.Tool == "pid" {
			pidThing = th.ThingID
		}
	}
	if pidThing == "" {
		t.Fatalf("no Thing for tool pid: %+v", a.MCPImports().List())
	}
	testnet.WaitFor(t, "B knows the imported tools", 30*time.Second, func() (bool, string) {
		return len(b.MCP().ToolNames(a.PeerID(), pidThing)) == 1, ""
	})
	first, ok := callPID(t, b, pidThing)
	if !ok || first == os.Getpid() {
		t.Fatalf("pid through B: %d %v", first, ok)
	}
	// The server dies: A relaunches it and publishes its tools again.
	crash := strings.Replace(pidThing, ":pid", ":crash", 1)
	resp, err := http.Post("http://"+b.APIAddr()+"/things/"+crash+"/actions/crash", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Fatal("crash answered 200")
	}
	var second int
	testnet.WaitFor(t, "the relaunched server answers through B", 60*time.Second, func() (bool, string) {
		pid, ok := callPID(t, b, pidThing)
		second = pid
		return ok && pid != first, a.MCPImports().List()[0].State
	})

	// A restarted node resumes the import from its home.
	cfg := a.Config()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a2, err := node.New(cfg, node.WithLogger(testnet.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a2.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	testnet.WaitFor(t, "the restarted node serves the import", 60*time.Second, func() (bool, string) {
		pid, ok := callPID(t, a2, pidThing)
		return ok && pid != second, fmt.Sprint(a2.MCPImports().List())
	})
}
