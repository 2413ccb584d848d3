package acts

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"
)

// runDoc exercises both bindings of the runner: an error, a stream, a
// send whose capture feeds the next step, and a test that must fail.
const runDoc = `
acts_version: "1.0"
spec_version: "1.0"
suites:
  - id: s
    name: runner
    tests:
      - id: T-ERR
        name: missing task
        level: must
        steps:
          - id: get
            operation: get_task
            params: {id: nope}
            expect_error: {error_type: TaskNotFoundError, message: {type: string}}
      - id: T-ERR-WRONG
        name: wrong error type
        level: must
        steps:
          - id: get
            operation: get_task
            params: {id: nope}
            expect_error: {code: TaskNotCancelableError}
      - id: T-STREAM
        name: stream
        level: should
        steps:
          - id: s
            operation: send_streaming_message
            params: {message: {role: ROLE_USER, parts: [{text: hi}]}}
            expect_stream:
              min_count: 3
              ordering: monotonic_state
              events:
                - {index: 0, task: {id: t1}}
                - {match: any_position, artifact: {exists: true}}
              final_event: {status: {state: TASK_STATE_COMPLETED}}
      - id: T-SEND
        name: send then get
        level: may
        steps:
          - id: send
            operation: send_message
            params: {taskId: t0, message: {role: ROLE_USER, parts: [{text: hi}]}}
            expect: {status: 200, body: {task: {id: {type: string}}}}
            capture: {taskId: task.id}
          - id: get
            operation: get_task
            params: {id: "{{send.taskId}}"}
            expect_error: {code: TaskNotFoundError}
            assertions:
              - source: "{{send.response}}"
                any: {path: "task.artifacts[*].parts[*]", match: {text: t1}}
`

// fakeAgent answers the runner's requests over JSON-RPC (/rpc) and
// HTTP+JSON (/rest) the way an A2A 1.0 agent would.
func fakeAgent(t *testing.T) *httptest.Server {
	task := map[string]any{"id": "t1", "contextId": "c1", "status": map[string]any{"state": "TASK_STATE_SUBMITTED"},
		"artifacts": []any{map[string]any{"artifactId": "a", "parts": []any{map[string]any{"text": "t1"}}}}}
	events := []any{map[string]any{"task": task},
		map[string]any{"artifactUpdate": map[string]any{"taskId": "t1", "artifact": task["artifacts"].([]any)[0]}},
		map[string]any{"statusUpdate": map[string]any{"taskId": "t1", "status": map[string]any{"state": "TASK_STATE_COMPLETED"}}}}
	sse := func(w http.ResponseWriter, wrap func(any) any) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range events {
			b, _ := json.Marshal(wrap(ev))
			fmt.Fprintf(w, ": ping\n\ndata: %s\n\n", b)
		}
	}
	// checkSend verifies what the runner adds to a message (§4.3).
	checkSend := func(params map[string]any) error {
		m, _ := params["message"].(map[string]any)
		if m["messageId"] == nil || m["taskId"] != "t0" || params["taskId"] != nil {
			return fmt.Errorf("message %v: want a messageId and taskId t0 moved into it", params)
		}
		return nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /card", func(w http.ResponseWriter, r *http.Request) {
		base := "http://" + r.Host
		_ = json.NewEncoder(w).Encode(map[string]any{"name": "fake", "capabilities": map[string]any{"streaming": true},
			"supportedInterfaces": []any{map[string]any{"url": base + "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
				map[string]any{"url": base + "/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}}})
	})
	mux.HandleFunc("POST /rpc", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     any            `json:"id"`
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		answer := func(k string, v any) {
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, k: v})
		}
		switch req.Method {
		case "SendStreamingMessage":
			sse(w, func(ev any) any { return map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": ev} })
		case "SendMessage":
			if err := checkSend(req.Params); err != nil {
				answer("error", map[string]any{"code": -32602, "message": err.Error()})
				return
			}
			answer("result", map[string]any{"task": task})
		default:
			answer("error", map[string]any{"code": -32001, "message": "task not found"})
		}
	})
	mux.HandleFunc("POST /rest/message:stream", func(w http.ResponseWriter, _ *http.Request) { sse(w, func(ev any) any { return ev }) })
	mux.HandleFunc("POST /rest/message:send", func(w http.ResponseWriter, r *http.Request) {
		var p map[string]any
		_ = json.NewDecoder(r.Body).Decode(&p)
		if err := checkSend(p); err != nil {
			http.Error(w, `{"error":{"code":400,"message":"bad"}}`, http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"task": task})
	})
	mux.HandleFunc("GET /rest/tasks/{id}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":404,"status":"NOT_FOUND","message":"task not found","details":[
			{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestRun(t *testing.T) {
	srv := fakeAgent(t)
	tests, err := Load(fstest.MapFS{"suite.acts.yaml": {Data: []byte(runDoc)}}, "suite.acts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	results := Run(context.Background(), Config{CardURL: srv.URL + "/card"}, tests)
	want := map[string]string{"T-ERR": Pass, "T-ERR-WRONG": Fail, "T-STREAM": Pass, "T-SEND": Pass}
	for _, r := range results {
		w := want[r.ID]
		if r.Transport == GRPC {
			w = Skip
		}
		if r.Outcome != w {
			t.Errorf("%s/%s: %s (%s), want %s", r.Transport, r.ID, r.Outcome, r.Reason, w)
		}
	}
	if len(results) != 3*len(want) {
		t.Errorf("%d results, want %d", len(results), 3*len(want))
	}
	c := Tally(results)
	if c[REST]["must"].Pass != 1 || c[JSONRPC]["must"].Fail != 1 || c[GRPC]["may"].Skip != 1 {
		t.Errorf("tally:\n%s", Summary(results))
	}
}
