package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/mcpbridge"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// mcpInteropDir holds the official MCP TypeScript SDK client
// (@modelcontextprotocol/sdk, pinned in package-lock.json).
var mcpInteropDir = filepath.Join("..", "..", "scripts", "interop", "mcp")

// jsMCP is client.mjs running: the test sends it commands and reads its
// answers, one JSON line each.
type jsMCP struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan string
}

func startJSMCP(t *testing.T, spec map[string]any) *jsMCP {
	t.Helper()
	testnet.NPM(t, mcpInteropDir)
	arg, _ := json.Marshal(spec)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, "node", "client.mjs", string(arg))
	cmd.Dir = mcpInteropDir
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &jsMCP{t: t, in: in, lines: make(chan string, 16)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cancel()
			<-done
		}
		cancel()
	})
	var hello struct{ OK bool }
	c.next(&hello)
	if !hello.OK {
		t.Fatal("client.mjs did not connect")
	}
	return c
}

func (c *jsMCP) next(v any) {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatal("client.mjs exited")
		}
		if err := json.Unmarshal([]byte(line), v); err != nil {
			c.t.Fatalf("client.mjs printed %q: %v", line, err)
		}
	case <-time.After(90 * time.Second):
		c.t.Fatal("client.mjs did not answer")
	}
}

func (c *jsMCP) do(cmd map[string]any, v any) {
	c.t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	c.next(v)
}

type jsTool struct {
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	InputSchema  map[string]any `json:"inputSchema"`
	OutputSchema map[string]any `json:"outputSchema"`
}

type jsCall struct {
	Result struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	} `json:"result"`
	Progress []struct {
		Progress float64 `json:"progress"`
		Message  string  `json:"message"`
	} `json:"progress"`
	Error string `json:"error"`
}

func (c jsCall) text() string {
	var b strings.Builder
	for _, x := range c.Result.Content {
		b.WriteString(x.Text)
	}
	return b.String()
}

// mcpTD is a Tool with add (request-reply), job (progress) and wait
// (runs until cancelled).
func mcpTD(t *testing.T, id string) *lmosproto.TD {
	t.Helper()
	td, err := lmosproto.ParseTD([]byte(fmt.Sprintf(`{
	  "@context": ["https://www.w3.org/2019/wot/td/v1", "https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
	  "@type": ["lmos:Tool"], "id": %q, "title": "Calculator", "description": "Adds numbers.",
	  "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}}, "security": "nosec_sc",
	  "lmos:capabilities": [{"lmos:id": "add", "lmos:version": "1.0.0"}],
	  "actions": {
	    "add": {"description": "a + b", "input": {"type": "object", "required": ["a", "b"], "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
	            "output": {"type": "object", "properties": {"sum": {"type": "number", "unit": "om:one"}}}, "forms": [{"href": "https://calc.invalid/add"}]},
	    "job": {"input": {"type": "integer", "minimum": 1}, "output": {"type": "string"}, "forms": [{"href": "https://calc.invalid/job"}]},
	    "wait": {"forms": [{"href": "https://calc.invalid/wait"}]}
	  }
	}`, id)))
	if err != nil {
		t.Fatal(err)
	}
	return td
}

