package acts

import (
	"encoding/json"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestCheck(t *testing.T) {
	const doc = `{"id":"t1","n":3,"ok":true,"nil":null,"s":"TASK_STATE_COMPLETED",
		"ts":"2026-01-01T00:00:00.000Z","arr":[{"a":1},{"a":2}],"obj":{"type":"about:blank","status":404}}`
	var actual any
	if err := json.Unmarshal([]byte(doc), &actual); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		assertion string // YAML
		pass      bool
	}{
		{`id: t1`, true},
		{`id: t2`, false},
		{`n: 3`, true},
		{`n: 3.5`, false},
		{`id: {type: string}`, true},
		{`id: {type: number}`, false},
		{`nil: {type: "null"}`, true},
		{`arr: {type: array}`, true},
		{`obj: {type: object}`, true},
		{`ok: {type: boolean}`, true},
		{`id: {exists: true}`, true},
		{`missing: {exists: true}`, false},
		{`missing: {absent: true}`, true},
		{`id: {absent: true}`, false},
		{`nil: {absent: true}`, false},
		{`s: {contains: COMPLETED}`, true},
		{`s: {contains: FAILED}`, false},
		{`s: {starts_with: TASK_STATE_}`, true},
		{`s: {starts_with: STATE}`, false},
		{`ts: {matches: '^\d{4}-\d{2}-\d{2}T'}`, true},
		{`id: {matches: '^\d+$'}`, false},
		{`arr: {count: 2}`, true},
		{`arr: {count: 1}`, false},
		{`arr: {count_gte: 2}`, true},
		{`arr: {count_gte: 3}`, false},
		{`arr: {count_lte: 2}`, true},
		{`arr: {count_lte: 1}`, false},
		{`s: {one_of: [TASK_STATE_WORKING, TASK_STATE_COMPLETED]}`, true},
		{`s: {one_of: [TASK_STATE_WORKING]}`, false},
		{`one_of: [{id: x}, {n: 3}]`, true},
		{`one_of: [{id: x}, {n: 4}]`, false},
		{`missing: {any_of: [{absent: true}, {type: array}]}`, true},
		{`arr: {any_of: [{absent: true}, {type: array, count: 0}]}`, false},
		{`s: {all_of: [{type: string}, {contains: TASK}]}`, true},
		{`s: {all_of: [{type: string}, {contains: NOPE}]}`, false},
		{`arr: {items: {a: {type: number}}}`, true},
		{`arr: {items: {a: 1}}`, false},
		{`arr: {items: [{a: 1}]}`, true},
		{`arr: [{a: 1}, {a: 2}]`, true},
		{`arr: [{a: 2}]`, false},
		{`arr: [{}, {}, {}]`, false},
		// "type" with a map is a field (problem details), not the operator.
		{`obj: {type: {type: string}, status: {type: number}}`, true},
		{`obj: {type: {type: number}}`, false},
	} {
		var a any
		if err := yaml.Unmarshal([]byte(tc.assertion), &a); err != nil {
			t.Fatalf("%s: %v", tc.assertion, err)
		}
		err := check(a, actual, "body")
		if (err == nil) != tc.pass {
			t.Errorf("%s: pass %v, want %v (%v)", tc.assertion, err == nil, tc.pass, err)
		}
	}
}

func TestResolve(t *testing.T) {
	var v any
	_ = json.Unmarshal([]byte(`{"task":{"id":"x","artifacts":[{"parts":[{"text":"a"},{"data":{}}]},{"parts":[{"text":"b"}]}]}}`), &v)
	if got := resolveOne(v, "task.id"); got != "x" {
		t.Errorf("task.id = %v", got)
	}
	if got := resolveOne(v, "task.artifacts[1].parts[0].text"); got != "b" {
		t.Errorf("indexed = %v", got)
	}
	if got := resolveOne(v, "task.artifacts[2].parts"); !isMissing(got) {
		t.Errorf("out of range = %v", got)
	}
	if got := resolve(v, "task.artifacts[*].parts[*]"); len(got) != 3 {
		t.Errorf("wildcards: %d elements", len(got))
	}
}

func TestUntil(t *testing.T) {
	root := map[string]any{"status": map[string]any{"state": "TASK_STATE_WORKING"}}
	for _, tc := range []struct {
		expr string
		want bool
	}{
		{"status.state == TASK_STATE_WORKING", true},
		{"status.state == TASK_STATE_COMPLETED", false},
		{"status.state != TASK_STATE_COMPLETED", true},
		{"status.state in [TASK_STATE_COMPLETED, TASK_STATE_FAILED]", false},
		{"status.state in [TASK_STATE_COMPLETED, TASK_STATE_WORKING]", true},
	} {
		got, err := until(tc.expr, root)
		if err != nil || got != tc.want {
			t.Errorf("%s = %v, %v; want %v", tc.expr, got, err, tc.want)
		}
	}
	if _, err := until("status.state ~ x", root); err == nil {
		t.Error("an unknown operator is accepted")
	}
}

func TestMonotonic(t *testing.T) {
	ev := func(kind, state string) any {
		if kind == "task" {
			return map[string]any{"task": map[string]any{"status": map[string]any{"state": state}}}
		}
		return map[string]any{"statusUpdate": map[string]any{"status": map[string]any{"state": state}}}
	}
	ok := []any{ev("task", "TASK_STATE_SUBMITTED"), ev("s", "TASK_STATE_WORKING"), map[string]any{"artifactUpdate": map[string]any{}},
		ev("s", "TASK_STATE_INPUT_REQUIRED"), ev("s", "TASK_STATE_WORKING"), ev("s", "TASK_STATE_COMPLETED")}
	if err := monotonic(ok); err != nil {
		t.Error(err)
	}
	if err := monotonic([]any{ev("s", "TASK_STATE_COMPLETED"), ev("s", "TASK_STATE_WORKING")}); err == nil {
		t.Error("a state after a terminal one passes")
	}
	if err := monotonic([]any{ev("s", "TASK_STATE_WORKING"), ev("s", "TASK_STATE_SUBMITTED")}); err == nil {
		t.Error("a regression to SUBMITTED passes")
	}
}

func TestLoadCorpus(t *testing.T) {
	tests, err := Load(Corpus, CorpusMaster)
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) < 100 {
		t.Fatalf("%d tests", len(tests))
	}
	for _, tc := range tests {
		for _, s := range tc.Steps {
			op := s.Operation
			if a, ok := operationAliases[op]; ok {
				op = a
			}
			if _, ok := rpcMethods[op]; op != "" && op != "get_agent_card" && !ok {
				t.Errorf("%s step %s: operation %q unknown to the runner", tc.ID, s.ID, s.Operation)
			}
		}
	}
}
