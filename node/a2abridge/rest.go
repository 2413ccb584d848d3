package a2abridge

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// The HTTP+JSON binding of A2A 1.0 (specification §11): a thin adapter
// that turns each request into the call of the JSON-RPC method it stands
// for (its params from the path, the query and the body) and hands it to
// the same dispatch; the result is the response body, an error the
// google.rpc.Status of §11.6 with the HTTP status of §5.4, a stream's
// events StreamResponse objects.

// BindingHTTPJSON is AgentInterface.protocolBinding of the HTTP+JSON
// binding.
const BindingHTTPJSON = "HTTP+JSON"

// ContentTypeA2A is the media type of the HTTP+JSON binding's bodies.
const ContentTypeA2A = "application/a2a+json"

// pathAgentBase is the base of an agent's HTTP+JSON interface: its
// JSON-RPC endpoint without the final slash.
const pathAgentBase = PathPrefix + "/{publisher}/{id}"

// restInterface is the HTTP+JSON interface at the base of the JSON-RPC
// endpoint endpoint: the same URL without its final slash, to which a
// client appends /message:send and the other paths.
func restInterface(endpoint string) AgentInterface {
	return AgentInterface{URL: strings.TrimSuffix(endpoint, "/"), ProtocolBinding: BindingHTTPJSON, ProtocolVersion: ProtocolVersion}
}

// restPaths are the paths of the HTTP+JSON binding under base.
func restPaths(base string) []string {
	return []string{base + "/message:send", base + "/message:stream", base + "/tasks", base + "/tasks/{task}",
		base + "/extendedAgentCard", base + "/tasks/{task}/pushNotificationConfigs", base + "/tasks/{task}/pushNotificationConfigs/{config}"}
}

// restRoutes serves the HTTP+JSON binding at the node-wide endpoint and
// at every agent's.
func (b *Bridge) restRoutes() {
	for base, setup := range map[string]func(*http.Request) func(*call){PathPrefix: b.nodeSetup, pathAgentBase: b.agentSetup} {
		op := func(method string) func(*http.Request) (string, string) {
			return func(*http.Request) (string, string) { return method, "" }
		}
		b.mux.HandleFunc("POST "+base+"/message:send", b.serveREST(setup, op(MethodSendMessage)))
		b.mux.HandleFunc("POST "+base+"/message:stream", b.serveREST(setup, op(MethodSendStreamingMessage)))
		b.mux.HandleFunc("GET "+base+"/tasks", b.serveREST(setup, op(MethodListTasks)))
		b.mux.HandleFunc("GET "+base+"/tasks/{task}", b.serveREST(setup, taskOp))
		b.mux.HandleFunc("POST "+base+"/tasks/{task}", b.serveREST(setup, taskOp))
		b.mux.HandleFunc("GET "+base+"/extendedAgentCard", b.serveREST(setup, op(MethodGetExtendedAgentCard)))
		b.mux.HandleFunc(base+"/tasks/{task}/pushNotificationConfigs", b.serveREST(setup, pushOp))
		b.mux.HandleFunc(base+"/tasks/{task}/pushNotificationConfigs/{config}", b.serveREST(setup, pushOp))
	}
}

// taskOp is the method of a request on /tasks/{id}: GetTask (GET),
// CancelTask (POST …:cancel) or SubscribeToTask (GET or POST
// …:subscribe), with the task's id.
func taskOp(r *http.Request) (method, id string) {
	t := r.PathValue("task")
	if id, ok := strings.CutSuffix(t, ":subscribe"); ok {
		return MethodSubscribeToTask, id
	}
	if r.Method == http.MethodGet {
		return MethodGetTask, t
	}
	if id, ok := strings.CutSuffix(t, ":cancel"); ok {
		return MethodCancelTask, id
	}
	return "", t
}

// pushOp is the push notification method of a request: all of them are
// refused (PushNotificationNotSupportedError).
func pushOp(r *http.Request) (method, id string) {
	switch {
	case r.Method == http.MethodPost:
		method = "CreateTaskPushNotificationConfig"
	case r.Method == http.MethodDelete:
		method = "DeleteTaskPushNotificationConfig"
	case r.PathValue("config") != "":
		method = "GetTaskPushNotificationConfig"
	default:
		method = "ListTaskPushNotificationConfigs"
	}
	return method, r.PathValue("task")
}

// serveREST answers a request of the HTTP+JSON binding: op names its
// method and task id, setup finds its agent as at the JSON-RPC endpoint
// of the same base.
func (b *Bridge) serveREST(setup func(*http.Request) func(*call), op func(*http.Request) (string, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := &call{w: w, r: r, rest: true}
		method, id := op(r)
		if method == "" {
			c.reply(nil, rpcErr(CodeMethodNotFound, "no A2A operation is %s %s (a task takes GET, POST …:cancel and …:subscribe)", r.Method, r.URL.Path))
			return
		}
		if v := requestedVersion(r); v != ProtocolVersion {
			c.reply(nil, versionErr(v))
			return
		}
		params, err := restParams(w, r, id)
		if err != nil {
			c.reply(nil, err)
			return
		}
		c.req = rpcRequest{JSONRPC: "2.0", Method: method, Params: params}
		setup(r)(c)
		b.dispatch(c)
	}
}

// Query parameters of the HTTP+JSON binding that are not strings
// (specification §11.5).
var (
	restInts  = []string{"historyLength", "pageSize"}
	restBools = []string{"includeArtifacts"}
)

