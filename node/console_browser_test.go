package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// chromiumPath finds a Chromium for the browser tests ($LMOS_CHROMIUM, or
// on PATH); scripts/chromium.sh installs it.
func chromiumPath() string {
	if p := os.Getenv("LMOS_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser starts a headless Chromium that makes no request of its own
// (no background networking, component updates, sync, pings; host names
// other than 127.0.0.1 do not resolve) and returns its context. Every
// request of its pages is recorded in requests.
func browser(t *testing.T) (context.Context, *requestLog) {
	t.Helper()
	bin := chromiumPath()
	if bin == "" {
		t.Skip("no Chromium found (chromium, chromium-browser, google-chrome or $LMOS_CHROMIUM): install it with scripts/chromium.sh install")
	}
	opts := append([]chromedp.ExecAllocatorOption{}, chromedp.DefaultExecAllocatorOptions[:]...)
	opts = append(opts,
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter,InterestFeedContentSuggestions,AutofillServerCommunication"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.WindowSize(1280, 900),
	)
	reqs := &requestLog{}
	var ctx context.Context
	// Chromium now and then crashes as it starts on a busy CI machine
	// (before any page): a second start is a new browser, not a retry of
	// anything the test checks.
	for attempt := 1; ; attempt++ {
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		var cancel context.CancelFunc
		ctx, cancel = chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
		err := chromedp.Listen(ctx, func(ev any) {
			switch e := ev.(type) {
			case *network.EventRequestWillBeSent:
				reqs.add(e.Request.URL)
			}
		})
		if err == nil {
			t.Cleanup(cancelAlloc)
			t.Cleanup(cancel)
			break
		}
		cancel()
		cancelAlloc()
		if attempt == 3 {
			t.Fatalf("start chromium (%d tries): %v", attempt, err)
		}
		t.Logf("start chromium: %v; starting it again", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("chromium: network.enable: %v", err)
	}
	return ctx, reqs
}

type requestLog struct {
	mu   sync.Mutex
	urls []string
}

func (l *requestLog) add(u string) { l.mu.Lock(); l.urls = append(l.urls, u); l.mu.Unlock() }

// outside returns the requests not to the API at base.
func (l *requestLog) outside(base string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, u := range l.urls {
		if !strings.HasPrefix(u, base+"/") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") {
			out = append(out, u)
		}
	}
	return out
}

// waitJS evaluates expr (JavaScript yielding a boolean) until it is true,
// for up to the deadline; what the page shows of sel is reported when it
// never is.
func waitJS(t *testing.T, ctx context.Context, what, expr string) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(waitLong)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('main')?.innerText || ''`))
			t.Fatalf("%s: not shown within %s (err %v); the page shows:\n%s", what, waitLong, err, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func jsText(sel, want string) string {
	return fmt.Sprintf(`(document.querySelector(%q)?.textContent || '').includes(%q)`, sel, want)
}

// run does actions, again while the console's live views replace the
// element an action found before it acted on it (Chrome then answers
// "Could not find node with given id"), up to waitLong.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, waitLong)
	defer cancel()
	for {
		err := chromedp.Do(cctx, actions...)
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "Could not find node with given id") || cctx.Err() != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// screenshot writes the page to $LMOS_SCREENSHOTS/console-<name>.png when
// that variable is set (scripts/screenshots.sh).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("LMOS_SCREENSHOTS")
	if dir == "" {
		return
	}
	run(t, ctx, "settle", chromedp.Sleep(300*time.Millisecond))
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: PNG
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "console-"+name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// parseTDf parses the TD the format makes.
func parseTDf(t *testing.T, format string, args ...any) *lmosproto.TD {
	t.Helper()
	td, err := lmosproto.ParseTD(fmt.Appendf(nil, format, args...))
	if err != nil {
		t.Fatal(err)
	}
	return td
}

// consoleTD is a Tool with an action "double" and an event "tick".
func consoleTD(t *testing.T, id, title string) *lmosproto.TD {
	t.Helper()
	return parseTDf(t, `{
	  "@context": ["https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
	  "@type": ["lmos:Tool"], "id": %q, "title": %q, "description": "Doubles numbers and ticks.",
	  "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}}, "security": "nosec_sc",
	  "lmos:capabilities": [{"lmos:id": "arithmetic", "lmos:version": "1.2.0"}],
	  "actions": {"double": {"input": {"type": "object", "properties": {"n": {"type": "integer", "title": "n"}}, "required": ["n"]},
	                         "output": {"type": "integer"}, "forms": [{"href": "https://calc.example/double"}]}},
	  "events": {"tick": {"data": {"type": "integer"}, "forms": [{"href": "https://calc.example/tick"}]}}
	}`, id, title)
}

// TestConsoleBrowser drives the web console of node 3 in a real headless
// Chromium over three nodes: a Thing published on node 1 appears without
// reload; its action is invoked with the generated form; its events
// arrive; a tampered record shows as invalid; a group is created, node 2
// invited, shown as member once it joined, and removed.
func TestConsoleBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test")
	}
	ctx, reqs := browser(t)
	net := testnet.New(t, 3, testnet.Options{NodeOptions: func(int) []node.Option {
		return []node.Option{node.WithGossipHeartbeat(100 * time.Millisecond)}
	}})
	net.Link(0, 1)
	net.Link(1, 2)
	net.Link(0, 2)
	publisher, invitee, viewer := net.Nodes[0], net.Nodes[1], net.Nodes[2]
	base := "http://" + viewer.APIAddr()
	shot := func(name string) { screenshot(t, ctx, name) }

	run(t, ctx, "open the console", chromedp.Navigate(base+"/#/node"))
	waitJS(t, ctx, "node view", jsText("#node-peer-id", viewer.PeerID().String()))
	waitJS(t, ctx, "live stream", jsText("#live", "live"))
	waitJS(t, ctx, "reachability", jsText("#reachability", viewer.Info().Reachability))
	waitJS(t, ctx, "metrics", `!!document.querySelector('#metrics tr[data-metric="lmos_api_requests_total"]')`)
	shot("node")
	run(t, ctx, "peers view", chromedp.Navigate(base+"/#/peers"))
	waitJS(t, ctx, "peers view lists node 1", fmt.Sprintf(`[...document.querySelectorAll('#peers tbody tr')].some(r => r.querySelector('code')?.title === %q)`, publisher.PeerID()))
	waitJS(t, ctx, "peers' direction and agent", `['Direction', 'Agent'].every(h => [...document.querySelectorAll('#peers th')].some(th => th.textContent === h)) && document.querySelector('#peers tbody').textContent.includes('lmosnode/')`)
	shot("peers")

	// A Thing published on node 1 appears in node 3's directory view
	// without a reload.
	run(t, ctx, "things view", chromedp.Navigate(base+"/#/things"))
	waitJS(t, ctx, "directory listed", `document.querySelector('main p.muted')?.textContent.includes('Thing')`)
	id := testnet.UniqueID(t)
	thing := interact.NewThing().OnAction("double", func(_ context.Context, in lmosproto.Value, _ func(lmosproto.Value)) (lmosproto.Value, error) {
		var x struct{ N int }
		if err := in.Decode(&x); err != nil {
			return lmosproto.Value{}, err
		}
		return lmosproto.ValueOf(2 * x.N)
	})
	if _, err := publisher.Register(consoleTD(t, id, "Calculator"), thing); err != nil {
		t.Fatal(err)
	}
	row := fmt.Sprintf(`#things li[data-id=%q]`, id)
	d := waitJS(t, ctx, "the Thing published on node 1", fmt.Sprintf(`!!document.querySelector(%q)`, row))
	t.Logf("the Thing published on node 1 showed on node 3's console %s after the publish", d.Round(time.Millisecond))
	waitJS(t, ctx, "signature valid badge", jsText(row, "signature valid"))
	waitJS(t, ctx, "publisher online", jsText(row, "online"))
	waitJS(t, ctx, "publisher's trust mark", jsText(row, "not in your trust list"))
	shot("things")

	// The search by capability with a semantic version range.
	run(t, ctx, "search a capability", chromedp.Navigate(base+"/#/things?capability="+url.QueryEscape("arithmetic@^1.2")))
	waitJS(t, ctx, "found by capability", fmt.Sprintf(`!!document.querySelector(%q)`, row))
	run(t, ctx, "search another version", chromedp.Navigate(base+"/#/things?capability="+url.QueryEscape("arithmetic@^2")))
	waitJS(t, ctx, "none found", `(document.querySelector('main p.muted')?.textContent || '').startsWith('0 Things match') && !document.querySelector('#things li')`)
	run(t, ctx, "back to the directory", chromedp.Navigate(base+"/#/things"))
	waitJS(t, ctx, "listed again", fmt.Sprintf(`!!document.querySelector(%q)`, row))

	// Its action, invoked with the form generated from its input schema.
	run(t, ctx, "open the Thing", chromedp.Click(chromedp.CSS(row+" a")))
	waitJS(t, ctx, "proof verified in the page", jsText("#proof-verdict", "Valid: signed by "+publisher.PeerID().String()))
	run(t, ctx, "fill the action form",
		chromedp.SetValue(chromedp.CSS(`[data-action="double"] input[data-field="n"]`), "21"),
		chromedp.Click(chromedp.CSS(`[data-action="double"] button[type="submit"]`)))
	waitJS(t, ctx, "action result", jsText(`[data-log="action-double"]`, "✓ 42"))

	// Its event: subscribed in the page, emitted on node 1.
	run(t, ctx, "subscribe", chromedp.Click(chromedp.CSS(`[data-subscribe="tick"]`)))
	waitJS(t, ctx, "subscribed", jsText(`[data-log="event-tick"]`, "subscribed"))
	stop := make(chan struct{})
	go func() {
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				v, _ := lmosproto.ValueOf(700 + n)
				thing.Emit("tick", v)
			}
		}
	}()
	waitJS(t, ctx, "arriving events", `[...document.querySelectorAll('[data-log="event-tick"] .event')].filter(e => /• 7\d\d/.test(e.textContent)).length >= 2`)
	close(stop)
	shot("thing")

	// A tampered record in node 3's directory shows as invalid: signed by
	// node 1, its title changed afterwards.
	tamperedID := testnet.UniqueID(t) + "-tampered"
	rec, err := lmosproto.SignThing(consoleTD(t, tamperedID, "Honest title"), signingKey(t, publisher), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	raw := change(t, rec.Raw, `"Honest title"`, `"Changed title"`)
	td, err := lmosproto.ParseTD(raw)
	if err != nil {
		t.Fatal(err)
	}
	forged := &lmosproto.Record{Raw: raw, TD: td, ThingID: tamperedID, Seq: rec.Seq, Signer: rec.Signer}
	if _, err := viewer.Directory().Put(forged, nil); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "open the tampered Thing", chromedp.Navigate(base+"/#/thing/"+url.PathEscape(tamperedID)))
	waitJS(t, ctx, "tampered record invalid", jsText("#proof-verdict", "Invalid: the signature does not match"))
	run(t, ctx, "directory", chromedp.Navigate(base+"/#/things"))
	waitJS(t, ctx, "tampered record invalid in the listing", jsText(fmt.Sprintf(`#things li[data-id=%q]`, tamperedID), "signature invalid"))
	// Pages: one Thing a page, then more.
	run(t, ctx, "a page of one", chromedp.Navigate(base+"/#/things?limit=1"))
	waitJS(t, ctx, "one Thing and a link to more", `document.querySelectorAll('#things li').length === 1 && !!document.querySelector('#more')`)
	run(t, ctx, "show more", chromedp.Click(chromedp.CSS(`#more`)))
	waitJS(t, ctx, "both Things", `document.querySelectorAll('#things li').length === 2 && !document.querySelector('#more')`)

	// A group: created in the page, node 2 invited and joining, removed.
	run(t, ctx, "groups view", chromedp.Navigate(base+"/#/groups"))
	run(t, ctx, "create a group",
		chromedp.SetValue(chromedp.CSS(`#group-create input[name="name"]`), "console-test"),
		chromedp.Click(chromedp.CSS(`#group-create button`)))
	// Reads are open to local clients; acting as the node needs the
	// token, which the page asks for, then sends the request again.
	waitJS(t, ctx, "login dialog", `!!document.querySelector('#login[open]')`)
	// Dismissed, the request fails with a word on why; tried again, the
	// dialog comes back.
	run(t, ctx, "dismiss the dialog", chromedp.KeyEvent(kb.Escape))
	waitJS(t, ctx, "refusal shown", jsText("main p[role=status]", "needs the node's API token"))
	run(t, ctx, "create the group again", chromedp.Click(chromedp.CSS(`#group-create button`)))
	waitJS(t, ctx, "login dialog again", `!!document.querySelector('#login[open]')`)
	run(t, ctx, "sign in",
		chromedp.SetValue(chromedp.CSS(`#login-token`), viewer.APIToken()),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)))
	waitJS(t, ctx, "group view", fmt.Sprintf(`!!document.querySelector('#members tr[data-peer=%q]')`, viewer.PeerID()))
	run(t, ctx, "invite node 2",
		chromedp.SetValue(chromedp.CSS(`#invite-form input[name="for"]`), invitee.PeerID().String()),
		chromedp.Click(chromedp.CSS(`#invite-form button[type="submit"]`)))
	waitJS(t, ctx, "invitation token", `(document.querySelector('#invitation-token')?.value || '').startsWith('lmosgroup:')`)
	waitJS(t, ctx, "invitation QR code", `!!document.querySelector('#invitation .qr svg path')`)
	waitJS(t, ctx, "the invitation listed", jsText("#invitations", "outstanding"))
	token, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#invitation-token`)))
	if err != nil {
		t.Fatal(err)
	}
	shot("group")
	var joined groupapi.GroupInfo
	apiDo(t, invitee, http.MethodPost, "/api/v1/groups/join", fmt.Sprintf(`{"token": %q}`, token), http.StatusOK, &joined)
	member := fmt.Sprintf(`#members tr[data-peer=%q]`, invitee.PeerID())
	waitJS(t, ctx, "node 2 shown as member", fmt.Sprintf(`!!document.querySelector(%q)`, member))
	remove := chromedp.CSS(fmt.Sprintf(`button[data-remove=%q]`, invitee.PeerID()))
	run(t, ctx, "remove node 2", chromedp.Click(remove))
	waitJS(t, ctx, "the remove button asks again", jsText(fmt.Sprintf(`button[data-remove=%q]`, invitee.PeerID()), "Confirm"))
	run(t, ctx, "confirm the removal", chromedp.Click(remove))
	waitJS(t, ctx, "node 2 no longer shown", fmt.Sprintf(`!document.querySelector(%q) && !!document.querySelector('#members tr')`, member))

	if out := reqs.outside(base); len(out) > 0 {
		t.Errorf("the console made requests elsewhere than its node: %q", out)
	}
}

