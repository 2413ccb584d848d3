package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// actionTool is the MCP tool of one action and its handler.
type actionTool struct {
	tool    *mcp.Tool
	handler mcp.ToolHandler
}

// toolsOf returns the tools of the actions of Thing e (TD td). An action
// whose schemas do not convert is left out, with a warning.
func (s *Server) toolsOf(e directory.Entry, td *lmosproto.TD) []actionTool {
	names := make([]string, 0, len(td.Actions))
	for name := range td.Actions {
		names = append(names, name)
	}
	slices.Sort(names)
	tools := make([]actionTool, 0, len(names))
	for _, name := range names {
		a := td.Actions[name]
		schemas, err := actionSchemas(a.Input, a.Output)
		if err != nil {
			s.log.Warn("mcp: action left out", "thing", e.ThingID, "publisher", e.Publisher, "action", name, "err", err)
			continue
		}
		t := &mcp.Tool{
			Name:        ToolName(td.Title, name, e.Publisher, e.ThingID),
			Title:       toolTitle(td, name, a),
			Description: toolDescription(e, td, name, a, schemas),
			InputSchema: schemas.input,
			Meta: mcp.Meta{
				"lmos/thing":     e.ThingID,
				"lmos/publisher": e.Publisher.String(),
				"lmos/action":    name,
			},
		}
		if schemas.output != nil {
			t.OutputSchema = schemas.output
		}
		if a.Safe != nil || a.Idempotent != nil {
			t.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: a.Safe != nil && *a.Safe, IdempotentHint: a.Idempotent != nil && *a.Idempotent}
		}
		c := call{s: s, thing: thingKey{e.Publisher, e.ThingID}, action: name, schemas: schemas}
		tools = append(tools, actionTool{tool: t, handler: c.handle})
	}
	return tools
}

func toolTitle(td *lmosproto.TD, name string, a *lmosproto.ActionAffordance) string {
	action := a.Title
	if action == "" {
		action = name
	}
	if td.Title == "" {
		return action
	}
	return td.Title + ": " + action
}

// toolDescription is the action's description (else the Thing's), then
// which Thing and publisher it belongs to.
func toolDescription(e directory.Entry, td *lmosproto.TD, name string, a *lmosproto.ActionAffordance, s ioSchemas) string {
	var b strings.Builder
	switch {
	case a.Description != "":
		b.WriteString(a.Description)
	case td.Description != "":
		b.WriteString(td.Description)
	}
	if b.Len() > 0 {
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "Action %q of %q (Thing %s, published by %s).", name, td.Title, e.ThingID, e.Publisher)
	if s.inputWraps {
		b.WriteString(` The input goes in the argument "input".`)
	}
	return b.String()
}

// call is the handler of one action's tool.
type call struct {
	s       *Server
	thing   thingKey
	action  string
	schemas ioSchemas
}

// handle invokes the action through the node's invocation path: the
// resolver (a Thing this node may no longer see is refused), then the
// engine or the owner node. Pending and running statuses become progress
// notifications, a cancellation of the request a cancelAction.
func (c call) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	in, err := c.input(req.Params.Arguments)
	if err != nil {
		return toolError(&lmosproto.Problem{Status: http.StatusBadRequest, Title: "Bad Request", Detail: err.Error()}), nil
	}
	e, err := c.s.deps.Resolver.Resolve(ctx, c.thing.id, c.thing.publisher, true)
	if err != nil {
		return toolError(asProblem(err)), nil
	}
	m := lmosproto.NewMessage(e.ThingID, lmosproto.MsgInvokeAction)
	m.Name, m.CorrelationID, m.Input = c.action, m.MessageID, in
	progress := progressOf(ctx, req)
	final, p := c.s.exchange(ctx, e, m, progress)
	if p != nil {
		return toolError(p), nil
	}
	if final == nil { // the request was cancelled
		return nil, ctx.Err()
	}
	if final.Status != lmosproto.ActionCompleted {
		p := &lmosproto.Problem{Status: http.StatusBadGateway, Title: "Action " + final.Status,
			Detail: fmt.Sprintf("action %q of Thing %q ended %s", c.action, e.ThingID, final.Status)}
		r := toolError(p)
		if final.Output.Present() {
			r.Content = append(r.Content, &mcp.TextContent{Text: final.Output.String()})
		}
		return r, nil
	}
	return c.result(final.Output), nil
}

