package node_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/did/didtest"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/mcpbridge"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// didWebDir is the independent did:web / did:wba checker (check-org.mjs).
var didWebDir = filepath.Join("..", "scripts", "interop", "didweb")

// orgNet starts the organisation test: an HTTPS server for org.example on
// 127.0.0.1 (test CA) and five nodes that resolve org.example through it:
// 0 and 1 are the organisation's nodes (its DID document lists their
// keys), 2 claims the organisation without being listed, 3 and 4 learn
// the Things of 0–2. Each of 0–2 publishes one Thing; the returned ids
// are theirs.
func orgNet(t *testing.T) (*testnet.Net, *didtest.Server, string, []string) {
	t.Helper()
	srv := didtest.NewServer(t, "org.example")
	org := srv.DID("web")
	opts := srv.Options()
	opts.ErrorTTL = 200 * time.Millisecond
	net := testnet.New(t, 5, testnet.Options{
		Configure: func(i int, cfg *config.Config) {
			if i < 3 {
				cfg.Organization = org
			}
		},
		NodeOptions: func(int) []node.Option { return []node.Option{node.WithDIDResolver(opts)} },
	})
	var keys []ed25519.PublicKey
	for _, n := range net.Nodes[:2] {
		pub, err := lmosproto.ParseDIDKey(n.DIDKey())
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, pub)
	}
	doc, err := did.NewDocument(org, keys)
	if err != nil {
		t.Fatal(err)
	}
	srv.Handle("/.well-known/did.json", doc, "max-age=300")
	for _, obs := range []int{3, 4} {
		for pub := range 3 {
			net.Link(obs, pub)
		}
	}
	// The observers learn the Things by gossip: the publishers must hold
	// their subscriptions first. An announcement made while one is on
	// its way reaches that observer only by gossip repair within a few
	// heartbeats, or at a later beat or sync (docs/wire.md), which under
	// load came after this test's wait.
	topics := []string{lmosproto.TopicAnnounce}
	for i := range lmosproto.ShardCount {
		topics = append(topics, lmosproto.ShardTopic(i))
	}
	testnet.WaitFor(t, "the publishers hold the observers' subscriptions", 30*time.Second, func() (bool, string) {
		for pub := range 3 {
			for _, obs := range net.Nodes[3:] {
				for _, tp := range topics {
					if !slices.Contains(net.Nodes[pub].PubSub().ListPeers(tp), obs.PeerID()) {
						return false, fmt.Sprintf("node %d lacks %s on %s", pub, obs.PeerID().ShortString(), tp)
					}
				}
			}
		}
		return true, ""
	})
	base := testnet.UniqueID(t)
	var ids []string
	for i, name := range []string{"a", "b", "impostor"} {
		id := base + "-" + name
		registerWho(t, net.Nodes[i], id, name)
		ids = append(ids, id)
	}
	return net, srv, org, ids
}

