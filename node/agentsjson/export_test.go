package agentsjson

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	datastore "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/gateway"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// noPublish is the Publisher of a test that only exports.
type noPublish struct{}

func (noPublish) Publish(context.Context, *lmosproto.TD, *directory.Local) (directory.Entry, directory.Change, error) {
	return directory.Entry{}, 0, errors.New("this test publishes nothing")
}

// exportNode is a Handler over a directory of its own, with the HTTP
// binding's consumer views (gateway.ConsumerView), served on 127.0.0.1.
type exportNode struct {
	h    *Handler
	dir  *directory.Directory
	key  ed25519.PrivateKey
	self peer.ID
	srv  *httptest.Server
}

func newExportNode(t testing.TB, cfg Config, visible func(directory.Entry) bool) *exportNode {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	self, _ := lmosproto.PeerIDFromEd25519(key.Public().(ed25519.PublicKey))
	dir, err := directory.Open(directory.Deps{Datastore: dssync.MutexWrap(datastore.NewMapDatastore()), Self: self}, directory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dir.Close() })
	client, _ := NewClient(ClientConfig{})
	view := func(r *http.Request, e directory.Entry) ([]byte, error) {
		rec, err := e.Record()
		if err != nil {
			return nil, err
		}
		return gateway.ConsumerView(rec.Raw, gateway.View{Base: baseURL(r), Query: "?publisher=" + e.Publisher.String()})
	}
	h, err := New(Deps{Directory: dir, Visible: visible, ConsumerView: view, Self: self, Publisher: noPublish{}, Client: client}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &exportNode{h: h, dir: dir, key: key, self: self, srv: srv}
}

// put signs and stores a Thing of key with one action whose input is
// input.
func (n *exportNode) put(t testing.TB, key ed25519.PrivateKey, id, title, input string) {
	t.Helper()
	n.putIn(t, key, id, title, input, nil)
}

// putIn is put of a Thing restricted to groups (none: public).
func (n *exportNode) putIn(t testing.TB, key ed25519.PrivateKey, id, title, input string, groups []string) {
	t.Helper()
	scope := ""
	if groups != nil {
		g, _ := json.Marshal(groups)
		scope = fmt.Sprintf(`"lmos:groups":%s,`, g)
	}
	td, err := lmosproto.ParseTD([]byte(fmt.Sprintf(`{"@context":["https://www.w3.org/2022/wot/td/v1.1",{"lmos":"https://eclipse.dev/lmos/protocol/v1"}],
"@type":"lmos:Tool","id":%q,"title":%q,"securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc",%s
"actions":{"do":{"input":%s,"forms":[{"href":"http://127.0.0.1:1/do"}]}}}`, id, title, scope, input)))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := lmosproto.SignThing(td, key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.dir.Put(rec, nil); err != nil {
		t.Fatal(err)
	}
}

func (n *exportNode) doc(t *testing.T) Doc {
	t.Helper()
	resp, err := http.Get(n.srv.URL + PathWellKnown)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d Doc
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&d) != nil {
		t.Fatalf("GET %s: %d", PathWellKnown, resp.StatusCode)
	}
	return d
}

// TestExportBounds: past Config.MaxThings the document lists the
// node's own Things first and says how many it left out; a Thing of a
// group that Visible hides is not listed.
func TestExportBounds(t *testing.T) {
	n := newExportNode(t, Config{MaxThings: 3}, func(e directory.Entry) bool { return e.Groups == nil })
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	for i := range 4 {
		n.put(t, other, fmt.Sprintf("urn:a:%d", i), "Other", `{"type":"string"}`)
	}
	n.putIn(t, other, "urn:a:hidden", "Hidden", `{"type":"string"}`, []string{"g"})
	n.put(t, n.key, "urn:z:own", "Own", `{"type":"string"}`)
	d := n.doc(t)
	if len(d.Sources) != 3 || d.Sources[0].ID != SourceID(n.self, "urn:z:own", "Own") {
		t.Fatalf("sources %+v", d.Sources)
	}
	if !strings.Contains(d.Info.Description, "lists 3 of the 5 Things") {
		t.Fatalf("description %q", d.Info.Description)
	}
}