// input maps the tool's arguments to the action's input.
func (c call) input(args json.RawMessage) (lmosproto.Value, error) {
	if c.schemas.noInput {
		return lmosproto.Value{}, nil
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if !c.schemas.inputWraps {
		return lmosproto.ParseValue(args)
	}
	var wrapped map[string]json.RawMessage
	if err := json.Unmarshal(args, &wrapped); err != nil {
		return lmosproto.Value{}, fmt.Errorf("arguments: %w", err)
	}
	raw, ok := wrapped[wrapMember]
	if !ok {
		return lmosproto.Value{}, fmt.Errorf("arguments: member %q (the action's input) is missing", wrapMember)
	}
	return lmosproto.ParseValue(raw)
}

// result is the tool result of an action's output.
func (c call) result(out lmosproto.Value) *mcp.CallToolResult {
	r := &mcp.CallToolResult{}
	if !out.Present() {
		r.Content = []mcp.Content{&mcp.TextContent{Text: "completed"}}
		if c.schemas.output != nil {
			r.StructuredContent = map[string]any{}
		}
		return r
	}
	r.Content = []mcp.Content{&mcp.TextContent{Text: out.String()}}
	if c.schemas.output != nil {
		if c.schemas.outputWraps {
			r.StructuredContent = map[string]json.RawMessage{outputMember: out.JSON()}
		} else {
			r.StructuredContent = json.RawMessage(out.JSON())
		}
	}
	return r
}

// progress reports one intermediate message of an interaction.
type progress func(m *lmosproto.Message)

// progressOf returns the progress reporter of req: notifications/progress
// with the request's progress token, numbered from 1; nil without a token.
// They are sent in the request's context ctx, which puts them on the
// request's own stream, ahead of its result.
func progressOf(ctx context.Context, req *mcp.CallToolRequest) progress {
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	n := 0
	return func(m *lmosproto.Message) {
		n++
		msg := m.Status
		if m.Output.Present() {
			msg += ": " + m.Output.String()
		}
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token, Progress: float64(n), Message: msg,
		})
		_ = err // the client may be gone; the call's end tells it
	}
}

// exchange opens the interaction of m with Thing e and returns its
// terminal message, or the problem that ended it; it hands intermediate
// actionStatus messages to report. When ctx ends first, an invocation is
// cancelled (cancelAction) and exchange returns nil, nil.
func (s *Server) exchange(ctx context.Context, e directory.Entry, m *lmosproto.Message, report progress) (*lmosproto.Message, *lmosproto.Problem) {
	// The interaction's context is the server's: a cancelled request
	// becomes an LMOS cancelAction, not a torn stream.
	ictx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	sess, err := s.deps.Invokers.For(e.Publisher).Invoke(ictx, m)
	if err != nil {
		return nil, &lmosproto.Problem{Status: http.StatusServiceUnavailable, Title: "Service Unavailable",
			Detail: fmt.Sprintf("invoking %s %q of Thing %q: %v", m.Type, m.Name, m.ThingID, err)}
	}
	defer func() { _ = sess.Close() }()
	for {
		select {
		case <-ctx.Done():
			if m.Type == lmosproto.MsgInvokeAction {
				s.cancelAction(sess)
			}
			return nil, nil
		case r, ok := <-sess.Replies():
			if !ok {
				return nil, &lmosproto.Problem{Status: http.StatusBadGateway, Title: "Bad Gateway",
					Detail: fmt.Sprintf("the interaction with Thing %q ended without an answer", m.ThingID)}
			}
			if r.Type == lmosproto.MsgError {
				return nil, r.Problem()
			}
			if r.Ends(m) {
				return r, nil
			}
			if report != nil && r.Type == lmosproto.MsgActionStatus {
				report(r)
			}
		}
	}
}

// cancelAction asks the Thing to cancel the invocation of sess and waits
// (at most Config.CancelWait) for it to end.
func (s *Server) cancelAction(sess interactSession) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.CancelWait)
	defer cancel()
	c := &lmosproto.Message{Type: lmosproto.MsgCancelAction, Reason: "cancelled by the MCP client"}
	if err := sess.Send(ctx, c); err != nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case r, ok := <-sess.Replies():
			if !ok || r.Ends(sess.Request()) {
				return
			}
		}
	}
}

// interactSession is the part of interact.Session cancelAction uses.
type interactSession interface {
	Request() *lmosproto.Message
	Replies() <-chan *lmosproto.Message
	Send(ctx context.Context, m *lmosproto.Message) error
}

// toolError is the tool result of a failed call: isError with the
// problem's text, and the problem as structured content is left out
// (a tool's outputSchema does not describe it).
func toolError(p *lmosproto.Problem) *mcp.CallToolResult {
	r := &mcp.CallToolResult{}
	r.SetError(p)
	return r
}

// asProblem returns err as a problem.
func asProblem(err error) *lmosproto.Problem {
	var p *lmosproto.Problem
	if errors.As(err, &p) {
		return p
	}
	return &lmosproto.Problem{Status: http.StatusInternalServerError, Title: "Internal Server Error", Detail: err.Error()}
}
