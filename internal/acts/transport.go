package acts

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"
)

// Transport bindings (§3.2) and the protocolBinding values an Agent Card
// names them with (A2A §5).
const (
	JSONRPC = "jsonrpc"
	REST    = "rest"
	GRPC    = "grpc"
)

// bindingNames are the AgentInterface.protocolBinding values of a
// transport ("REST" is how the corpus spells HTTP+JSON).
var bindingNames = map[string][]string{
	JSONRPC: {"JSONRPC"},
	REST:    {"HTTP+JSON", "REST"},
	GRPC:    {"GRPC"},
}

// response is what a step got: the HTTP status, the decoded body (a
// JSON-RPC envelope, a REST body), and for abstract operations the A2A
// result or error; a stream's events in order.
type response struct {
	status int
	body   any
	result any
	err    map[string]any // the error view (errorView), nil on success
	events []any          // decoded SSE data, in order
	stream bool
}

// root is the assertion root (§4.2): the A2A result, or {"error": view}.
func (r *response) root() any {
	if r.err != nil {
		return map[string]any{"error": r.err}
	}
	return r.result
}

// Operation names of the corpus that predate the ACTS table (A2A 0.3
// spellings) and their abstract operation.
var operationAliases = map[string]string{
	"set_push_notification_config":    "create_push_config",
	"get_push_notification_config":    "get_push_config",
	"list_push_notification_configs":  "list_push_configs",
	"delete_push_notification_config": "delete_push_config",
}

// JSON-RPC methods of the abstract operations (A2A §5.3: the push config
// methods are CreateTaskPushNotificationConfig etc.; the ACTS table's
// CreatePushNotificationConfig predates them).
var rpcMethods = map[string]string{
	"send_message":            "SendMessage",
	"send_streaming_message":  "SendStreamingMessage",
	"get_task":                "GetTask",
	"list_tasks":              "ListTasks",
	"cancel_task":             "CancelTask",
	"subscribe_to_task":       "SubscribeToTask",
	"get_extended_agent_card": "GetExtendedAgentCard",
	"create_push_config":      "CreateTaskPushNotificationConfig",
	"get_push_config":         "GetTaskPushNotificationConfig",
	"list_push_configs":       "ListTaskPushNotificationConfigs",
	"delete_push_config":      "DeleteTaskPushNotificationConfig",
}

func streaming(op string) bool { return op == "send_streaming_message" || op == "subscribe_to_task" }

