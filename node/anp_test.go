package node_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/anp"
	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/did/didtest"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// anpDir holds the independent ANP client (scripts/interop/anp).
var anpDir = filepath.Join("..", "scripts", "interop", "anp")

// nodeDIDWBA is the did:wba of n configured as configured: with the e1_
// segment of n's key.
func nodeDIDWBA(t testing.TB, n *node.Node, configured string) string {
	t.Helper()
	pub, err := lmosproto.ParseDIDKey(n.DIDKey())
	if err != nil {
		t.Fatal(err)
	}
	return configured + ":" + anp.Fingerprint(pub)
}

// front serves paths of n's API over srv, an HTTPS server for a made-up
// domain: what an operator's TLS-terminating proxy does
// (X-Forwarded-Proto: https, the client's Host kept).
func front(srv *didtest.Server, n *node.Node, paths ...string) {
	api, _ := url.Parse("http://" + n.APIAddr())
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(api)
		r.SetXForwarded()
		r.Out.Host = r.In.Host
	}}
	for _, p := range paths {
		srv.HandleFunc(p, proxy.ServeHTTP)
	}
}

// clientDID hosts on srv the did:wba document of a new key at path and
// returns the DID and the private key as a JWK.
func clientDID(t *testing.T, srv *didtest.Server, path ...string) (string, ed25519.PrivateKey, string) {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id := srv.DID("wba", path...)
	mb := strings.TrimPrefix(lmosproto.DIDKey(pub), "did:key:")
	doc := fmt.Sprintf(`{"@context":["https://www.w3.org/ns/did/v1","https://w3id.org/security/multikey/v1"],"id":%q,
	  "verificationMethod":[{"id":"%s#key-1","type":"Multikey","controller":%q,"publicKeyMultibase":%q}],
	  "authentication":["%s#key-1"]}`, id, id, id, mb, id)
	srv.Handle("/"+strings.Join(path, "/")+"/did.json", []byte(doc), "max-age=60")
	jwk, _ := json.Marshal(map[string]string{"kty": "OKP", "crv": "Ed25519",
		"x": base64.RawURLEncoding.EncodeToString(pub), "d": base64.RawURLEncoding.EncodeToString(key.Seed())})
	return id, key, string(jwk)
}

// TestANPClientJS runs an ANP client written in JavaScript from the specs
// (scripts/interop/anp/client.mjs: http-message-signatures, jose) against
// a node with a did:wba behind an HTTPS front (test CA, a made-up domain
// on 127.0.0.1) whose API requires its token: the client resolves the
// node's DID and checks its e1_ binding and proof, reads the discovery
// collection and the agent's description with DID-WBA signed requests,
// calls the agent through the description's WoT-TD interface, signed,
// then with the access token it got (which it verifies with the node's
// DID key), and sees a tampered body and a bad signature refused with
// 401 and the DIDWba challenge.
func TestANPClientJS(t *testing.T) {
	testnet.NPM(t, anpDir)
	nodeSrv := didtest.NewServer(t, "agents.example")
	clientSrv := didtest.NewServer(t, "client.example")
	cid, _, cjwk := clientDID(t, clientSrv, "agents", "js")
	configured := nodeSrv.DID("wba", "node", "alpha")
	net := testnet.New(t, 1, testnet.Options{
		Configure: func(_ int, cfg *config.Config) {
			cfg.APIToken = "anp-test-token-0123456789abcdef0123456789"
			cfg.ANP.DID = configured
		},
		NodeOptions: func(int) []node.Option { return []node.Option{node.WithDIDResolver(clientSrv.Options())} },
	})
	n := net.Nodes[0]
	id := testnet.UniqueID(t)
	a2aAgent(t, n, id)
	nid := nodeDIDWBA(t, n, configured)
	parsed, err := did.Parse(nid)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(parsed.URL())
	front(nodeSrv, n, u.Path, anp.PathDescriptions, anp.DescriptionPath(n.PeerID(), id),
		"/things/"+id+"/td", "/things/"+id+"/actions/chat")

	cmd := exec.Command("node", "client.mjs")
	cmd.Dir = anpDir
	cmd.Env = append(cmd.Environ(), "NODE_DID="+nid, "CLIENT_DID="+cid, "CLIENT_JWK="+cjwk, "CA_FILE="+nodeSrv.CAFile,
		"HOSTS=agents.example,client.example", "AGENT_NAME=ChatAgent", "ACTION=chat", `INPUT="hello anp"`)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("client.mjs (%v): %s", time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("client.mjs: %v", err)
	}
	var rep struct {
		OK     bool `json:"ok"`
		Report struct {
			Output    string `json:"output"`
			TokenCall string `json:"tokenCall"`
		} `json:"report"`
	}
	if err := json.Unmarshal(out[strings.LastIndexByte(strings.TrimSpace(string(out)), '\n')+1:], &rep); err != nil || !rep.OK ||
		rep.Report.Output != "HELLO ANP" || rep.Report.TokenCall != "HELLO ANP" {
		t.Fatalf("report %+v (%v)", rep, err)
	}
}

