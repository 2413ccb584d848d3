package node_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// consentSetup is an lmos:Agent with one action "chat", published on an
// owner node with an HTTP backend that counts its calls, and the
// operator's node that learned it: the node a web page in the operator's
// browser would call through.
type consentSetup struct {
	owner, local *node.Node
	id           string
	calls        *atomic.Int64
	// action and a2a are the Thing's action and A2A endpoint on the
	// local node's API.
	action, a2a string
}

func newConsentSetup(t *testing.T) *consentSetup {
	t.Helper()
	calls := new(atomic.Int64)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`"done"`))
	}))
	t.Cleanup(backend.Close)
	net := testnet.New(t, 2, testnet.Options{})
	s := &consentSetup{owner: net.Nodes[0], local: net.Nodes[1], id: testnet.UniqueID(t), calls: calls}
	td := testnet.TD(t, s.id, "Door", "door")
	td.Actions = map[string]*lmosproto.ActionAffordance{"chat": {
		Input: json.RawMessage(`{"type":"string"}`), Output: json.RawMessage(`{"type":"string"}`),
		Forms: []lmosproto.Form{{Href: backend.URL + "/actions/chat"}},
	}}
	if _, _, err := s.owner.Things().Publish(t.Context(), td, &directory.Local{Backend: backend.URL}); err != nil {
		t.Fatal(err)
	}
	net.Link(1, 0)
	testnet.WaitFor(t, "the local node learns the Thing", waitLong, func() (bool, string) {
		return len(s.local.Directory().Lookup(s.id)) > 0, "not yet"
	})
	base := "http://" + s.local.APIAddr()
	s.action = base + "/things/" + url.PathEscape(s.id) + "/actions/chat"
	s.a2a = base + a2abridge.AgentPath(s.owner.PeerID(), s.id)
	return s
}