// callRPC performs abstract operation op over JSON-RPC at endpoint.
func (r *run) callRPC(ctx context.Context, endpoint, op string, params map[string]any) (*response, error) {
	method, ok := rpcMethods[op]
	if !ok {
		return nil, fmt.Errorf("operation %q has no JSON-RPC method", op)
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": uuid.NewString(), "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	h := map[string]string{"Content-Type": "application/json", "A2A-Version": r.t.SpecVersion}
	if streaming(op) {
		h["Accept"] = "text/event-stream"
	}
	resp, err := r.do(ctx, http.MethodPost, endpoint, h, body)
	if err != nil {
		return nil, err
	}
	if resp.stream {
		for i, ev := range resp.events {
			if e := member(ev, "error"); !isMissing(e) {
				return nil, fmt.Errorf("stream event %d is an error: %s", i, show(e))
			}
			resp.events[i] = member(ev, "result")
		}
		return resp, nil
	}
	if e, ok := member(resp.body, "error").(map[string]any); ok {
		resp.err = rpcErrorView(e)
		return resp, nil
	}
	resp.result = member(resp.body, "result")
	if isMissing(resp.result) {
		return nil, fmt.Errorf("JSON-RPC response has neither result nor error: %s", show(resp.body))
	}
	return resp, nil
}

// callREST performs abstract operation op over HTTP+JSON (A2A §11) at
// base.
func (r *run) callREST(ctx context.Context, base, op string, params map[string]any) (*response, error) {
	base = strings.TrimSuffix(base, "/")
	id := url.PathEscape(str(params["id"]))
	method, p, withBody := http.MethodGet, "", false
	query := url.Values{}
	switch op {
	case "send_message":
		method, p, withBody = http.MethodPost, "/message:send", true
	case "send_streaming_message":
		method, p, withBody = http.MethodPost, "/message:stream", true
	case "get_task":
		p = "/tasks/" + id
		addQuery(query, params, "historyLength")
	case "list_tasks":
		p = "/tasks"
		addQuery(query, params, "contextId", "status", "pageSize", "pageToken", "historyLength", "includeArtifacts")
	case "cancel_task":
		method, p = http.MethodPost, "/tasks/"+id+":cancel"
	case "subscribe_to_task":
		// A2A §11.3.2 (the ACTS table's GET predates it).
		method, p = http.MethodPost, "/tasks/"+id+":subscribe"
	case "get_extended_agent_card":
		p = "/extendedAgentCard"
	case "create_push_config":
		method, p, withBody = http.MethodPost, "/tasks/"+url.PathEscape(str(params["taskId"]))+"/pushNotificationConfigs", true
	case "get_push_config", "delete_push_config":
		p = "/tasks/" + url.PathEscape(str(params["taskId"])) + "/pushNotificationConfigs/" + id
		if op == "delete_push_config" {
			method = http.MethodDelete
		}
	case "list_push_configs":
		p = "/tasks/" + url.PathEscape(str(params["taskId"])) + "/pushNotificationConfigs"
	default:
		return nil, fmt.Errorf("operation %q has no HTTP+JSON route", op)
	}
	u := base + p
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	h := map[string]string{"A2A-Version": r.t.SpecVersion, "Accept": "application/json"}
	var body []byte
	if withBody {
		var err error
		if body, err = json.Marshal(params); err != nil {
			return nil, err
		}
		h["Content-Type"] = "application/a2a+json"
	}
	if streaming(op) {
		h["Accept"] = "text/event-stream"
	}
	resp, err := r.do(ctx, method, u, h, body)
	if err != nil || resp.stream {
		return resp, err
	}
	if resp.status >= 400 {
		resp.err = restErrorView(resp.status, resp.body)
		return resp, nil
	}
	resp.result = resp.body
	return resp, nil
}

func addQuery(q url.Values, params map[string]any, names ...string) {
	for _, n := range names {
		if v, ok := params[n]; ok && v != nil {
			q.Set(n, fmt.Sprint(v))
		}
	}
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// do sends one HTTP request and reads a JSON body or an SSE stream.
func (r *run) do(ctx context.Context, method, u string, headers map[string]string, body []byte) (*response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	hr, err := r.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer hr.Body.Close()
	resp := &response{status: hr.StatusCode}
	if ct, _, _ := mime.ParseMediaType(hr.Header.Get("Content-Type")); ct == "text/event-stream" {
		resp.stream = true
		resp.events, err = readSSE(hr.Body)
		return resp, err
	}
	b, err := io.ReadAll(io.LimitReader(hr.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		resp.body = missing
		return resp, nil
	}
	if err := json.Unmarshal(b, &resp.body); err != nil {
		return nil, fmt.Errorf("%s %s: status %d, body is not JSON: %.200s", method, u, hr.StatusCode, b)
	}
	return resp, nil
}

// readSSE reads server-sent events until the stream ends; each event's
// data is JSON.
func readSSE(rd io.Reader) ([]any, error) {
	var events []any
	var data []string
	flush := func() error {
		if len(data) == 0 {
			return nil
		}
		var v any
		if err := json.Unmarshal([]byte(strings.Join(data, "\n")), &v); err != nil {
			return fmt.Errorf("SSE event %d: %w", len(events), err)
		}
		events, data = append(events, v), nil
		return nil
	}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if err := flush(); err != nil {
				return events, err
			}
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil {
		return events, err
	}
	return events, flush()
}

// A2A error types by JSON-RPC code (A2A §5.4, §9.5).
var rpcErrorTypes = map[int]string{
	-32700: "JSONParseError",
	-32600: "InvalidRequestError",
	-32601: "MethodNotFoundError",
	-32602: "InvalidParamsError",
	-32603: "InternalError",
	-32001: "TaskNotFoundError",
	-32002: "TaskNotCancelableError",
	-32003: "PushNotificationNotSupportedError",
	-32004: "UnsupportedOperationError",
	-32005: "ContentTypeNotSupportedError",
	-32006: "InvalidAgentResponseError",
	-32007: "ExtendedAgentCardNotConfiguredError",
	-32008: "ExtensionSupportRequiredError",
	-32009: "VersionNotSupportedError",
}

// errorTypeAliases are ACTS names of A2A error types that the A2A
// specification names otherwise.
var errorTypeAliases = map[string]string{
	"ExtendedCardNotSupportedError": "ExtendedAgentCardNotConfiguredError",
}

// errorView is the assertion root of an error: its abstract type (as
// "code" and "error_type", which the corpus both uses), message and
// details (as "data" and "details").
func errorView(typ string, message, details any) map[string]any {
	v := map[string]any{"code": typ, "error_type": typ}
	if !isMissing(message) {
		v["message"] = message
	}
	if !isMissing(details) {
		v["data"], v["details"] = details, details
	}
	return v
}

func rpcErrorView(e map[string]any) map[string]any {
	code, _ := number(e["code"])
	typ, ok := rpcErrorTypes[int(code)]
	if !ok {
		typ = fmt.Sprintf("JSON-RPC error %v", e["code"])
	}
	v := errorView(typ, member(e, "message"), member(e, "data"))
	v["rpc_code"] = e["code"]
	return v
}

// restErrorView reads a google.rpc.Status error (A2A §11.6): the type from
// the ErrorInfo of domain a2a-protocol.org (reason TASK_NOT_FOUND is
// TaskNotFoundError), else the HTTP status.
func restErrorView(status int, body any) map[string]any {
	e := member(body, "error")
	details := member(e, "details")
	typ := fmt.Sprintf("HTTP %d", status)
	if arr, ok := details.([]any); ok {
		for _, d := range arr {
			if member(d, "domain") == "a2a-protocol.org" && strings.HasSuffix(str(member(d, "@type")), "google.rpc.ErrorInfo") {
				typ = typeOfReason(str(member(d, "reason")))
			}
		}
	}
	v := errorView(typ, member(e, "message"), details)
	v["http_status"] = status
	return v
}

// typeOfReason turns TASK_NOT_FOUND into TaskNotFoundError.
func typeOfReason(reason string) string {
	var b strings.Builder
	for _, w := range strings.Split(strings.ToLower(reason), "_") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String() + "Error"
}

// httpStatusOf is the HTTP status of an A2A error type (A2A §5.4), with
// which a JSON-RPC error answers `expect.status` like a REST one would.
func httpStatusOf(typ string) int {
	switch typ {
	case "TaskNotFoundError", "MethodNotFoundError":
		return http.StatusNotFound
	case "InternalError", "InvalidAgentResponseError":
		return http.StatusInternalServerError
	}
	if strings.HasPrefix(typ, "JSON-RPC error") {
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}
