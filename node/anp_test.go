package node_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
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
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/did/didtest"
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
		NodeOptions: func(int) []node.Option { return []node.Option{node.WithDIDOptions(clientSrv.Options())} },
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
