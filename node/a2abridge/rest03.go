package a2abridge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2apb"
	"github.com/a2aproject/a2a-go/a2apb/pbconv"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The HTTP+JSON binding of A2A 0.3 (specification §3.2.3, the HTTP
// annotations of its a2a.proto): the JSON form of its protocol buffers
// (a message's parts are "content", enums are names like
// TASK_STATE_COMPLETED, message:send answers {"task": …} or
// {"message": …}), as the SDKs' 0.3 REST transports read and write it.
// A thin adapter on the 0.3 JSON-RPC one: the 0.3 Go SDK's pbconv turns
// the proto form into its 0.3 types and back, jsonrpc03.go and wire03.go
// translate those to and from the 1.0 model, the shared dispatch runs
// the call. An error is the 0.3 JSON-RPC error object (code, message,
// data) with the HTTP status of the 1.0 binding (restErrors).

// pathREST03 is where the 0.3 HTTP+JSON interface sits under a JSON-RPC
// endpoint: the node-wide endpoint /a2a cannot take 0.3's /v1/tasks/{id}
// itself (it would clash with /a2a/{publisher}/{id}/…), so neither does
// an agent's.
const pathREST03 = "/v0.3"

// rest03Interface is the 0.3 HTTP+JSON interface of the JSON-RPC
// endpoint endpoint: a client appends /v1/message:send and the others.
func rest03Interface(endpoint string) AgentInterfaceV03 {
	return AgentInterfaceV03{URL: strings.TrimSuffix(endpoint, "/") + pathREST03, Transport: BindingHTTPJSON}
}

// rest03Paths are the paths of the 0.3 HTTP+JSON binding under base.
func rest03Paths(base string) []string {
	v1 := base + pathREST03 + "/v1"
	return []string{v1 + "/message:send", v1 + "/message:stream", v1 + "/tasks/{task}", v1 + "/card",
		v1 + "/tasks/{task}/pushNotificationConfigs", v1 + "/tasks/{task}/pushNotificationConfigs/{config}"}
}

// rest03Routes serves the 0.3 HTTP+JSON binding at the node-wide endpoint
// and at every agent's.
func (b *Bridge) rest03Routes() {
	for base, setup := range map[string]func(*http.Request) func(*call){PathPrefix: b.nodeSetup, pathAgentBase: b.agentSetup} {
		v1 := base + pathREST03 + "/v1"
		op := func(method string) func(*http.Request) (string, string) {
			return func(*http.Request) (string, string) { return method, "" }
		}
		b.mux.HandleFunc("POST "+v1+"/message:send", b.serveREST03(setup, op(Method03Send)))
		b.mux.HandleFunc("POST "+v1+"/message:stream", b.serveREST03(setup, op(Method03Stream)))
		b.mux.HandleFunc("GET "+v1+"/tasks/{task}", b.serveREST03(setup, taskOp03))
		b.mux.HandleFunc("POST "+v1+"/tasks/{task}", b.serveREST03(setup, taskOp03))
		b.mux.HandleFunc("GET "+v1+"/card", b.serveREST03(setup, op(Method03ExtCard)))
		push := op(method03PushPrefix + "set")
		b.mux.HandleFunc(v1+"/tasks/{task}/pushNotificationConfigs", b.serveREST03(setup, push))
		b.mux.HandleFunc(v1+"/tasks/{task}/pushNotificationConfigs/{config}", b.serveREST03(setup, push))
	}
}

// taskOp03 is the 0.3 method of a request on /v1/tasks/{id}: the 1.0
// binding's (taskOp) by its 0.3 name.
func taskOp03(r *http.Request) (method, id string) {
	method, id = taskOp(r)
	return methods03Of10[method], id
}

// serveREST03 answers a request of the 0.3 HTTP+JSON binding as the 0.3
// JSON-RPC request it stands for: op names its method and task id.
func (b *Bridge) serveREST03(setup func(*http.Request) func(*call), op func(*http.Request) (string, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := &call{w: w, r: r, rest: true, v03: true}
		method, id := op(r)
		if method == "" {
			c.reply(nil, rpcErr(CodeMethodNotFound, "no A2A operation is %s %s (a task takes GET, POST …:cancel and …:subscribe)", r.Method, r.URL.Path))
			return
		}
		c.req = rpcRequest{JSONRPC: "2.0", Method: method}
		if method == Method03Send || method == Method03Stream {
			p, err := sendParams03Proto(w, r)
			if err != nil {
				c.reply(nil, err)
				return
			}
			c.req.Params = mustRaw(p)
		} else {
			params, err := restParams(w, r, id)
			if err != nil {
				c.reply(nil, err)
				return
			}
			c.req.Params = params
		}
		if err := translate03(c); err != nil {
			c.reply(nil, err)
			return
		}
		setup(r)(c)
		b.dispatch(c)
	}
}

// sendParams03Proto reads the body of a message:send or message:stream,
// a SendMessageRequest in the proto JSON form, as 0.3 params.
func sendParams03Proto(w http.ResponseWriter, r *http.Request) (*a2a.MessageSendParams, *RPCError) {
	body, rerr := readBody(w, r)
	if rerr != nil {
		return nil, rerr
	}
	var req a2apb.SendMessageRequest
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(renameParts(body, "content", "parts"), &req); err != nil {
		return nil, rpcErr(CodeParseError, "Invalid JSON payload: %v", err)
	}
	p, err := pbconv.FromProtoSendMessageRequest(&req)
	if err != nil || p.Message == nil {
		return nil, rpcErr(CodeInvalidParams, "Invalid parameters: a SendMessageRequest with a message: %v", err)
	}
	return p, nil
}

// proto03 is result (a 1.0 answer or stream event) in the proto form of
// the 0.3 HTTP+JSON binding.
func proto03(result any) (proto.Message, error) {
	switch x := result.(type) {
	case SendMessageResponse:
		return pbconv.ToProtoSendMessageResponse(event03(StreamResponse{Task: x.Task, Message: x.Message}).(a2a.SendMessageResult))
	case StreamResponse:
		return pbconv.ToProtoStreamResponse(event03(x))
	case Task:
		return pbconv.ToProtoTask(task03(&x))
	}
	return nil, fmt.Errorf("no 0.3 form for a %T", result) // a programming error
}

// json03 is result as the 0.3 HTTP+JSON binding encodes it.
func json03(result any) ([]byte, error) {
	m, err := proto03(result)
	if err != nil {
		return nil, err
	}
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	return renameParts(b, "parts", "content"), nil
}

// renameParts renames member from of every message (an object with a
// messageId) in the JSON text b to to: the specification's a2a.proto of
// 0.3.0, and the SDKs that follow it, name a message's parts "content";
// the proto of the 0.3 Go SDK, a later 0.3, names them "parts". Anything
// but a JSON object is b itself.
func renameParts(b []byte, from, to string) []byte {
	v, ok := objectOf(b)
	if !ok {
		return b
	}
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			if p, ok := x[from]; ok && x["messageId"] != nil {
				delete(x, from)
				x[to] = p
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(v)
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// writeREST03 answers a request of the 0.3 HTTP+JSON binding with result
// or with err (a 0.3 error object with the HTTP status of the 1.0
// binding).
func writeREST03(w http.ResponseWriter, result any, err *RPCError) {
	status, body := http.StatusOK, []byte(nil)
	if err == nil {
		var merr error
		if body, merr = json03(result); merr != nil {
			err = rpcErr(CodeInternal, "encoding the response: %v", merr)
		}
	}
	if err != nil {
		status, _ = restError(err)
		e := rpcError03{Code: err.Code, Message: err.Message}
		if len(err.Data) > 0 {
			e.Data = err.Data[0]
		}
		body, _ = json.Marshal(e) // plain data
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n')) // the client went away; nothing to do
}