// consumerOrg reads the consumer view of id on n: its
// lmos:organizationStatus, lmos:trust and LMOS-Organization header.
func consumerOrg(t *testing.T, n *node.Node, id string) (org did.Organization, trust, header string) {
	t.Helper()
	resp, err := http.Get("http://" + n.APIAddr() + "/things/" + url.PathEscape(id) + "/td")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var view struct {
		Org   did.Organization `json:"lmos:organizationStatus"`
		Trust string           `json:"lmos:trust"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&view); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("consumer view of %s: %s %v", id, resp.Status, err)
	}
	return view.Org, view.Trust, resp.Header.Get("LMOS-Organization")
}

// TestOrganizationBinding: two nodes of org.example show as it on a third
// node (consumer views, the directory listing find reads, the headers); a
// node that claims org.example without being listed shows unverified, with
// the reason, never as the domain; a fourth node that allows org.example
// trusts the two members and not the impostor.
func TestOrganizationBinding(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	net, _, org, ids := orgNet(t)
	observer, truster := net.Nodes[3], net.Nodes[4]
	for _, n := range []*node.Node{observer, truster} {
		testnet.WaitFor(t, "the observers learn the three Things", 30*time.Second, func() (bool, string) {
			for _, id := range ids {
				if len(n.Directory().Lookup(id)) == 0 {
					return false, "missing " + id
				}
			}
			return true, ""
		})
	}
	testnet.WaitFor(t, "the members verify on the observer", 10*time.Second, func() (bool, string) {
		o, _, _ := consumerOrg(t, observer, ids[0])
		p, _, _ := consumerOrg(t, observer, ids[1])
		return o.Verified && p.Verified, o.Reason + " / " + p.Reason
	})
	for _, id := range ids[:2] {
		o, _, header := consumerOrg(t, observer, id)
		if o.DID != org || o.Domain != "org.example" || !o.Verified || o.Reason != "" || header != did.StatusVerified {
			t.Errorf("member %s: %+v, header %q", id, o, header)
		}
	}
	o, _, header := consumerOrg(t, observer, ids[2])
	if o.Verified || o.DID != org || !strings.Contains(o.Reason, "does not list the publisher's key") || header != did.StatusUnverified {
		t.Errorf("impostor: %+v, header %q; want unverified with the reason", o, header)
	}

	// The listing find reads carries the state per TD; the signed TD
	// carries the claim under its proof.
	res, err := apiclient.New("http://"+observer.APIAddr(), nil).Find(t.Context(), apiclient.FindQuery{Capability: "weather-forecast"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ids[0]: did.StatusVerified, ids[1]: did.StatusVerified, ids[2]: did.StatusUnverified}
	for _, f := range res.Things {
		if w, ok := want[f.TD.ID]; ok && (f.Organization != w || f.TD.Organization() != org || f.VerifyErr != nil) {
			t.Errorf("find %s: organization %q (claim %q, proof %v), want %s", f.TD.ID, f.Organization, f.TD.Organization(), f.VerifyErr, w)
		}
	}

	// A2A's index and MCP's find_things show it beside the publisher too.
	_, body := getJSONBody(t, "http://"+observer.APIAddr()+"/a2a/agents")
	var idx a2abridge.AgentIndex
	if err := json.Unmarshal(body, &idx); err != nil {
		t.Fatal(err)
	}
	cl := connectMCP(t, observer)
	mres, err := cl.CallTool(t.Context(), &mcp.CallToolParams{Name: mcpbridge.FindThings, Arguments: map[string]any{"capability": "weather-forecast"}})
	if err != nil || mres.IsError {
		t.Fatalf("find_things: %v %+v", err, mres)
	}
	var found mcpbridge.FindOutput
	sc, _ := json.Marshal(mres.StructuredContent)
	if err := json.Unmarshal(sc, &found); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, ref := range idx.Agents {
		if w, ok := want[ref.ThingID]; ok {
			seen["a2a"]++
			if ref.Organization.Status() != w || (w == did.StatusVerified) != (ref.Organization.Domain == "org.example" && ref.Organization.Verified) {
				t.Errorf("A2A index %s: %+v, want %s", ref.ThingID, ref.Organization, w)
			}
		}
	}
	for _, f := range found.Things {
		if w, ok := want[f.ID]; ok {
			seen["mcp"]++
			if f.Organization.Status() != w {
				t.Errorf("find_things %s: %+v, want %s", f.ID, f.Organization, w)
			}
		}
	}
	if seen["a2a"] != 3 || seen["mcp"] != 3 {
		t.Errorf("the A2A index and find_things list %v of the three Things", seen)
	}

	// The fourth node trusts the organisation by domain.
	if _, err := apiclient.New("http://"+truster.APIAddr(), httpapi.BearerClient(truster.APIToken())).SetTrust(t.Context(), "org.example", "allow"); err != nil {
		t.Fatal(err)
	}
	testnet.WaitFor(t, "the truster trusts the members", 10*time.Second, func() (bool, string) {
		_, a, _ := consumerOrg(t, truster, ids[0])
		_, b, _ := consumerOrg(t, truster, ids[1])
		return a == "trusted" && b == "trusted", a + " " + b
	})
	if _, tr, _ := consumerOrg(t, truster, ids[2]); tr != "unknown" {
		t.Errorf("impostor on the truster: %q, want unknown", tr)
	}
	res, err = apiclient.New("http://"+truster.APIAddr(), nil).Find(t.Context(), apiclient.FindQuery{Capability: "weather-forecast"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Things {
		if w := map[string]string{ids[0]: "trusted", ids[1]: "trusted", ids[2]: "unknown"}[f.TD.ID]; w != "" && f.Trust != w {
			t.Errorf("find on the truster, %s: trust %q, want %s", f.TD.ID, f.Trust, w)
		}
	}
	if cfg, err := config.Load(truster.Config().Home); err != nil || strings.Join(cfg.Trust.Allow, ",") != "org.example" {
		t.Errorf("config.json trust: %+v %v", cfg.Trust, err)
	}
}

// TestOrganizationIndependentCheck: check-org.mjs, a did:web resolver
// written from the specs in JavaScript (jose), resolves org.example's
// document over the same HTTPS server and finds a member's TD key in it,
// and not the impostor's.
func TestOrganizationIndependentCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	testnet.NPM(t, didWebDir)
	net, srv, _, ids := orgNet(t)
	dir := t.TempDir()
	for _, c := range []struct {
		i    int
		want bool
	}{{0, true}, {2, false}} {
		i, want := c.i, c.want
		e, ok := net.Nodes[i].Directory().Latest(net.Nodes[i].PeerID(), ids[i])
		if !ok {
			t.Fatalf("node %d has no Thing %s", i, ids[i])
		}
		rec, err := e.Record()
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "td.json")
		if err := os.WriteFile(file, rec.Raw, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), "node", "check-org.mjs", file)
		cmd.Dir = didWebDir
		cmd.Env = append(os.Environ(), "DIDWEB_HOSTS=org.example=127.0.0.1", "NODE_EXTRA_CA_CERTS="+srv.CAFile)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("node check-org.mjs: %v\n%s", err, errb.Bytes())
		}
		var report struct {
			Listed        bool   `json:"listed"`
			ProofVerified bool   `json:"proofVerified"`
			Domain        string `json:"domain"`
			Error         string `json:"error"`
		}
		if jerr := json.Unmarshal(out.Bytes(), &report); jerr != nil {
			t.Fatalf("check-org.mjs printed %q (%v): %v", out.Bytes(), errb.String(), jerr)
		}
		if report.Listed != want || !report.ProofVerified || report.Domain != "org.example" || (err == nil) != want {
			t.Errorf("node %d: %+v (exit %v), want listed=%v", i, report, err, want)
		}
	}
}
