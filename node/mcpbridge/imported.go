package mcpbridge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lmosnode/lmosnode/node/backoff"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// imported supervises one MCP server: it connects, publishes a Thing per
// tool, follows tools/list_changed, forwards calls, and when the session
// ends withdraws the Things and reconnects with backoff.
type imported struct {
	im       *Imports
	src      Source
	id       string
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	firstTry chan struct{} // closed after the first connection attempt (tried)
	firstOne sync.Once
	changed  chan struct{} // tools/list_changed

	mu        sync.Mutex
	state     string
	err       string
	server    string
	sess      *mcp.ClientSession
	published map[string][32]byte // tool name → hash of the TD published
	progress  map[string]*interact.Exchange
}

func newImported(im *Imports, s storedImport) *imported {
	i := &imported{im: im, src: s.Source, id: s.ID(), done: make(chan struct{}), firstTry: make(chan struct{}),
		changed: make(chan struct{}, 1), state: StateConnecting, published: map[string][32]byte{}, progress: map[string]*interact.Exchange{}}
	// The tools last published: withdrawn if the server is gone at start.
	for _, t := range s.Tools {
		i.published[t] = [32]byte{}
	}
	i.ctx, i.cancel = context.WithCancel(im.ctx)
	return i
}

func (i *imported) stop() {
	i.cancel()
	<-i.done
}

func (i *imported) toolNames() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	names := make([]string, 0, len(i.published))
	for n := range i.published {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (i *imported) info() ImportInfo {
	i.mu.Lock()
	defer i.mu.Unlock()
	info := ImportInfo{ID: i.id, Source: i.src, State: i.state, Error: i.err, Server: i.server, Things: []ImportedThing{}}
	if i.state == StateConnected {
		for n := range i.published {
			info.Things = append(info.Things, ImportedThing{Tool: n, ThingID: i.thingID(n)})
		}
	}
	slices.SortFunc(info.Things, func(a, b ImportedThing) int { return strings.Compare(a.Tool, b.Tool) })
	return info
}

// thingID is the id of the Thing of tool name.
func (i *imported) thingID(name string) string {
	return "urn:lmos:mcp:" + i.id + ":" + url.PathEscape(name)
}

func (i *imported) setState(state, err string) {
	i.mu.Lock()
	i.state, i.err = state, err
	i.mu.Unlock()
}

// run is the supervisor loop.
func (i *imported) run() {
	defer close(i.done)
	bo := backoff.New(i.im.cfg.MinBackoff, i.im.cfg.MaxBackoff)
	for {
		err := i.session()
		i.tried()
		if i.ctx.Err() != nil {
			return
		}
		i.setState(StateDisconnected, err.Error())
		i.im.log.Warn("mcp server import disconnected", "import", i.id, "err", err)
		// Gone: its Things go offline (withdrawn) until it is back.
		wctx, cancel := context.WithTimeout(i.ctx, 30*time.Second)
		if werr := i.withdrawAll(wctx); werr != nil {
			i.im.log.Warn("mcp import: withdrawing Things", "import", i.id, "err", werr)
		}
		cancel()
		i.im.toolsChanged()
		select {
		case <-i.ctx.Done():
			return
		case <-time.After(bo.NextBackOff()):
		}
		if i.connectedOnce() {
			bo.Reset()
		}
	}
}

// tried ends Add's wait: the first connection succeeded (its tools are
// published) or failed.
func (i *imported) tried() { i.firstOne.Do(func() { close(i.firstTry) }) }

func (i *imported) connectedOnce() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.server != ""
}

// session connects once and serves until the session ends; it returns
// why it ended.
func (i *imported) session() error {
	client := mcp.NewClient(&mcp.Implementation{Name: "lmosnode", Version: Version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case i.changed <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: i.onProgress,
	})
	var tr mcp.Transport
	if i.src.URL != "" {
		tr = &mcp.StreamableClientTransport{Endpoint: i.src.URL}
	} else {
		// Launched by the node, ended with it (the import's context); what
		// it writes on stderr goes to the node's log.
		cmd := exec.CommandContext(i.ctx, i.src.Command[0], i.src.Command[1:]...)
		cmd.Stderr = &stderrLog{log: i.im.log, importID: i.id}
		tr = &mcp.CommandTransport{Command: cmd}
	}
	cctx, cancel := context.WithTimeout(i.ctx, 30*time.Second)
	sess, err := client.Connect(cctx, tr, nil)
	cancel()
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer func() { _ = sess.Close() }()
	ended := make(chan error, 1)
	go func() { ended <- sess.Wait() }()
	i.mu.Lock()
	i.sess = sess
	if r := sess.InitializeResult(); r != nil && r.ServerInfo != nil {
		i.server = strings.TrimSpace(r.ServerInfo.Name + " " + r.ServerInfo.Version)
	}
	i.mu.Unlock()
	defer func() {
		i.mu.Lock()
		i.sess = nil
		i.mu.Unlock()
	}()
	if err := i.sync(sess); err != nil {
		return err
	}
	i.setState(StateConnected, "")
	i.tried()
	for {
		select {
		case <-i.ctx.Done():
			return i.ctx.Err()
		case err := <-ended:
			if err == nil {
				err = errors.New("the MCP server closed the session")
			}
			return err
		case <-i.changed:
			if err := i.sync(sess); err != nil {
				return err
			}
		}
	}
}