// call POSTs body to u from Go with the headers (name, value, …) and
// returns the status.
func (s *consentSetup) call(t *testing.T, u, body string, header ...string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// a2aSend is an A2A SendMessage request.
const a2aSend = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"open"}]}}}`

// consentPage is the attacker's page: it fires every request a page can
// send to another origin without a CORS preflight at the node's action
// and A2A endpoint, and sets window.fired once the fetches are answered
// and the form's answer has loaded.
const consentPage = `<!doctype html><html><body>
<iframe name="sink" id="sink"></iframe>
<form id="f" method="post" enctype="text/plain" target="sink" action="%[1]s"><input name='"open' value='"'></form>
<script>
window.fired = false;
async function attack() {
  const action = %[1]q, a2a = %[2]q, send = %[3]q;
  const loaded = new Promise(r => document.getElementById('sink').addEventListener('load', r, {once: true}));
  await Promise.all([
    fetch(action, {method: 'POST', mode: 'no-cors', body: new Blob(['"open"'])}),
    fetch(action, {method: 'POST', mode: 'no-cors', body: '"open"'}),
    fetch(a2a + '?A2A-Version=1.0', {method: 'POST', mode: 'no-cors', body: send}),
  ]);
  navigator.sendBeacon(action, new Blob(['"open"']));
  navigator.sendBeacon(a2a + '?A2A-Version=1.0', send);
  document.getElementById('f').submit();
  await loaded;
  window.fired = true;
}
attack();
</script></body></html>`

// consentRequests is how many requests consentPage sends to the node.
const consentRequests = 6

// TestBrowserConsent: a page of another loopback origin in a real
// Chromium tries to invoke an action of a Thing on the operator's node,
// whose owner forwards it to an HTTP backend, with every request a page
// may send without a CORS preflight — fetch no-cors (a Blob body, a text
// body), a form submit, navigator.sendBeacon — and A2A's SendMessage the
// same ways. The node refuses each (403), the backend is never called;
// the same call from a client without Origin (Go) calls it.
func TestBrowserConsent(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test")
	}
	ctx, _ := browser(t)
	s := newConsentSetup(t)

	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, consentPage, s.action, s.a2a, a2aSend)
	}))
	t.Cleanup(evil.Close)
	if evil.URL == "http://"+s.local.APIAddr() {
		t.Fatal("the page's origin is the node's")
	}

	// The node's answers, as the browser saw them.
	base := "http://" + s.local.APIAddr() + "/"
	var mu sync.Mutex
	answers := map[network.RequestID]string{}
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventResponseReceived:
			if strings.HasPrefix(e.Response.URL, base) {
				answers[e.RequestID] = fmt.Sprintf("%s %d", e.Type, e.Response.Status)
			}
		case *network.EventLoadingFailed:
			if _, ok := answers[e.RequestID]; !ok {
				answers[e.RequestID] = fmt.Sprintf("%s failed: %s", e.Type, e.ErrorText)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(evil.URL)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the page's requests answered", `window.fired === true`)
	testnet.WaitFor(t, "the browser sees the node's answers", waitLong, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(answers) >= consentRequests, fmt.Sprintf("%d of %d: %v", len(answers), consentRequests, answers)
	})
	mu.Lock()
	for _, a := range answers {
		if !strings.HasSuffix(a, " 403") {
			t.Errorf("the node answered the page %s; want 403 to every request", a)
		}
	}
	t.Logf("the node's answers to the page: %v", answers)
	mu.Unlock()
	// A call that reached the owner would be at the backend well within
	// this; the page's requests are answered already.
	time.Sleep(500 * time.Millisecond)
	if n := s.calls.Load(); n != 0 {
		t.Fatalf("the page's requests called the backend %d times", n)
	}

	// The same calls from a client that sends no Origin (curl, the SDKs).
	if status := s.call(t, s.action, `"open"`, "Content-Type", "application/json"); status != http.StatusOK {
		t.Fatalf("action from Go: %d", status)
	}
	if status := s.call(t, s.a2a+"?A2A-Version=1.0", a2aSend, "Content-Type", "application/json"); status != http.StatusOK {
		t.Fatalf("A2A from Go: %d", status)
	}
	if n := s.calls.Load(); n != 2 {
		t.Fatalf("backend called %d times by the two calls without Origin, want 2", n)
	}
}

// TestConsent is TestBrowserConsent without a browser: requests as a page
// would send them (a foreign Origin, Sec-Fetch-Site, a text/plain, form or
// untyped body) on the action and A2A are refused with a problem before
// the backend is called; the console's (same origin) and a client's
// without Origin call it.
func TestConsent(t *testing.T) {
	s := newConsentSetup(t)
	self := "http://" + s.local.APIAddr()
	a2a := s.a2a + "?A2A-Version=1.0"
	for _, tc := range []struct {
		name, u, body string
		header        []string
		want          int
	}{
		{"foreign Origin, JSON", s.action, `"open"`, []string{"Origin", "http://127.0.0.1:1", "Content-Type", "application/json"}, http.StatusForbidden},
		{"cross-site, no Origin", s.action, `"open"`, []string{"Sec-Fetch-Site", "cross-site", "Content-Type", "application/json"}, http.StatusForbidden},
		{"another port, same-site", s.action, `"open"`, []string{"Origin", "http://127.0.0.1:1", "Sec-Fetch-Site", "same-site", "Content-Type", "application/json"}, http.StatusForbidden},
		{"no Content-Type", s.action, `"open"`, nil, http.StatusUnsupportedMediaType},
		{"text/plain", s.action, `"open"`, []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType},
		{"form", s.action, `a=b`, []string{"Content-Type", "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{"A2A, text/plain", a2a, a2aSend, []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType},
		{"A2A, foreign Origin", a2a, a2aSend, []string{"Origin", "http://127.0.0.1:1", "Content-Type", "application/json"}, http.StatusForbidden},
	} {
		if status := s.call(t, tc.u, tc.body, tc.header...); status != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, status, tc.want)
		}
	}
	if n := s.calls.Load(); n != 0 {
		t.Fatalf("refused requests called the backend %d times", n)
	}
	if status := s.call(t, s.action, `"open"`, "Origin", self, "Sec-Fetch-Site", "same-origin", "Content-Type", "application/json"); status != http.StatusOK {
		t.Fatalf("the console's call: %d", status)
	}
	if status := s.call(t, s.action, `"open"`, "Content-Type", "application/json"); status != http.StatusOK {
		t.Fatalf("a call without Origin: %d", status)
	}
	if status := s.call(t, a2a, a2aSend, "Content-Type", "application/json"); status != http.StatusOK {
		t.Fatalf("A2A without Origin: %d", status)
	}
	if n := s.calls.Load(); n != 3 {
		t.Fatalf("backend called %d times by three calls, want 3", n)
	}
}
