package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
	"github.com/lmosnode/lmosnode/node/mcpbridge"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// mcpClient connects the Go SDK's client to n's /mcp; changed receives
// one value per notifications/tools/list_changed, progress the messages
// of notifications/progress.
type mcpClient struct {
	*mcp.ClientSession
	changed  chan struct{}
	progress chan string
}

func connectMCP(t *testing.T, n *node.Node) *mcpClient {
	t.Helper()
	return connectMCPAt(t, n, "")
}

// connectMCPAt is connectMCP asking for protocol version version ("":
// the SDK's newest, 2026-07-28, with server/discover).
func connectMCPAt(t *testing.T, n *node.Node, version string) *mcpClient {
	t.Helper()
	c := &mcpClient{changed: make(chan struct{}, 64), progress: make(chan string, 64)}
	client := mcp.NewClient(&mcp.Implementation{Name: "lmosnode-test", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.changed <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.progress <- r.Params.Message
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + n.APIAddr() + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("mcp connect: %v", err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	c.ClientSession = sess
	return c
}

// cancelCall calls tool, cancels the call at its first progress (one
// value on progress per notification) and waits until the Thing tells
// cancelled that the action was cancelled.
func cancelCall[P any](ctx context.Context, t *testing.T, sess *mcp.ClientSession, tool string, progress <-chan P, cancelled <-chan struct{}) {
	t.Helper()
	cctx, cancel := context.WithCancel(ctx)
	params := &mcp.CallToolParams{Name: tool}
	params.SetProgressToken("cancel-" + tool)
	done := make(chan error, 1)
	go func() { _, err := sess.CallTool(cctx, params); done <- err }()
	select {
	case <-progress: // the action runs
	case <-ctx.Done():
		t.Fatal("wait: no progress")
	}
	cancel()
	select {
	case <-cancelled:
	case <-ctx.Done():
		t.Fatal("wait: the action was not cancelled")
	}
	if err := <-done; err == nil {
		t.Error("wait: the cancelled call returned a result")
	}
}

// tools lists every tool, page after page.
func (c *mcpClient) tools(t *testing.T) map[string]*mcp.Tool {
	t.Helper()
	all := map[string]*mcp.Tool{}
	for tool, err := range c.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		all[tool.Name] = tool
	}
	return all
}

// TestMCPServer: node B's MCP endpoint offers the actions of a Thing
// published on node A as tools and calls them across the nodes, with
// progress, cancellation and list_changed; group-scoped Things stay
// invisible and uncallable on a node outside the group.
func TestMCPServer(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	net := testnet.New(t, 3, testnet.Options{})
	net.Link(0, 1)
	net.Link(1, 2)
	net.Link(0, 2)
	a, b, c := net.Nodes[0], net.Nodes[1], net.Nodes[2]
	testnet.WaitFor(t, "every node has both others on the announce topic", waitLong, testnet.OnAnnounceTopic(net.Nodes, 2))
	id := testnet.UniqueID(t)
	cancelled := make(chan struct{}, 1)
	thing := matrixThing(make(chan string, 8)).OnAction("wait", func(ctx context.Context, _ lmosproto.Value, progress func(lmosproto.Value)) (lmosproto.Value, error) {
		progress(lmosproto.StringValue("waiting"))
		select {
		case <-ctx.Done():
			cancelled <- struct{}{}
			return lmosproto.Value{}, ctx.Err()
		case <-time.After(20 * time.Second):
			return lmosproto.StringValue("not cancelled"), nil
		}
	})
	if _, err := a.Register(matrixTD(t, id), thing); err != nil {
		t.Fatal(err)
	}
	// B learns the Thing while no MCP session is open (the bridge defers
	// building tools until one opens): the first client lists it at once.
	testnet.WaitFor(t, "B learned A's Thing", waitLong, func() (bool, string) {
		_, ok := b.Directory().Latest(a.PeerID(), id)
		return ok, ""
	})
	cl := connectMCP(t, b)
	name := func(action string) string { return mcpbridge.ToolName("Matrix "+id, action, a.PeerID(), id) }
	tools := cl.tools(t)
	if tools[name("add")] == nil {
		t.Fatalf("the first tools/list of B's first session lacks A's Thing (%d tools)", len(tools))
	}
	add := tools[name("add")]
	if !strings.Contains(add.Description, id) || add.InputSchema == nil {
		t.Errorf("add: %+v", add)
	}
	for _, fixed := range []string{mcpbridge.FindThings, mcpbridge.ReadProperty} {
		if tools[fixed] == nil {
			t.Errorf("tool %s missing", fixed)
		}
	}
	// Request-reply across the nodes; a non-object output is wrapped.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cl.CallTool(ctx, &mcp.CallToolParams{Name: name("add"), Arguments: map[string]any{"a": 2, "b": 40}})
	if err != nil || res.IsError {
		t.Fatalf("add: %v %+v", err, res)
	}
	if got := mcpbridge.TextOf(res.Content); got != "42" {
		t.Errorf("add: text %q, want 42", got)
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"output":42}` {
		t.Errorf("add: structuredContent %s", sc)
	}
	// A string input is wrapped as {"input": …}; the engine checks it.
	res, err = cl.CallTool(ctx, &mcp.CallToolParams{Name: name("note"), Arguments: map[string]any{"input": 7}})
	if err != nil || !res.IsError || !strings.Contains(mcpbridge.TextOf(res.Content), "400") {
		t.Errorf("note with a number: %v %+v", err, res)
	}
	// One request, many responses: progress notifications.
	params := &mcp.CallToolParams{Name: name("job")}
	params.SetProgressToken("job-1")
	res, err = cl.CallTool(ctx, params)
	if err != nil || res.IsError || mcpbridge.TextOf(res.Content) != `"done"` {
		t.Fatalf("job: %v %+v", err, res)
	}
	for _, want := range []string{`running: "step 1"`, `running: "step 2"`} {
		select {
		case got := <-cl.progress:
			if got != want {
				t.Errorf("progress %q, want %q", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("no progress %q", want)
		}
	}
	// Cancellation: the request's cancellation cancels the action on A.
	cancelCall(ctx, t, cl.ClientSession, name("wait"), cl.progress, cancelled)

	// find_things finds it, with its tools.
	res, err = cl.CallTool(ctx, &mcp.CallToolParams{Name: mcpbridge.FindThings, Arguments: map[string]any{"text": "matrix", "type": "tool"}})
	if err != nil || res.IsError {
		t.Fatalf("find_things: %v %+v", err, res)
	}
	var found mcpbridge.FindOutput
	sc, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(sc, &found); err != nil || len(found.Things) != 1 || !slices.Contains(found.Things[0].Tools, name("add")) {
		t.Errorf("find_things: %s", sc)
	}
	// The TD as a resource.
	rr, err := cl.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpbridge.ThingURI(id)})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, `"proof"`) {
		t.Errorf("resources/read: %v %+v", err, rr)
	}

	// A new publish on A: B's client hears list_changed and sees it.
	for len(cl.changed) > 0 {
		<-cl.changed
	}
	id2 := testnet.UniqueID(t)
	if _, err := a.Register(matrixTD(t, id2), matrixThing(make(chan string, 8))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cl.changed:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed after a publish on A")
	}
	if cl.tools(t)[mcpbridge.ToolName("Matrix "+id2, "add", a.PeerID(), id2)] == nil {
		t.Error("the new Thing's tool is not listed")
	}

	// tools/list is paged: with twenty more Things on A there are more
	// tools than one page holds, and the pages together list each once.
	want := len(cl.tools(t))
	var twenty []string
	for range 20 {
		td := matrixTD(t, testnet.UniqueID(t))
		want += len(td.Actions)
		twenty = append(twenty, td.ID)
		if _, err := a.Register(td, matrixThing(make(chan string, 8))); err != nil {
			t.Fatal(err)
		}
	}
	if want <= mcpbridge.DefaultPageSize {
		t.Fatalf("%d tools fit one page", want)
	}
	for deadline := time.Now().Add(waitLong); len(cl.tools(t)) != want && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if listed := cl.tools(t); len(listed) != want {
		// Which of A's Things B does not list, whether B holds it, and
		// whether a session without the client's cache lists it.
		var unlisted []string
		for _, id := range append([]string{id, id2}, twenty...) {
			if listed[mcpbridge.ToolName("Matrix "+id, "add", a.PeerID(), id)] == nil {
				_, held := b.Directory().Latest(a.PeerID(), id)
				unlisted = append(unlisted, fmt.Sprintf("%s (B holds it: %t, its bridge exposes %q)", id, held, b.MCP().ToolNames(a.PeerID(), id)))
			}
		}
		t.Fatalf("B lists the tools of all twenty: not after %s: %d tools, want %d (a new session lists %d); not listed: %s",
			waitLong, len(listed), want, len(connectMCP(t, b).tools(t)), unlisted)
	}
	pages, listed := 0, map[string]bool{}
	for cursor := ""; pages == 0 || cursor != ""; pages++ {
		page, err := cl.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Tools) > mcpbridge.DefaultPageSize {
			t.Fatalf("a page of %d tools", len(page.Tools))
		}
		for _, tool := range page.Tools {
			if listed[tool.Name] {
				t.Errorf("tool %s listed twice", tool.Name)
			}
			listed[tool.Name] = true
		}
		cursor = page.NextCursor
	}
	if pages < 2 || len(listed) != len(cl.tools(t)) {
		t.Errorf("%d pages, %d tools", pages, len(listed))
	}

	// Groups: A founds a group with B, publishes a Thing scoped to it.
	var info groupapi.GroupInfo
	apiDo(t, a, http.MethodPost, "/api/v1/groups", `{"name": "mcp"}`, http.StatusCreated, &info)
	var inv groupapi.Invitation
	apiDo(t, a, http.MethodPost, "/api/v1/groups/"+info.ID+"/invitations", fmt.Sprintf(`{"for": %q}`, b.PeerID()), http.StatusCreated, &inv)
	apiDo(t, b, http.MethodPost, "/api/v1/groups/join", fmt.Sprintf(`{"token": %q}`, inv.Token), http.StatusOK, nil)
	testnet.WaitFor(t, "A and B members", waitLong, testnet.All([]*node.Node{a, b}, hasMembers(info.ID, a, b)))
	gid := testnet.UniqueID(t)
	if _, err := a.Register(groupTD(t, gid, info.ID), diagnoser()); err != nil {
		t.Fatal(err)
	}
	diag := mcpbridge.ToolName("Diagnostics", "diagnose", a.PeerID(), gid)
	testnet.WaitFor(t, "member B lists the group's tool", waitLong, func() (bool, string) {
		return cl.tools(t)[diag] != nil, ""
	})
	res, err = cl.CallTool(ctx, &mcp.CallToolParams{Name: diag})
	if err != nil || res.IsError || mcpbridge.TextOf(res.Content) != `"ok"` {
		t.Fatalf("member calls the group's tool: %v %+v", err, res)
	}
	// C, outside the group: no tool, no search result, no read, no call.
	outsider := connectMCP(t, c)
	testnet.WaitFor(t, "C knows A's public Thing", waitLong, func() (bool, string) {
		return outsider.tools(t)[name("add")] != nil, ""
	})
	if outsider.tools(t)[diag] != nil {
		t.Error("the outsider lists the group's tool")
	}
	res, err = outsider.CallTool(ctx, &mcp.CallToolParams{Name: diag})
	if err == nil && !res.IsError {
		t.Errorf("the outsider called the group's tool: %+v", res)
	}
	res, err = outsider.CallTool(ctx, &mcp.CallToolParams{Name: mcpbridge.FindThings, Arguments: map[string]any{"text": "diagnostics"}})
	if sc, _ := json.Marshal(res.StructuredContent); err != nil || strings.Contains(string(sc), gid) {
		t.Errorf("the outsider found the group's Thing: %v %s", err, sc)
	}
	if _, err := outsider.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpbridge.ThingURI(gid)}); err == nil {
		t.Error("the outsider read the group's TD")
	}

	// B removed from the group: the tool leaves B's list, with
	// list_changed, and a call by its name gets no data.
	for len(cl.changed) > 0 {
		<-cl.changed
	}
	apiDo(t, a, http.MethodDelete, "/api/v1/groups/"+info.ID+"/members/"+b.PeerID().String(), "", http.StatusOK, nil)
	select {
	case <-cl.changed:
	case <-ctx.Done():
		t.Fatal("no list_changed on B after its removal from the group")
	}
	testnet.WaitFor(t, "B no longer lists the group's tool", waitLong, func() (bool, string) {
		return cl.tools(t)[diag] == nil, ""
	})
	res, err = cl.CallTool(ctx, &mcp.CallToolParams{Name: diag})
	if err == nil && (!res.IsError || strings.Contains(mcpbridge.TextOf(res.Content), "ok")) {
		t.Errorf("a removed member called the group's tool: %+v", res)
	}
}

// TestMCPToolsConfig: the node's mcpTools setting bounds the learned
// Things whose actions its MCP endpoint lists as tools: with 1, of the two
// Things B learned from A, one has tools.
func TestMCPToolsConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	net := testnet.New(t, 2, testnet.Options{Configure: func(i int, cfg *config.Config) {
		if i == 1 {
			cfg.MCPTools = 1
		}
	}})
	net.Link(0, 1)
	a, b := net.Nodes[0], net.Nodes[1]
	testnet.WaitFor(t, "both nodes on the announce topic", waitLong, testnet.OnAnnounceTopic(net.Nodes, 1))
	ids := []string{testnet.UniqueID(t) + "-1", testnet.UniqueID(t) + "-2"}
	for _, id := range ids {
		if _, err := a.Register(matrixTD(t, id), matrixThing(make(chan string, 8))); err != nil {
			t.Fatal(err)
		}
	}
	testnet.WaitFor(t, "B learned both Things", waitLong, func() (bool, string) {
		for _, id := range ids {
			if _, ok := b.Directory().Latest(a.PeerID(), id); !ok {
				return false, "missing " + id
			}
		}
		return true, ""
	})
	tools := connectMCP(t, b).tools(t)
	var with []string
	for _, id := range ids {
		if tools[mcpbridge.ToolName("Matrix "+id, "add", a.PeerID(), id)] != nil {
			with = append(with, id)
		}
	}
	if len(with) != 1 {
		t.Errorf("Things with tools: %q, want one of the two (mcpTools 1)", with)
	}
}

// TestMCPRevisions: node B's /mcp speaks MCP 2026-07-28 (stateless) and
// 2025-11-25 (sessions) at once. The Go SDK's client negotiating
// 2026-07-28, the Go SDK's client held to 2025-11-25 and the official
// TypeScript SDK's client (2025-11-25) each list the tools of a Thing
// published on node A and call one across the nodes, with progress; the
// Go clients cancel a running action on A and hear list_changed after a
// publish on A (on 2026-07-28 on their subscriptions/listen stream);
// 2026-07-28's tools/list carries the caching hints.
func TestMCPRevisions(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	net := testnet.New(t, 2, testnet.Options{})
	net.Link(0, 1)
	a, b := net.Nodes[0], net.Nodes[1]
	id := testnet.UniqueID(t)
	cancelled := make(chan struct{}, 1)
	thing := matrixThing(make(chan string, 8)).OnAction("wait", func(ctx context.Context, _ lmosproto.Value, progress func(lmosproto.Value)) (lmosproto.Value, error) {
		progress(lmosproto.StringValue("waiting"))
		select {
		case <-ctx.Done():
			cancelled <- struct{}{}
			return lmosproto.Value{}, ctx.Err()
		case <-time.After(20 * time.Second):
			return lmosproto.StringValue("not cancelled"), nil
		}
	})
	if _, err := a.Register(matrixTD(t, id), thing); err != nil {
		t.Fatal(err)
	}
	testnet.WaitFor(t, "B learned A's Thing", waitLong, func() (bool, string) {
		_, ok := b.Directory().Latest(a.PeerID(), id)
		return ok, ""
	})
	name := func(action string) string { return mcpbridge.ToolName("Matrix "+id, action, a.PeerID(), id) }
	for _, rev := range []string{mcpbridge.RevisionStateless, mcpbridge.RevisionSessions} {
		t.Run("go-"+rev, func(t *testing.T) {
			cl := connectMCPAt(t, b, rev)
			if got := cl.InitializeResult().ProtocolVersion; got != rev {
				t.Fatalf("negotiated %s, want %s", got, rev)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			page, err := cl.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The tools changed a moment ago: fresh for a tenth of that,
			// not for the whole CacheTTL (a minute).
			if rev == mcpbridge.RevisionStateless && (page.TTLMs >= 60_000 || page.CacheScope != "private") {
				t.Errorf("tools/list caching hints: ttlMs %d, cacheScope %q", page.TTLMs, page.CacheScope)
			}
			if cl.tools(t)[name("add")] == nil {
				t.Fatalf("tools/list lacks %s", name("add"))
			}
			params := &mcp.CallToolParams{Name: name("add"), Arguments: map[string]any{"a": 2, "b": 40}}
			params.SetProgressToken("add")
			res, err := cl.CallTool(ctx, params)
			if err != nil || res.IsError || mcpbridge.TextOf(res.Content) != "42" {
				t.Fatalf("add across the nodes: %v %+v", err, res)
			}
			params = &mcp.CallToolParams{Name: name("job")}
			params.SetProgressToken("job")
			if res, err = cl.CallTool(ctx, params); err != nil || res.IsError || mcpbridge.TextOf(res.Content) != `"done"` {
				t.Fatalf("job: %v %+v", err, res)
			}
			for _, want := range []string{`running: "step 1"`, `running: "step 2"`} {
				select {
				case got := <-cl.progress:
					if got != want {
						t.Errorf("progress %q, want %q", got, want)
					}
				case <-ctx.Done():
					t.Fatalf("no progress %q", want)
				}
			}
			// Cancellation (2026-07-28: the client closes the request's
			// stream; 2025-11-25: notifications/cancelled).
			cancelCall(ctx, t, cl.ClientSession, name("wait"), cl.progress, cancelled)
			// A publish on A: list_changed, and the tool is listed.
			for len(cl.changed) > 0 {
				<-cl.changed
			}
			id2 := testnet.UniqueID(t)
			if _, err := a.Register(matrixTD(t, id2), matrixThing(make(chan string, 8))); err != nil {
				t.Fatal(err)
			}
			select {
			case <-cl.changed:
			case <-ctx.Done():
				_, learned := b.Directory().Latest(a.PeerID(), id2)
				t.Fatalf("no notifications/tools/list_changed after a publish on A (B learned the new Thing: %t)", learned)
			}
			if cl.tools(t)[mcpbridge.ToolName("Matrix "+id2, "add", a.PeerID(), id2)] == nil {
				t.Error("the new Thing's tool is not listed")
			}
		})
	}
	// Over stdio, through the relay of `lmosnode mcp` (mcpbridge.Bridge).
	for _, rev := range []string{mcpbridge.RevisionStateless, mcpbridge.RevisionSessions} {
		t.Run("go-stdio-"+rev, func(t *testing.T) {
			hostIn, bridgeOut := io.Pipe()
			bridgeIn, hostOut := io.Pipe()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			relayed := make(chan error, 1)
			go func() {
				relayed <- mcpbridge.Bridge(ctx, func() (string, error) { return "http://" + b.APIAddr() + "/mcp", nil }, nil, bridgeIn, bridgeOut)
				_ = bridgeOut.Close()
			}()
			changed, progress := make(chan struct{}, 8), make(chan struct{}, 8)
			client := mcp.NewClient(&mcp.Implementation{Name: "stdio", Version: "0"}, &mcp.ClientOptions{
				ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress <- struct{}{} },
			})
			sess, err := client.Connect(ctx, &mcp.IOTransport{Reader: hostIn, Writer: hostOut}, &mcp.ClientSessionOptions{ProtocolVersion: rev})
			if err != nil {
				t.Fatal(err)
			}
			if got := sess.InitializeResult().ProtocolVersion; got != rev {
				t.Errorf("negotiated %s, want %s", got, rev)
			}
			res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: name("add"), Arguments: map[string]any{"a": 2, "b": 40}})
			if err != nil || res.IsError || mcpbridge.TextOf(res.Content) != "42" {
				t.Fatalf("add across the nodes: %v %+v", err, res)
			}
			// Cancellation through the relay.
			cancelCall(ctx, t, sess, name("wait"), progress, cancelled)
			id3 := testnet.UniqueID(t)
			if _, err := a.Register(matrixTD(t, id3), matrixThing(make(chan string, 8))); err != nil {
				t.Fatal(err)
			}
			select {
			case <-changed:
			case <-ctx.Done():
				_, learned := b.Directory().Latest(a.PeerID(), id3)
				t.Fatalf("no notifications/tools/list_changed through the relay (B learned the new Thing: %t)", learned)
			}
			_ = sess.Close()
			_ = hostOut.Close()
			if err := <-relayed; err != nil {
				t.Error(err)
			}
		})
	}
	t.Run("typescript-"+mcpbridge.RevisionSessions, func(t *testing.T) {
		out := runJSMCP(t, b, []map[string]any{
			{"op": "list"},
			{"op": "call", "name": name("add"), "arguments": map[string]any{"a": 1.5, "b": 2}},
			{"op": "call", "name": name("job"), "progress": true},
		})
		var hello struct {
			OK              bool   `json:"ok"`
			ProtocolVersion string `json:"protocolVersion"`
		}
		var list struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		var add, job struct {
			Result   *mcp.CallToolResult `json:"result"`
			Progress []struct{ Message string }
			Error    string `json:"error"`
		}
		for i, v := range []any{&hello, &list, &add, &job} {
			if err := json.Unmarshal([]byte(out[i]), v); err != nil {
				t.Fatalf("client.mjs line %d %q: %v", i, out[i], err)
			}
		}
		if !hello.OK || hello.ProtocolVersion != mcpbridge.RevisionSessions {
			t.Errorf("connected: %s", out[0])
		}
		if !slices.ContainsFunc(list.Tools, func(tool struct{ Name string }) bool { return tool.Name == name("add") }) {
			t.Errorf("tools/list lacks %s: %s", name("add"), out[1])
		}
		if add.Error != "" || add.Result == nil || add.Result.IsError || mcpbridge.TextOf(add.Result.Content) != "3.5" {
			t.Errorf("add across the nodes: %s", out[2])
		}
		if job.Error != "" || job.Result == nil || mcpbridge.TextOf(job.Result.Content) != `"done"` || len(job.Progress) != 2 {
			t.Errorf("job: %s", out[3])
		}
	})
}

// mcpInteropDir holds the official MCP TypeScript SDK's client (client.mjs).
var mcpInteropDir = filepath.Join("..", "scripts", "interop", "mcp")

// runJSMCP runs client.mjs against n's /mcp with the commands cmds and
// returns the lines it printed: the connection's, then one per command.
func runJSMCP(t *testing.T, n *node.Node, cmds []map[string]any) []string {
	t.Helper()
	testnet.NPM(t, mcpInteropDir)
	spec, _ := json.Marshal(map[string]any{"url": "http://" + n.APIAddr() + "/mcp"})
	var in bytes.Buffer
	for _, c := range cmds {
		line, _ := json.Marshal(c)
		in.Write(append(line, '\n'))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", string(spec))
	cmd.Dir = mcpInteropDir
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) != len(cmds)+1 {
		t.Fatalf("client.mjs: %v\n%s\n%s", err, out, stderr.Bytes())
	}
	return lines
}

// TestMCPProblems: /mcp answers its transport errors as RFC 9457
// problems, and its JSON-RPC errors as JSON-RPC.
func TestMCPProblems(t *testing.T) {
	n := testnet.New(t, 1, testnet.Options{}).Nodes[0]
	url := "http://" + n.APIAddr() + "/mcp"
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, tc := range []struct {
		name, method, body, contentType string
		headers                         map[string]string
		status                          int
		jsonrpc                         int // the JSON-RPC error code, or 0 for a problem
	}{
		{"Accept without text/event-stream", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, "application/json",
			map[string]string{"Accept": "application/json"}, http.StatusBadRequest, 0},
		{"unknown session", http.MethodGet, "", "", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": "none"}, http.StatusNotFound, 0},
		{"method", http.MethodPut, "", "", nil, http.StatusMethodNotAllowed, 0},
		{"2026-07-28 GET", http.MethodGet, "", "", map[string]string{"MCP-Protocol-Version": "2026-07-28", "Accept": "text/event-stream"}, http.StatusMethodNotAllowed, 0},
		{"2026-07-28 without the version header", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":` + meta + `}}`, "application/json",
			map[string]string{"Accept": "application/json, text/event-stream"}, http.StatusBadRequest, -32020},
		{"2026-07-28 unknown method", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"nope","params":{"_meta":` + meta + `}}`, "application/json",
			map[string]string{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "nope"}, http.StatusNotFound, -32601},
		// Text as sent or not at all: the SDK would decode these to U+FFFD.
		{"invalid UTF-8", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"` + "\xff" + `"}}}`, "application/json",
			map[string]string{"Accept": "application/json, text/event-stream"}, http.StatusBadRequest, 0},
		{"lone surrogate", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"s":"\ud800"}}}`, "application/json",
			map[string]string{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28"}, http.StatusBadRequest, 0},
		{"another charset", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, "application/json; charset=utf-16",
			map[string]string{"Accept": "application/json, text/event-stream"}, http.StatusUnsupportedMediaType, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, url, strings.NewReader(tc.body))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.jsonrpc != 0 {
				var msg struct{ Error struct{ Code int } }
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" || json.Unmarshal(body, &msg) != nil || msg.Error.Code != tc.jsonrpc {
					t.Errorf("%s %s, want the JSON-RPC error %d", ct, body, tc.jsonrpc)
				}
				return
			}
			var p lmosproto.Problem
			if ct := resp.Header.Get("Content-Type"); ct != lmosproto.ContentTypeProblemJSON || json.Unmarshal(body, &p) != nil || p.Status != tc.status || p.Detail == "" {
				t.Errorf("%s %s, want a problem", ct, body)
			}
			if tc.status == http.StatusMethodNotAllowed && resp.Header.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
		})
	}
}
