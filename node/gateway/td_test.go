package gateway_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/node/gateway"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestConsumerViewGolden: testdata/*.td.json is a signed TD as published,
// *.view.json its consumer view for a node at http://127.0.0.1:5080 (and
// *.pinned.json with ?publisher=, *.bearer.json for an API that requires a
// bearer token, *.transports.json for a node that also offers the
// WebSocket and MQTT bindings).
func TestConsumerViewGolden(t *testing.T) {
	in, err := filepath.Glob("testdata/*.td.json")
	if err != nil || len(in) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	const api = "http://127.0.0.1:5080"
	for _, path := range in {
		td, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		base := path[:len(path)-len(".td.json")]
		for suffix, v := range map[string]gateway.View{
			".view.json":   {Base: api},
			".pinned.json": {Base: api, Query: "?publisher=12D3KooWExample"},
			".bearer.json": {Base: api, Bearer: true},
			".transports.json": {Base: api, WebSocket: "ws://127.0.0.1:5080/ws", MQTT: &gateway.MQTTForms{
				Broker: "mqtt://127.0.0.1:1883",
				Topic:  func(levels ...string) string { return "urn:dev:thing/" + strings.Join(levels, "/") },
			}},
		} {
			got, err := gateway.ConsumerView(td, v)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, got, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			golden := base + suffix
			if *update {
				if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Errorf("%s: consumer view differs from %s:\n%s", path, golden, pretty.Bytes())
			}
		}
	}
}

func TestConsumerViewRejectsGarbage(t *testing.T) {
	if _, err := gateway.ConsumerView([]byte("{not json"), gateway.View{Base: "http://127.0.0.1:5080"}); err == nil {
		t.Error("ConsumerView accepted a broken TD")
	}
}

// The consumer view's @context leads with the TD 1.0 and TD 1.1 URIs and
// keeps the published context's other entries in their order, whatever
// the publisher wrote.
func TestConsumerViewContext(t *testing.T) {
	const (
		td10 = lmosproto.ContextTD10
		td11 = lmosproto.ContextTD11
		lmos = `{"lmos":"` + lmosproto.ContextLMOS + `"}`
	)
	for _, c := range []struct{ published, want string }{
		{`"` + td11 + `"`, `["` + td10 + `","` + td11 + `"]`},
		{`"` + td10 + `"`, `["` + td10 + `","` + td11 + `"]`},
		{`["` + td11 + `",` + lmos + `]`, `["` + td10 + `","` + td11 + `",` + lmos + `]`},
		{`["` + td10 + `","` + td11 + `",` + lmos + `]`, `["` + td10 + `","` + td11 + `",` + lmos + `]`},
		{`["` + td11 + `","https://example.org/ctx",` + lmos + `,"` + td10 + `"]`, `["` + td10 + `","` + td11 + `","https://example.org/ctx",` + lmos + `]`},
	} {
		td := `{"@context":` + c.published + `,"id":"urn:x","title":"x","securityDefinitions":{"n":{"scheme":"nosec"}},"security":"n"}`
		view, err := gateway.ConsumerView([]byte(td), gateway.View{Base: "http://127.0.0.1:5080"})
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Context json.RawMessage `json:"@context"`
		}
		if err := json.Unmarshal(view, &doc); err != nil {
			t.Fatal(err)
		}
		if string(doc.Context) != c.want {
			t.Errorf("@context %s: view has %s, want %s", c.published, doc.Context, c.want)
		}
	}
}