func mcpThing(cancelled chan<- struct{}) *interact.Thing {
	return interact.NewThing().
		OnAction("add", func(_ context.Context, in lmosproto.Value, _ func(lmosproto.Value)) (lmosproto.Value, error) {
			var ab struct{ A, B float64 }
			if err := in.Decode(&ab); err != nil {
				return lmosproto.Value{}, err
			}
			return lmosproto.ValueOf(map[string]float64{"sum": ab.A + ab.B})
		}).
		OnAction("job", func(ctx context.Context, in lmosproto.Value, progress func(lmosproto.Value)) (lmosproto.Value, error) {
			var n int
			if err := in.Decode(&n); err != nil {
				return lmosproto.Value{}, err
			}
			// A long-running action: its steps take a while. (The
			// TypeScript SDK drops a progress notification it reads in the
			// same chunk as the result: it handles notifications a
			// microtask later, after the result has retired the token.)
			for i := 1; i <= n; i++ {
				progress(lmosproto.StringValue(fmt.Sprintf("step %d", i)))
				select {
				case <-ctx.Done():
					return lmosproto.Value{}, ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
			}
			return lmosproto.StringValue("done"), nil
		}).
		OnAction("wait", func(ctx context.Context, _ lmosproto.Value, progress func(lmosproto.Value)) (lmosproto.Value, error) {
			progress(lmosproto.StringValue("waiting"))
			select {
			case <-ctx.Done():
				cancelled <- struct{}{}
				return lmosproto.Value{}, ctx.Err()
			case <-time.After(60 * time.Second):
				return lmosproto.StringValue("not cancelled"), nil
			}
		})
}

// TestMCPInterop: the official MCP TypeScript SDK client against node B,
// over Streamable HTTP and over stdio through `lmosnode mcp`: it lists the
// tools of a Thing published on node A, calls one across the nodes,
// receives progress, cancels a running action and hears list_changed
// after a new publish on A.
func TestMCPInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs node and two lmosnode nodes")
	}
	bin := buildBinary(t)
	net := testnet.New(t, 2, testnet.Options{})
	net.Link(0, 1)
	a, b := net.Nodes[0], net.Nodes[1]
	id := testnet.UniqueID(t)
	cancelled := make(chan struct{}, 4)
	if _, err := a.Register(mcpTD(t, id), mcpThing(cancelled)); err != nil {
		t.Fatal(err)
	}
	thermo := testnet.UniqueID(t)
	thermostat(t, a, thermo)
	name := func(action string) string { return mcpbridge.ToolName("Calculator", action, a.PeerID(), id) }
	testnet.WaitFor(t, "B knows A's Things", 30*time.Second, func() (bool, string) {
		return len(b.MCP().ToolNames(a.PeerID(), id)) == 3 && len(b.MCP().ToolNames(a.PeerID(), thermo)) == 3, ""
	})
	transports := map[string]map[string]any{
		"http":  {"url": "http://" + b.APIAddr() + "/mcp"},
		"stdio": {"command": bin, "args": []string{"mcp", "--home", b.Config().Home}},
	}
	for _, tr := range []string{"http", "stdio"} {
		t.Run(tr, func(t *testing.T) {
			c := startJSMCP(t, transports[tr])
			var list struct {
				Tools []jsTool `json:"tools"`
				Error string   `json:"error"`
			}
			c.do(map[string]any{"op": "list"}, &list)
			tools := map[string]jsTool{}
			for _, tool := range list.Tools {
				tools[tool.Name] = tool
			}
			add, ok := tools[name("add")]
			if !ok {
				t.Fatalf("tools/list has no %s: %+v %s", name("add"), list.Tools, list.Error)
			}
			if add.Description == "" || add.OutputSchema == nil {
				t.Errorf("add: %+v", add)
			}
			if _, unit := add.OutputSchema["properties"].(map[string]any)["sum"].(map[string]any)["unit"]; unit {
				t.Error("the WoT annotation unit reached the outputSchema")
			}
			// Across the nodes; the SDK checks structuredContent against the outputSchema.
			var call jsCall
			c.do(map[string]any{"op": "call", "name": name("add"), "arguments": map[string]any{"a": 1.5, "b": 2}}, &call)
			if call.Error != "" || call.Result.IsError || string(call.Result.StructuredContent) != `{"sum":3.5}` {
				t.Fatalf("add: %+v", call)
			}
			// read_property across the nodes; the SDK checks its outputSchema.
			call = jsCall{}
			c.do(map[string]any{"op": "call", "name": mcpbridge.ReadProperty, "arguments": map[string]any{"thing": thermo, "property": "target"}}, &call)
			if call.Error != "" || call.Result.IsError || string(call.Result.StructuredContent) != `{"value":"unset"}` {
				t.Errorf("read_property: %+v", call)
			}
			// find_things by capability and semver range.
			call = jsCall{}
			c.do(map[string]any{"op": "call", "name": mcpbridge.FindThings, "arguments": map[string]any{"capability": "add@^1.0"}}, &call)
			// (The thermostat has no capability add; the Calculators
			// published by the earlier subtest have.)
			var hits mcpbridge.FindOutput
			if err := json.Unmarshal(call.Result.StructuredContent, &hits); err != nil || len(hits.Things) == 0 {
				t.Fatalf("find_things: %v %+v", err, call)
			}
			hit := false
			for _, th := range hits.Things {
				if th.ID == thermo || len(th.Capabilities) != 1 || th.Capabilities[0].ID != "add" {
					t.Errorf("find_things found %+v", th)
				}
				hit = hit || th.ID == id && len(th.Tools) == 3 && th.Publisher == a.PeerID().String()
			}
			if !hit {
				t.Errorf("find_things: %s lacks %s with its tools", call.Result.StructuredContent, id)
			}
			// The signed TD as a resource.
			var read struct {
				Result struct {
					Contents []struct {
						URI, MimeType, Text string
					} `json:"contents"`
				} `json:"result"`
				Error string `json:"error"`
			}
			c.do(map[string]any{"op": "read", "uri": mcpbridge.ThingURI(id)}, &read)
			if len(read.Result.Contents) != 1 || !strings.Contains(read.Result.Contents[0].Text, `"eddsa-jcs-2022"`) {
				t.Errorf("resources/read: %+v", read)
			}
			// Progress: a wrapped input, three running statuses.
			call = jsCall{}
			c.do(map[string]any{"op": "call", "name": name("job"), "arguments": map[string]any{"input": 3}, "progress": true}, &call)
			if call.Error != "" || call.Result.IsError || call.text() != `"done"` {
				t.Fatalf("job: %+v", call)
			}
			if len(call.Progress) != 3 || call.Progress[2].Message != `running: "step 3"` || call.Progress[2].Progress != 3 {
				t.Errorf("job progress: %+v", call.Progress)
			}
			// An invalid input is a tool error, not a crash.
			call = jsCall{}
			c.do(map[string]any{"op": "call", "name": name("job"), "arguments": map[string]any{"input": 0}}, &call)
			if call.Error == "" && !call.Result.IsError {
				t.Errorf("job with 0: %+v", call)
			}
			// Cancellation: aborting the request cancels the action on A.
			var abort struct {
				Aborted bool `json:"aborted"`
			}
			c.do(map[string]any{"op": "abort", "name": name("wait")}, &abort)
			if !abort.Aborted {
				t.Fatalf("wait was not aborted")
			}
			select {
			case <-cancelled:
			case <-time.After(30 * time.Second):
				t.Fatal("the action on A was not cancelled")
			}
			// A new publish on A → list_changed on B's client.
			var count struct{ Changed int }
			c.do(map[string]any{"op": "changed", "since": -1}, &count)
			id2 := testnet.UniqueID(t)
			if _, err := a.Register(mcpTD(t, id2), mcpThing(cancelled)); err != nil {
				t.Fatal(err)
			}
			var after struct{ Changed int }
			c.do(map[string]any{"op": "changed", "since": count.Changed}, &after)
			list.Tools = nil
			c.do(map[string]any{"op": "list"}, &list)
			found := false
			for _, tool := range list.Tools {
				found = found || tool.Name == mcpbridge.ToolName("Calculator", "add", a.PeerID(), id2)
			}
			if !found {
				t.Error("after list_changed, the new Thing's tool is not listed")
			}
		})
	}
}

