package a2abridge

import (
	"encoding/json"
	"fmt"
	"net/http"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// JSON-RPC 2.0 envelope and the error codes of the A2A JSON-RPC binding
// (specification §5.4, §9.5).

// Methods of the A2A 1.0 JSON-RPC binding.
const (
	MethodSendMessage          = "SendMessage"
	MethodSendStreamingMessage = "SendStreamingMessage"
	MethodGetTask              = "GetTask"
	MethodListTasks            = "ListTasks"
	MethodCancelTask           = "CancelTask"
	MethodSubscribeToTask      = "SubscribeToTask"
	MethodGetExtendedAgentCard = "GetExtendedAgentCard"
)

// Error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
	// CodeServer is the implementation-defined server error (JSON-RPC's
	// -32000) with which the bridge answers what A2A has no code for: the
	// node's problem (404 unknown agent, 403 group-scoped agent this node
	// may not call, 502 owner unreachable, …), whose status and detail are
	// in the error's data (a google.rpc.ErrorInfo).
	CodeServer                  = -32000
	CodeTaskNotFound            = -32001
	CodeTaskNotCancelable       = -32002
	CodePushNotSupported        = -32003
	CodeUnsupportedOperation    = -32004
	CodeContentTypeNotSupported = -32005
	CodeInvalidAgentResponse    = -32006
	CodeExtendedCardNotConfig   = -32007
	CodeVersionNotSupported     = -32009
)

// rpcRequest is a JSON-RPC request.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// rpcResponse is a JSON-RPC response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int               `json:"code"`
	Message string            `json:"message"`
	Data    []json.RawMessage `json:"data,omitempty"`
	// status is the HTTP status of a node problem (problemErr), which the
	// HTTP+JSON binding answers with.
	status int
}

// UnmarshalJSON reads an error as either generation writes it: data is
// an array of details in A2A 1.0, any value in 0.3 (JSON-RPC allows any),
// taken as the one detail.
func (e *RPCError) UnmarshalJSON(b []byte) error {
	var w struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = RPCError{Code: w.Code, Message: w.Message}
	if len(w.Data) > 0 && string(w.Data) != "null" && json.Unmarshal(w.Data, &e.Data) != nil {
		e.Data = []json.RawMessage{w.Data}
	}
	return nil
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("a2a: JSON-RPC error %d: %s", e.Code, e.Message)
}

// rpcErr returns an error with code and a formatted message.
func rpcErr(code int, format string, args ...any) *RPCError {
	return &RPCError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// errorInfo is a google.rpc.ErrorInfo detail.
type errorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// errorDomain is the domain of the ErrorInfo details the bridge writes.
const errorDomain = "lmosnode"

// problemErr turns a node problem (from resolving an agent or from its
// interaction) into a JSON-RPC error: CodeServer with the problem's
// detail as message and its status, title and detail as an ErrorInfo.
func problemErr(p *lmosproto.Problem) *RPCError {
	reason := http.StatusText(p.Status)
	if p.Title != "" {
		reason = p.Title
	}
	md := map[string]string{"status": fmt.Sprint(p.Status)}
	if p.Detail != "" {
		md["detail"] = p.Detail
	}
	b, _ := json.Marshal(errorInfo{Type: errorInfoType, Reason: reason, Domain: errorDomain, Metadata: md}) // strings only
	msg := p.Detail
	if msg == "" {
		msg = reason
	}
	return &RPCError{Code: CodeServer, Message: msg, Data: []json.RawMessage{b}, status: p.Status}
}