// TestConsoleAccess: with a token, the console's pages load without it
// (the page then asks for it), while its stream and every other route
// still answer 401; without a token, a foreign Host is refused for the
// pages too.
func TestConsoleAccess(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef-console"
	net := testnet.New(t, 2, testnet.Options{Configure: func(i int, cfg *config.Config) {
		if i == 0 {
			cfg.APIToken = token
		}
	}})
	withToken, without := "http://"+net.Nodes[0].APIAddr(), "http://"+net.Nodes[1].APIAddr()
	get := func(url, host, auth string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		url, host, auth string
		want            int
	}{
		{withToken + "/", "", "", http.StatusOK},
		{withToken + "/console/app.js", "", "", http.StatusOK},
		{withToken + "/api/v1/console/stream", "", "", http.StatusUnauthorized},
		{withToken + "/api/v1/node", "", "", http.StatusUnauthorized},
		{without + "/", "", "", http.StatusOK},
		{without + "/", "evil.example", "", http.StatusForbidden},
		{without + "/console/app.js", "evil.example:80", "", http.StatusForbidden},
	} {
		if got := get(tc.url, tc.host, tc.auth); got != tc.want {
			t.Errorf("GET %s (Host %q, token %v): %d, want %d", tc.url, tc.host, tc.auth != "", got, tc.want)
		}
	}
}