// TestExportInputs: an object input's members are the flow's parameters
// linked to the request body's members; any other input is the flow's
// request body.
func TestExportInputs(t *testing.T) {
	n := newExportNode(t, Config{}, func(directory.Entry) bool { return true })
	n.put(t, n.key, "urn:obj", "Object Tool", `{"type":"object","properties":{"city":{"type":"string","description":"Where"},"days":{"type":"integer"}},"required":["city"]}`)
	n.put(t, n.key, "urn:str", "String Tool", `{"type":"string"}`)
	d := n.doc(t)
	flows := map[string]Flow{}
	for _, f := range d.Flows {
		flows[f.ID] = f
	}
	obj := flows[SourceID(n.self, "urn:obj", "Object Tool")+"_invoke_do"]
	want := []Parameter{{Name: "city", Description: "Where", Required: true, Type: "string"}, {Name: "days", Type: "integer"}}
	if fmt.Sprint(obj.Fields.Parameters) != fmt.Sprint(want) || obj.Fields.RequestBody != nil || len(obj.Links) != 2 ||
		obj.Links[0] != (Link{Origin: LinkEnd{ActionID: obj.ID, FieldPath: "parameters.city"}, Target: LinkEnd{ActionID: "invoke_do", FieldPath: "requestBody.city"}}) {
		t.Fatalf("object input: %+v", obj)
	}
	str := flows[SourceID(n.self, "urn:str", "String Tool")+"_invoke_do"]
	if len(str.Fields.Parameters) != 0 || str.Fields.RequestBody == nil || string(str.Fields.RequestBody.Content["application/json"].Schema) != `{"type":"string"}` ||
		len(str.Links) != 1 || str.Links[0].Target.FieldPath != "requestBody" {
		t.Fatalf("string input: %+v", str)
	}
	var api struct {
		Servers []struct{ URL string }
		Paths   map[string]map[string]struct {
			OperationID string
			Parameters  []struct{ Name, In string }
		}
	}
	if err := json.Unmarshal(d.Sources[0].OpenAPI, &api); err != nil {
		t.Fatal(err)
	}
	op := api.Paths["/things/urn:obj/actions/do"]["post"]
	if api.Servers[0].URL != n.srv.URL || op.OperationID != "invoke_do" || len(op.Parameters) != 1 || op.Parameters[0].Name != "publisher" {
		t.Fatalf("OpenAPI %s", d.Sources[0].OpenAPI)
	}
}

// TestDescribeBearer: when the API requires the token (the consumer
// view's bearer scheme), the OpenAPI document declares HTTP bearer
// security.
func TestDescribeBearer(t *testing.T) {
	td := []byte(`{"@context":"https://www.w3.org/2022/wot/td/v1.1","id":"urn:b","title":"B","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc",
"actions":{"go":{"forms":[{"href":"http://127.0.0.1:1/go"}]}}}`)
	view, err := gateway.ConsumerView(td, gateway.View{Base: "http://127.0.0.1:5080", Bearer: true})
	if err != nil {
		t.Fatal(err)
	}
	api, err := describe(view, "b_1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(api.openAPI)
	if !strings.Contains(string(b), `"security":[{"bearer":[]}]`) || !strings.Contains(string(b), `"scheme":"bearer","type":"http"`) ||
		len(api.flows) != 1 || api.flows[0].Fields.RequestBody != nil {
		t.Fatalf("OpenAPI %s, flows %+v", b, api.flows)
	}
}

// BenchmarkExportRender renders the agents.json of 200 Things (what a
// miss of the document cache costs), reporting the document's size.
func BenchmarkExportRender(b *testing.B) {
	n := newExportNode(b, Config{}, func(directory.Entry) bool { return true })
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	for i := range 200 {
		n.put(b, other, fmt.Sprintf("urn:bench:%d", i), fmt.Sprintf("Tool %d", i),
			`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}`)
	}
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:5080"+PathWellKnown, nil)
	size := 0
	for b.Loop() {
		w := httptest.NewRecorder()
		n.h.renderDoc(w, r)
		size = w.Body.Len()
	}
	b.ReportMetric(float64(size), "bytes/doc")
}