// TestMCPWithAPIToken: /mcp is under the API's token like every route;
// `lmosnode mcp` sends the token of the home or $LMOS_API_TOKEN, and
// without it the host's initialize fails with the node's 401.
func TestMCPWithAPIToken(t *testing.T) {
	const token = "mcp-test-token-0123456789abcdef0123"
	bin := buildBinary(t)
	n := testnet.New(t, 1, testnet.Options{Configure: func(_ int, cfg *config.Config) { cfg.APIToken = token }}).Nodes[0]
	resp, err := http.Post("http://"+n.APIAddr()+"/mcp", "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/mcp without the token: %s", resp.Status)
	}
	connect := func(env ...string) (*mcp.ClientSession, error) {
		cmd := command(t, bin, "mcp", "--home", n.Config().Home)
		cmd.Env = append(cmd.Env, env...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	}
	if sess, err := connect(); err == nil {
		_ = sess.Close()
		t.Fatal("lmosnode mcp without the token connected")
	} else if !strings.Contains(err.Error(), "401") {
		t.Errorf("without the token: %v, want the node's 401", err)
	}
	sess, err := connect(config.APITokenEnv + "=" + token)
	if err != nil {
		t.Fatalf("lmosnode mcp with the token: %v", err)
	}
	defer func() { _ = sess.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: mcpbridge.FindThings, Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("find_things through lmosnode mcp: %v %+v", err, res)
	}
}

// TestMCPStdioNodeRestart: the host's session through `lmosnode mcp`
// survives a restart of the node (which listens on another port after
// it): the next call works, and the host hears list_changed.
func TestMCPStdioNodeRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a node")
	}
	bin := buildBinary(t)
	cfg := testnet.Config(t)
	start := func() *node.Node {
		n, err := node.New(cfg, node.WithLogger(testnet.Logger(t)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := start()
	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: command(t, bin, "mcp", "--home", cfg.Home)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sess.Close() }()
	find := func() error {
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: mcpbridge.FindThings, Arguments: map[string]any{}})
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error: %s", mcpbridge.TextOf(res.Content))
		}
		return err
	}
	if err := find(); err != nil {
		t.Fatal(err)
	}
	before := n.APIAddr()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = start()
	t.Cleanup(func() { _ = n.Close() })
	if n.APIAddr() == before {
		t.Logf("the node listens on %s again", before)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no list_changed after the node came back")
	}
	if err := find(); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
}