// sync publishes a Thing per tool of the server, republishing only what
// changed, and withdraws the Things of tools gone.
func (i *imported) sync(sess *mcp.ClientSession) error {
	ctx, cancel := context.WithTimeout(i.ctx, 60*time.Second)
	defer cancel()
	var tools []*mcp.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		tools = append(tools, t)
	}
	vendor := ""
	if r := sess.InitializeResult(); r != nil && r.ServerInfo != nil {
		vendor = r.ServerInfo.Name
	}
	seen := map[string]bool{}
	for _, t := range tools {
		seen[t.Name] = true
		td, raw, err := i.toolTD(t, vendor)
		if err != nil {
			i.im.log.Warn("mcp import: tool left out", "import", i.id, "tool", t.Name, "err", err)
			continue
		}
		sum := sha256.Sum256(raw)
		i.mu.Lock()
		same := i.published[t.Name] == sum
		i.mu.Unlock()
		if same {
			continue
		}
		if err := i.im.reg.Register(ctx, td, backendFunc(i.handle)); err != nil {
			return fmt.Errorf("publishing tool %q: %w", t.Name, err)
		}
		i.mu.Lock()
		i.published[t.Name] = sum
		i.mu.Unlock()
	}
	for _, name := range i.toolNames() {
		if !seen[name] {
			if err := i.withdraw(ctx, name); err != nil {
				return err
			}
		}
	}
	i.im.toolsChanged()
	return nil
}

// withdraw removes the Thing of tool name.
func (i *imported) withdraw(ctx context.Context, name string) error {
	err := i.im.reg.Unregister(ctx, i.thingID(name))
	i.mu.Lock()
	delete(i.published, name)
	i.mu.Unlock()
	if err != nil {
		return fmt.Errorf("withdrawing tool %q: %w", name, err)
	}
	return nil
}

// withdrawAll removes the Things of every tool.
func (i *imported) withdrawAll(ctx context.Context) error {
	var errs []error
	for _, name := range i.toolNames() {
		errs = append(errs, i.withdraw(ctx, name))
	}
	return errors.Join(errs...)
}

// toolTD is the lmos:Tool TD of t: one action named after the tool with
// its input and output schemas, capability from the tool's name, vendor
// the server's name.
func (i *imported) toolTD(t *mcp.Tool, vendor string) (*lmosproto.TD, []byte, error) {
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	if title == "" {
		title = t.Name
	}
	action := map[string]any{"title": title, "forms": []any{map[string]any{"href": "mcp:tools/" + url.PathEscape(t.Name), "op": "invokeaction"}}}
	if t.Description != "" {
		action["description"] = t.Description
	}
	if t.InputSchema != nil {
		action["input"] = t.InputSchema
	}
	if t.OutputSchema != nil {
		action["output"] = t.OutputSchema
	}
	if a := t.Annotations; a != nil {
		if a.ReadOnlyHint {
			action["safe"] = true
		}
		if a.IdempotentHint {
			action["idempotent"] = true
		}
	}
	capability := map[string]any{"lmos:id": capabilityID(t.Name)}
	if t.Description != "" {
		capability["lmos:description"] = t.Description
	}
	doc := map[string]any{
		"@context":            json.RawMessage(lmosproto.LMOSContext()),
		"@type":               []string{lmosproto.TypeTool},
		"id":                  i.thingID(t.Name),
		"title":               title,
		"securityDefinitions": map[string]any{"nosec_sc": map[string]string{"scheme": "nosec"}},
		"security":            "nosec_sc",
		"lmos:capabilities":   []any{capability},
		"actions":             map[string]any{t.Name: action},
	}
	if t.Description != "" {
		doc["description"] = t.Description
	}
	if vendor != "" {
		doc["lmos:metadata"] = map[string]any{"lmos:vendor": map[string]string{"lmos:name": vendor}}
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, nil, err
	}
	td, err := lmosproto.ParseTD(raw)
	if err != nil {
		return nil, nil, err
	}
	return td, raw, nil
}

