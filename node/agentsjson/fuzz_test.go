package agentsjson

import (
	"context"
	"encoding/json"
	"os"
	"testing"
)

// FuzzResolve: whatever a remote agents.json holds (its sources' OpenAPI
// documents embedded), decoding it and resolving its flows' operations
// returns a plan or an error, never a panic.
func FuzzResolve(f *testing.F) {
	doc, err := os.ReadFile("testdata/rootly.agents.json")
	if err != nil {
		f.Fatal(err)
	}
	api, err := os.ReadFile("testdata/rootly.openapi.json")
	if err != nil {
		f.Fatal(err)
	}
	var d Doc
	if err := json.Unmarshal(doc, &d); err != nil {
		f.Fatal(err)
	}
	d.Sources[0].OpenAPI = api
	seed, _ := json.Marshal(d)
	f.Add(seed)
	f.Add([]byte(`{"agentsJson":"0.1.0","sources":[{"id":"s","openapi":{"openapi":"3.1.0","paths":{"/x":{"$ref":"#/paths/~1x"}}}}],"flows":[{"id":"f","actions":[{"id":"a","sourceId":"s","operationId":"o"}]}]}`))
	c, err := NewClient(ClientConfig{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Doc
		if json.Unmarshal(data, &d) != nil {
			return
		}
		for i := range d.Sources {
			if len(d.Sources[i].OpenAPI) == 0 {
				d.Sources[i].OpenAPI = json.RawMessage(`{}`) // no fetch: only what the document holds
			}
		}
		for _, fl := range d.Flows {
			p, err := c.resolve(context.Background(), "http://127.0.0.1:1/agents.json", &d, fl)
			if err == nil && len(p.steps) != len(fl.Actions) {
				t.Fatalf("flow %q: %d steps for %d actions", fl.ID, len(p.steps), len(fl.Actions))
			}
		}
	})
}