// restParams are the params of a request: the members of its body (a
// JSON object, if any), its query parameters and the task id of its path.
func restParams(w http.ResponseWriter, r *http.Request, id string) (json.RawMessage, *RPCError) {
	body, rerr := readBody(w, r)
	if rerr != nil {
		return nil, rerr
	}
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, rpcErr(CodeParseError, "Invalid JSON payload: the body must be a JSON object: %v", err)
		}
	}
	for k, vs := range r.URL.Query() {
		v := vs[0]
		switch {
		case k == "A2A-Version":
			continue
		case slices.Contains(restInts, k):
			if _, err := strconv.Atoi(v); err != nil {
				return nil, rpcErr(CodeInvalidParams, "Invalid parameters: %s %q is not an integer", k, v)
			}
			m[k] = json.RawMessage(v)
		case slices.Contains(restBools, k):
			bv, err := strconv.ParseBool(v)
			if err != nil {
				return nil, rpcErr(CodeInvalidParams, "Invalid parameters: %s %q is not true or false", k, v)
			}
			m[k] = mustRaw(bv)
		default:
			m[k] = mustRaw(v)
		}
	}
	if id != "" {
		m["id"] = mustRaw(id)
	}
	return mustRaw(m), nil
}

// restStatus is a google.rpc.Status in the JSON form of §11.6.
type restStatus struct {
	Code    int               `json:"code"`
	Status  string            `json:"status"`
	Message string            `json:"message"`
	Details []json.RawMessage `json:"details,omitempty"`
}

// a2aDomain is the ErrorInfo domain of the A2A errors.
const a2aDomain = "a2a-protocol.org"

// errorInfoType is the @type of a google.rpc.ErrorInfo detail.
const errorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"

// restErrors maps the error codes to their HTTP status and ErrorInfo
// reason (specification §5.4, §11.6); CodeServer's status is the node
// problem's.
var restErrors = map[int]struct {
	status int
	reason string
}{
	CodeParseError:              {http.StatusBadRequest, "PARSE_ERROR"},
	CodeInvalidRequest:          {http.StatusBadRequest, "INVALID_REQUEST"},
	CodeMethodNotFound:          {http.StatusNotFound, "METHOD_NOT_FOUND"},
	CodeInvalidParams:           {http.StatusBadRequest, "INVALID_PARAMS"},
	CodeInternal:                {http.StatusInternalServerError, "INTERNAL_ERROR"},
	CodeTaskNotFound:            {http.StatusNotFound, "TASK_NOT_FOUND"},
	CodeTaskNotCancelable:       {http.StatusBadRequest, "TASK_NOT_CANCELABLE"},
	CodePushNotSupported:        {http.StatusBadRequest, "PUSH_NOTIFICATION_NOT_SUPPORTED"},
	CodeUnsupportedOperation:    {http.StatusBadRequest, "UNSUPPORTED_OPERATION"},
	CodeContentTypeNotSupported: {http.StatusBadRequest, "CONTENT_TYPE_NOT_SUPPORTED"},
	CodeInvalidAgentResponse:    {http.StatusInternalServerError, "INVALID_AGENT_RESPONSE"},
	CodeExtendedCardNotConfig:   {http.StatusBadRequest, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"},
	CodeVersionNotSupported:     {http.StatusBadRequest, "VERSION_NOT_SUPPORTED"},
}

// restError is err as the HTTP+JSON binding answers it: its HTTP status
// and body.
func restError(err *RPCError) (int, map[string]restStatus) {
	st := restStatus{Message: err.Message, Details: withErrorInfo(err).Data}
	st.Code = http.StatusInternalServerError
	if e, ok := restErrors[err.Code]; ok {
		st.Code = e.status
	} else if err.status >= 400 && err.status < 600 {
		st.Code = err.status
	}
	st.Status = rpcStatusName(st.Code, err.Code)
	return st.Code, map[string]restStatus{"error": st}
}

// withErrorInfo is err with the google.rpc.ErrorInfo of its A2A error
// first in its details (A2A 1.0 §9.5, §11.6: JSON-RPC error.data and
// HTTP+JSON error.details); err itself for another code, or nil.
func withErrorInfo(err *RPCError) *RPCError {
	if err == nil {
		return nil
	}
	e, ok := restErrors[err.Code]
	if !ok {
		return err
	}
	info, _ := json.Marshal(errorInfo{Type: errorInfoType, Reason: e.reason, Domain: a2aDomain}) // strings only
	with := *err
	with.Data = append([]json.RawMessage{info}, err.Data...)
	return &with
}

// rpcStatusName is the google.rpc.Code name of HTTP status code; the
// precondition errors of A2A (§5.4) are FAILED_PRECONDITION.
func rpcStatusName(code, a2aCode int) string {
	switch a2aCode {
	case CodeTaskNotCancelable, CodePushNotSupported, CodeUnsupportedOperation, CodeExtendedCardNotConfig, CodeVersionNotSupported:
		return "FAILED_PRECONDITION"
	}
	switch code {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusServiceUnavailable, http.StatusBadGateway:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	case http.StatusInternalServerError:
		return "INTERNAL"
	}
	return "UNKNOWN"
}

// writeREST answers a request of the HTTP+JSON binding with result, or
// with err.
func writeREST(w http.ResponseWriter, result any, err *RPCError) {
	status, v := http.StatusOK, result
	if err != nil {
		status, v = restError(err)
	}
	body, merr := json.Marshal(v)
	if merr != nil { // a programming error: the A2A types encode
		var e map[string]restStatus
		status, e = restError(rpcErr(CodeInternal, "encoding the response: %v", merr))
		body, _ = json.Marshal(e) // strings only
	}
	w.Header().Set("Content-Type", ContentTypeA2A)
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n')) // the client went away; nothing to do
}