// capabilityID is the capability of a tool: its name in lower case, "_"
// and spaces as "-".
func capabilityID(name string) string {
	return strings.NewReplacer("_", "-", " ", "-").Replace(strings.ToLower(name))
}

type backendFunc func(ctx context.Context, x *interact.Exchange) error

func (f backendFunc) Handle(ctx context.Context, x *interact.Exchange) error { return f(ctx, x) }

// handle is the backend of the import's Things: an invocation becomes
// tools/call with a progress token; the server's progress notifications
// become running statuses; a cancelled invocation cancels the request.
func (i *imported) handle(ctx context.Context, x *interact.Exchange) error {
	req := x.Request()
	if req.Type != lmosproto.MsgInvokeAction {
		return &lmosproto.Problem{Status: http.StatusNotImplemented, Title: "Not Implemented",
			Detail: fmt.Sprintf("an imported MCP tool has only its action, not %s", req.Type)}
	}
	i.mu.Lock()
	sess := i.sess
	i.mu.Unlock()
	if sess == nil {
		return &lmosproto.Problem{Status: http.StatusBadGateway, Title: interact.TitleBadGateway,
			Detail: fmt.Sprintf("the MCP server of import %s is not connected", i.id)}
	}
	params := &mcp.CallToolParams{Name: req.Name}
	if req.Input.Present() {
		params.Arguments = json.RawMessage(req.Input.JSON())
	}
	token := req.Correlation()
	params.SetProgressToken(token)
	i.mu.Lock()
	i.progress[token] = x
	i.mu.Unlock()
	defer func() {
		i.mu.Lock()
		delete(i.progress, token)
		i.mu.Unlock()
	}()
	res, err := sess.CallTool(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &lmosproto.Problem{Status: http.StatusBadGateway, Title: interact.TitleBadGateway,
			Detail: fmt.Sprintf("MCP tools/call %q: %v", req.Name, err)}
	}
	if res.IsError {
		return &lmosproto.Problem{Status: http.StatusBadGateway, Title: "Tool Error", Detail: TextOf(res.Content)}
	}
	out, err := outputOf(res)
	if err != nil {
		return err
	}
	return x.Status(lmosproto.ActionCompleted, out)
}

// onProgress forwards a progress notification of a running call as a
// running status with the message (else the progress) as output.
func (i *imported) onProgress(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
	token, _ := r.Params.ProgressToken.(string)
	i.mu.Lock()
	x := i.progress[token]
	i.mu.Unlock()
	if x == nil {
		return
	}
	var v lmosproto.Value
	if r.Params.Message != "" {
		v = lmosproto.StringValue(r.Params.Message)
	} else {
		v, _ = lmosproto.ValueOf(r.Params.Progress)
	}
	_ = x.Status(lmosproto.ActionRunning, v)
}

// outputOf is the action output of a tool result: its structuredContent,
// else its text (one string), else its content blocks as JSON.
func outputOf(res *mcp.CallToolResult) (lmosproto.Value, error) {
	if res.StructuredContent != nil {
		return lmosproto.ValueOf(res.StructuredContent)
	}
	if len(res.Content) == 0 {
		return lmosproto.Value{}, nil
	}
	allText := true
	for _, c := range res.Content {
		if _, ok := c.(*mcp.TextContent); !ok {
			allText = false
		}
	}
	if allText {
		return lmosproto.StringValue(TextOf(res.Content)), nil
	}
	return lmosproto.ValueOf(res.Content)
}

// TextOf joins the text blocks of MCP content (a tool result's, say).
func TextOf(content []mcp.Content) string {
	var b strings.Builder
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// stderrLog logs the lines an imported command writes on stderr, at most
// stderrLine bytes each.
type stderrLog struct {
	log      *slog.Logger
	importID string
	buf      []byte
}

const stderrLine = 4 << 10

func (w *stderrLog) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		var line []byte
		switch i := bytes.IndexByte(w.buf, '\n'); {
		case i >= 0 && i <= stderrLine:
			line, w.buf = w.buf[:i], w.buf[i+1:]
		case len(w.buf) >= stderrLine:
			line, w.buf = w.buf[:stderrLine], w.buf[stderrLine:]
		default:
			return len(p), nil
		}
		if s := strings.TrimRight(string(line), "\r"); s != "" {
			w.log.Info("mcp server stderr", "import", w.importID, "line", s)
		}
	}
}
