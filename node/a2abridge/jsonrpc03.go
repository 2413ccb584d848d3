package a2abridge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

// Methods of the A2A 0.3 JSON-RPC binding. A request of one of them (with
// no A2A-Version, or 0.3) is translated to its 1.0 counterpart and its
// answer back (wire03.go); the push notification methods are refused
// with PushNotificationNotSupportedError, and the authenticated extended
// card with AuthenticatedExtendedCardNotConfiguredError.
const (
	Method03Send        = "message/send"
	Method03Stream      = "message/stream"
	Method03Get         = "tasks/get"
	Method03Cancel      = "tasks/cancel"
	Method03Resubscribe = "tasks/resubscribe"
	Method03ExtCard     = "agent/getAuthenticatedExtendedCard"
	method03PushPrefix  = "tasks/pushNotificationConfig/"
)

// methods10Of03 maps the 0.3 methods the bridge serves to their 1.0 names.
var methods10Of03 = map[string]string{
	Method03Send: MethodSendMessage, Method03Stream: MethodSendStreamingMessage, Method03Get: MethodGetTask,
	Method03Cancel: MethodCancelTask, Method03Resubscribe: MethodSubscribeToTask,
}

// methods03Of10 is the inverse of methods10Of03.
var methods03Of10 = func() map[string]string {
	m := map[string]string{}
	for k, v := range methods10Of03 {
		m[v] = k
	}
	return m
}()

// requestedVersion is the A2A version r asks for (header or query
// parameter A2A-Version): "0.3" (also when empty), "1.0", or what it
// says when that is neither.
func requestedVersion(r *http.Request) string {
	v := r.Header.Get("A2A-Version")
	if v == "" {
		v = r.URL.Query().Get("A2A-Version")
	}
	switch {
	case v == "" || v == version03 || strings.HasPrefix(v, version03+"."):
		return version03
	case v == ProtocolVersion || strings.HasPrefix(v, ProtocolVersion+".") || v == "1":
		return ProtocolVersion
	}
	return v
}

// route03 decides the generation of c's request: a 0.3 request is
// translated to 1.0 (translate03); it answers an error for a request
// that no generation serves.
func route03(c *call) *RPCError {
	switch v := requestedVersion(c.r); v {
	case ProtocolVersion:
		return nil
	case version03:
	default:
		return rpcErr(CodeVersionNotSupported, "A2A version %q is not supported; this agent speaks %s (no A2A-Version header) and %s (header A2A-Version: %s)",
			v, version03, ProtocolVersion, ProtocolVersion)
	}
	return translate03(c)
}

// translate03 translates c's 0.3 request to 1.0 in place (c.v03 set, the
// method and params rewritten); it answers an error for a method 0.3
// does not serve.
func translate03(c *call) *RPCError {
	m := c.req.Method
	switch {
	case strings.HasPrefix(m, method03PushPrefix):
		c.v03 = true
		return rpcErr(CodePushNotSupported, "push notifications are not supported")
	case m == Method03ExtCard:
		c.v03 = true
		return rpcErr(CodeExtendedCardNotConfig, "this agent has no authenticated extended card")
	case methods10Of03[m] == "":
		if methods03Of10[m] != "" || m == MethodListTasks {
			return rpcErr(CodeMethodNotFound, "Method not found: %q is an A2A %s method: send header A2A-Version: %s", m, ProtocolVersion, ProtocolVersion)
		}
		return rpcErr(CodeMethodNotFound, "Method not found: %q", m)
	}
	c.v03 = true
	c.req.Method = methods10Of03[m]
	if m == Method03Send || m == Method03Stream {
		var p a2a.MessageSendParams
		if err := json.Unmarshal(c.req.Params, &p); err != nil {
			return rpcErr(CodeInvalidParams, "Invalid parameters: %v", err)
		}
		c.req.Params = mustRaw(sendParams10(&p))
	}
	return nil
}

// wire is result as c's client reads it: in 0.3 form for a 0.3 request.
func (c *call) wire(result any) any {
	if !c.v03 {
		return result
	}
	switch x := result.(type) {
	case SendMessageResponse:
		return event03(StreamResponse{Task: x.Task, Message: x.Message})
	case StreamResponse:
		return event03(x)
	case Task:
		return task03(&x)
	}
	return result
}

// rpcError03 is a JSON-RPC error of the 0.3 binding: its data is one
// object (the first ErrorInfo detail), as 0.3 SDKs decode it.
type rpcError03 struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// reply03 answers a 0.3 request with result, or err, in 0.3 form.
func (c *call) reply03(result any, err *RPCError) {
	id := c.req.ID
	if id == nil {
		id = json.RawMessage("null")
	}
	resp := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *rpcError03     `json:"error,omitempty"`
	}{JSONRPC: "2.0", ID: id}
	if err != nil {
		resp.Error = &rpcError03{Code: err.Code, Message: err.Message}
		if len(err.Data) > 0 {
			resp.Error.Data = err.Data[0]
		}
	} else {
		resp.Result = c.wire(result)
	}
	if err != nil && (c.req.Method == MethodSendStreamingMessage || c.req.Method == MethodSubscribeToTask) {
		// A 0.3 client of a stream reads an error as its one event (a2a-go's
		// client reads nothing else from a stream request).
		b, _ := json.Marshal(resp) // plain data
		c.w.Header().Set("Content-Type", httpapi.ContentTypeEventStream)
		c.w.Header().Set("Cache-Control", "no-cache")
		c.w.WriteHeader(http.StatusOK)
		_, _ = fmt.Fprintf(c.w, "data: %s\n\n", b)
		return
	}
	httpapi.WriteJSON(c.w, http.StatusOK, resp)
}