// anpService starts scripts/interop/anp/service.mjs, an ANP-described
// hotel agent on 127.0.0.1 that checks DID-WBA signatures itself
// (resolving callers' did:wba over HTTPS with the test CA of caFile),
// and returns its port and the lines it logs.
func anpService(t *testing.T, caFile string) (int, <-chan map[string]any) {
	t.Helper()
	cmd := exec.Command("node", "service.mjs")
	cmd.Dir = anpDir
	cmd.Env = append(cmd.Environ(), "CA_FILE="+caFile, "HOSTS=agents.example")
	cmd.Stderr = t.Output()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan map[string]any, 16)
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatalf("service.mjs: no port: %v", sc.Err())
	}
	var first struct{ Port int }
	if err := json.Unmarshal(sc.Bytes(), &first); err != nil || first.Port == 0 {
		t.Fatalf("service.mjs: %q: %v", sc.Text(), err)
	}
	go func() {
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	return first.Port, lines
}

// TestANPImportCalledFromAnotherNode imports an ANP agent (an
// independent JavaScript service described per ANP-07, with an openrpc
// interface) on node A, whose did:wba is served behind an HTTPS front,
// and calls it from node B over B's HTTP binding: the call reaches A over
// libp2p and goes out to the service as a JSON-RPC request signed with
// A's did:wba, which the service verifies by resolving A's DID. A call
// the service cannot verify (a node without did:wba) is refused by it.
func TestANPImportCalledFromAnotherNode(t *testing.T) {
	testnet.NPM(t, anpDir)
	front0 := didtest.NewServer(t, "agents.example")
	configured := front0.DID("wba", "node", "a")
	net := testnet.New(t, 3, testnet.Options{Configure: func(i int, cfg *config.Config) {
		if i == 0 {
			cfg.ANP.DID = configured
		}
	}})
	a, b, unsigned := net.Nodes[0], net.Nodes[1], net.Nodes[2]
	parsed, err := did.Parse(nodeDIDWBA(t, a, configured))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(parsed.URL())
	front(front0, a, u.Path)
	port, calls := anpService(t, front0.CAFile)
	adURL := fmt.Sprintf("http://127.0.0.1:%d/agents/hotel/ad.json", port)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := apiclient.New("http://"+a.APIAddr(), httpapi.BearerClient(a.APIToken())).ImportANP(ctx, anp.ImportRequest{URL: adURL})
	if err != nil {
		t.Fatal(err)
	}
	if res.Endpoint != fmt.Sprintf("http://127.0.0.1:%d/api/v1/hotel/jsonrpc", port) || strings.Join(res.Methods, ",") != "searchRooms" {
		t.Fatalf("import %+v", res)
	}
	net.Link(1, 0)
	testnet.WaitFor(t, "B learns the ANP agent", 10*time.Second, func() (bool, string) {
		return len(b.Directory().Lookup(res.ThingID)) > 0, "not yet"
	})
	status, body := postText(t, "http://"+b.APIAddr()+"/things/"+res.ThingID+"/actions/searchRooms",
		`{"searchCriteria":{"checkIn":"2026-12-01","checkOut":"2026-12-03","guests":2}}`)
	var out struct {
		Total  int    `json:"total"`
		Guests int    `json:"guests"`
		Caller string `json:"caller"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &out) != nil || out.Total != 1 || out.Guests != 2 || out.Caller != parsed.DID {
		t.Fatalf("call from B: %d %s (want the caller %s)", status, body, parsed.DID)
	}
	if m := <-calls; m["did"] != parsed.DID {
		t.Fatalf("the service logged %v", m)
	}

	// A node without did:wba calls unsigned: the service refuses (401),
	// the caller gets 502 naming it.
	if _, err := apiclient.New("http://"+unsigned.APIAddr(), httpapi.BearerClient(unsigned.APIToken())).ImportANP(ctx, anp.ImportRequest{URL: adURL}); err != nil {
		t.Fatal(err)
	}
	status, body = postText(t, "http://"+unsigned.APIAddr()+"/things/"+res.ThingID+"/actions/searchRooms",
		`{"searchCriteria":{"checkIn":"2026-12-01","checkOut":"2026-12-03","guests":2}}`)
	if status != http.StatusBadGateway || !strings.Contains(string(body), "401") {
		t.Fatalf("unsigned call: %d %s", status, body)
	}
	if m := <-calls; m["refused"] != "invalid_request" {
		t.Fatalf("the service logged %v", m)
	}
}

// postText posts the JSON text body to u and returns the status and answer.
func postText(t *testing.T, u, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(u, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