// TestConsoleVerify checks the page's own proof verification
// (node/console/web/verify.js) in Chromium against documents signed by
// proto: the VC-DI-EdDSA spec's example (an independent vector), its
// proof without @context, a document whose JCS form needs member sorting
// by UTF-16 code units, escapes and ECMAScript number forms; and the same
// documents changed after signing.
func TestConsoleVerify(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test")
	}
	ctx, _ := browser(t)
	n := testnet.New(t, 1, testnet.Options{}).Nodes[0]
	spec, err := os.ReadFile("../proto/testdata/golden/proof/vc-di-eddsa-alumni.secured.json")
	if err != nil {
		t.Fatal(err)
	}
	var specDoc map[string]any
	if err := json.Unmarshal(spec, &specDoc); err != nil {
		t.Fatal(err)
	}
	delete(specDoc["proof"].(map[string]any), "@context")
	specNoCtx, err := json.Marshal(specDoc)
	if err != nil {
		t.Fatal(err)
	}
	tricky, err := lmosproto.SignDocument([]byte(`{
	  "@context": ["https://www.w3.org/2022/wot/td/v1.1"],
	  "id": "urn:jcs", "title": "Ünïcödé ☂ 😀 \u2028 \"quoted\" \\ tab\t",
	  "z": 1, "a": [1.5, 1e21, 1e-7, -0.000001, 123456789012, 0.1, 100, true, null],
	  "é": {"b": "x", "B": "y", "ä": "z", "\ud83d\ude00": "emoji key", "\u00e9x": 1, "€": 2, "\uff46": 3},
	  "nested": {"deep": {"deeper": [{"k": "v"}, [], {}]}}
	}`), signingKey(t, n), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lmosproto.VerifyDocument(tricky); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "open the console", chromedp.Navigate("http://"+n.APIAddr()+"/#/node"))
	waitJS(t, ctx, "console loaded", jsText("#node-peer-id", n.PeerID().String()))
	for _, tc := range []struct {
		name  string
		doc   []byte
		valid bool
	}{
		{"spec example", spec, true},
		{"spec example, proof without @context", specNoCtx, true},
		{"JCS edge cases", tricky, true},
		{"spec example changed", change(t, spec, `"The School of Examples"`, `"The School of Exampled"`), false},
		{"JCS edge cases changed", change(t, tricky, `"emoji key"`, `"emoji kex"`), false},
		{"JCS edge cases, a number changed", change(t, tricky, `123456789012`, `123456789013`), false},
	} {
		expr := fmt.Sprintf(`import('/console/verify.js').then(m => m.verifyTD(JSON.parse(%q))).then(v => JSON.stringify(v))`, tc.doc)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var v struct {
			Valid  bool
			Reason string
		}
		if err := json.Unmarshal([]byte(got), &v); err != nil {
			t.Fatalf("%s: %v: %s", tc.name, err, got)
		}
		if v.Valid != tc.valid {
			t.Errorf("%s: the page says valid=%v (%s), want %v", tc.name, v.Valid, v.Reason, tc.valid)
		}
	}
}

// change replaces old by new in doc, once, and fails if doc has no old.
func change(t *testing.T, doc []byte, old, new string) []byte {
	t.Helper()
	if !bytes.Contains(doc, []byte(old)) {
		t.Fatalf("%s is not in the document", old)
	}
	return bytes.Replace(doc, []byte(old), []byte(new), 1)
}
