package node_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// agentTD is an lmos:Agent with a streaming "chat" action and a
// long-running "calibrate" action.
func agentTD(t *testing.T, id string) *lmosproto.TD {
	t.Helper()
	return parseTDf(t, `{
	  "@context": ["https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
	  "@type": ["lmos:Agent"], "id": %q, "title": "Echo agent",
	  "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}}, "security": "nosec_sc",
	  "properties": {"mood": {"type": "string", "enum": ["calm", "busy"], "observable": true, "forms": [{"href": "https://agent.example/mood"}]}},
	  "actions": {
	    "chat": {"input": {"type": "string"}, "output": {"type": "string"}, "forms": [{"href": "https://agent.example/chat"}]},
	    "calibrate": {"output": {"type": "string"}, "forms": [{"href": "https://agent.example/calibrate"}]}
	  }
	}`, id)
}

// TestConsoleBrowserAdmin drives the console of a node with an API token:
// the page asks for the token; a streaming conversation with an agent and
// a long-running action of another node; own Things published with
// field-level errors, then removed; a group's admin grant and revoke, its
// live posts and its dissolution. With LMOS_SCREENSHOTS it also writes
// the directory at 360 px in the dark scheme.
func TestConsoleBrowserAdmin(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test")
	}
	ctx, reqs := browser(t)
	const token = "console-test-token-0123456789abcdef0123456789"
	net := testnet.New(t, 2, testnet.Options{
		Configure: func(i int, cfg *config.Config) {
			if i == 0 {
				cfg.APIToken = token
			}
		},
		NodeOptions: func(int) []node.Option { return []node.Option{node.WithGossipHeartbeat(100 * time.Millisecond)} },
	})
	net.Link(0, 1)
	viewer, other := net.Nodes[0], net.Nodes[1]
	base := "http://" + viewer.APIAddr()

	// The page asks for the token, then shows the node.
	run(t, ctx, "open the console", chromedp.Navigate(base+"/#/node"))
	waitJS(t, ctx, "login dialog", `!!document.querySelector('#login[open]')`)
	run(t, ctx, "sign in",
		chromedp.SetValue(chromedp.CSS(`#login-token`), token),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)))
	waitJS(t, ctx, "node view after the login", jsText("#node-peer-id", viewer.PeerID().String()))

	// An agent on the other node: a streaming conversation and a
	// long-running action.
	id := testnet.UniqueID(t)
	var mu sync.Mutex
	mood := "busy"
	agent := interact.NewThing()
	agent.OnProperty("mood", func(context.Context) (lmosproto.Value, error) {
		mu.Lock()
		defer mu.Unlock()
		return lmosproto.StringValue(mood), nil
	}, func(_ context.Context, v lmosproto.Value) error {
		mu.Lock()
		err := v.Decode(&mood)
		mu.Unlock()
		if err == nil {
			agent.Changed("mood", v)
		}
		return err
	}).
		OnStream("chat", func(ctx context.Context, in <-chan lmosproto.Value, out func(lmosproto.Value) error) error {
			for v := range in {
				var s string
				if err := v.Decode(&s); err != nil {
					return err
				}
				for _, w := range strings.Fields("echo: " + s) {
					if err := out(lmosproto.StringValue(w + " ")); err != nil {
						return err
					}
				}
			}
			return nil
		}).
		OnAction("calibrate", func(ctx context.Context, _ lmosproto.Value, progress func(lmosproto.Value)) (lmosproto.Value, error) {
			progress(lmosproto.StringValue("warming up"))
			select {
			case <-time.After(1500 * time.Millisecond):
			case <-ctx.Done():
				return lmosproto.Value{}, ctx.Err()
			}
			return lmosproto.StringValue("calibrated"), nil
		})
	if _, err := other.Register(agentTD(t, id), agent); err != nil {
		t.Fatal(err)
	}
	testnet.WaitFor(t, "the viewer learns the agent", waitLong, func() (bool, string) {
		_, ok := viewer.Directory().Get(other.PeerID(), id)
		return ok, "not yet"
	})
	run(t, ctx, "open the agent", chromedp.Navigate(base+"/#/thing/"+id))
	waitJS(t, ctx, "agent proof", jsText("#proof-verdict", "Valid"))
	// The publisher on the trust list and off it again.
	waitJS(t, ctx, "trust mark", jsText("#trust-mark", "not in your trust list"))
	run(t, ctx, "allow the publisher", chromedp.Click(chromedp.CSS(`#trust-mark button[data-trust="allow"]`)))
	waitJS(t, ctx, "trusted", jsText("#trust-mark", "trusted"))
	if got := viewer.Trust().Level(other.PeerID()); string(got) != "allow" {
		t.Errorf("trust level after Allow: %q", got)
	}
	run(t, ctx, "forget it", chromedp.Click(chromedp.CSS(`#trust-mark button[data-trust="none"]`)))
	waitJS(t, ctx, "unknown again", jsText("#trust-mark", "not in your trust list"))
	// A property: written with the generated form (an enum: a select),
	// read back.
	run(t, ctx, "write the property",
		chromedp.SetValue(chromedp.CSS(`[data-property="mood"] select`), "0"),
		chromedp.Click(chromedp.CSS(`[data-property="mood"] button[type="submit"]`)))
	waitJS(t, ctx, "written", jsText(`[data-log="property-mood"]`, "✓ written"))
	run(t, ctx, "read the property", chromedp.Click(chromedp.CSS(`[data-property="mood"] button.read`)))
	waitJS(t, ctx, "read back", jsText(`[data-log="property-mood"]`, `= "calm"`))
	run(t, ctx, "observe the property", chromedp.Click(chromedp.CSS(`[data-property="mood"] button.observe`)))
	waitJS(t, ctx, "observing", jsText(`[data-log="property-mood"]`, "observing"))
	run(t, ctx, "write it again",
		chromedp.SetValue(chromedp.CSS(`[data-property="mood"] select`), "1"),
		chromedp.Click(chromedp.CSS(`[data-property="mood"] button[type="submit"]`)))
	waitJS(t, ctx, "the change observed", jsText(`[data-log="property-mood"]`, `↻ "busy"`))
	run(t, ctx, "say something",
		chromedp.SetValue(chromedp.CSS(`[data-action="chat"] input[data-field="input"]`), "hi there"),
		chromedp.Click(chromedp.CSS(`[data-action="chat"] button[type="submit"]`)))
	waitJS(t, ctx, "streamed answer", jsText(`[data-log="action-chat"]`, "echo: hi there"))
	for _, said := range []string{"first turn", "second turn"} {
		run(t, ctx, "converse",
			chromedp.SetValue(chromedp.CSS(`#chat-form input[name="say"]`), said),
			chromedp.Click(chromedp.CSS(`#chat-form button[type="submit"]`)))
		waitJS(t, ctx, "the agent's answer in the conversation", jsText("#chat", "Echo agent: echo: "+said))
	}
	screenshot(t, ctx, "agent")
	run(t, ctx, "calibrate", chromedp.Click(chromedp.CSS(`[data-action="calibrate"] button[type="submit"]`)))
	waitJS(t, ctx, "progress of the long-running action", jsText(`[data-log="action-calibrate"]`, `"warming up"`))
	waitJS(t, ctx, "end of the long-running action", jsText(`[data-log="action-calibrate"]`, `✓ completed "calibrated"`))

	// Own Things: an invalid TD gets its field-level errors, a valid one
	// is published, then removed.
	run(t, ctx, "my things", chromedp.Navigate(base+"/#/own"))
	waitJS(t, ctx, "own view", jsText("#own", "publishes no Thing"))
	// The TD editor spans the form, not the width of its label.
	if frac, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector('#publish-td').getBoundingClientRect().width / document.querySelector('#publish-form').getBoundingClientRect().width`)); err != nil || frac < 0.9 {
		t.Errorf("TD editor is %.0f%% of the form's width (%v), want the whole", 100*frac, err)
	}
	screenshot(t, ctx, "own")
	bad := `{"@context": "https://www.w3.org/2022/wot/td/v1.1", "id": "urn:console:lamp", "title": 5, "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}}, "security": "nosec_sc"}`
	run(t, ctx, "publish an invalid TD",
		chromedp.SetValue(chromedp.CSS(`#publish-td`), bad),
		chromedp.Click(chromedp.CSS(`#publish-form button[type="submit"]`)))
	waitJS(t, ctx, "field-level error", jsText("#publish-errors li", "/td/title"))
	run(t, ctx, "publish a valid TD",
		chromedp.SetValue(chromedp.CSS(`#publish-td`), strings.Replace(bad, `"title": 5`, `"title": "Lamp"`, 1)),
		chromedp.Click(chromedp.CSS(`#publish-form button[type="submit"]`)))
	waitJS(t, ctx, "published", jsText("#publish-errors", "✓ created"))
	waitJS(t, ctx, "own Thing listed", `!!document.querySelector('#own tr[data-id="urn:console:lamp"]')`)
	// Updated: edit, change the title, publish again.
	run(t, ctx, "edit", chromedp.Click(chromedp.CSS(`#own tr[data-id="urn:console:lamp"] button.secondary`)))
	waitJS(t, ctx, "the TD in the editor", `document.querySelector('#publish-td').value.includes('"Lamp"')`)
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const ta = document.querySelector('#publish-td'); ta.value = ta.value.replace('"Lamp"', '"Desk lamp"'); return true; })()`))
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "publish the update", chromedp.Click(chromedp.CSS(`#publish-form button[type="submit"]`)))
	waitJS(t, ctx, "updated", jsText("#publish-errors", "✓ updated"))
	waitJS(t, ctx, "new version listed", `(document.querySelector('#own tr[data-id="urn:console:lamp"]')?.textContent || '').includes('Desk lamp')`)
	// A TD from a file, the keyboard only: focus, Enter.
	file := filepath.Join(t.TempDir(), "fan.json")
	if err := os.WriteFile(file, []byte(strings.NewReplacer("urn:console:lamp", "urn:console:fan", `"title": 5`, `"title": "Fan"`).Replace(bad)), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "choose the file", chromedp.SetUploadFiles(chromedp.CSS(`#publish-form input[type="file"]`), []string{file}))
	waitJS(t, ctx, "the file in the editor", `document.querySelector('#publish-td').value.includes('urn:console:fan')`)
	run(t, ctx, "publish by keyboard", chromedp.Focus(chromedp.CSS(`#publish-form button[type="submit"]`)), chromedp.KeyEvent("\r"))
	waitJS(t, ctx, "file published", `!!document.querySelector('#own tr[data-id="urn:console:fan"]')`)
	fan := chromedp.CSS(`button[data-remove="urn:console:fan"]`)
	run(t, ctx, "remove the fan", chromedp.Click(fan), chromedp.Click(fan))
	rm := chromedp.CSS(`button[data-remove="urn:console:lamp"]`)
	run(t, ctx, "remove it", chromedp.Click(rm), chromedp.Click(rm))
	waitJS(t, ctx, "own Thing gone", jsText("#own", "publishes no Thing"))

	// A group: the other node joins, is made admin and revoked, posts
	// arrive live, the group is dissolved.
	run(t, ctx, "groups view", chromedp.Navigate(base+"/#/groups"))
	run(t, ctx, "create a group",
		chromedp.SetValue(chromedp.CSS(`#group-create input[name="name"]`), "admins"),
		chromedp.Click(chromedp.CSS(`#group-create button`)))
	waitJS(t, ctx, "group view", fmt.Sprintf(`!!document.querySelector('#members tr[data-peer=%q]')`, viewer.PeerID()))
	run(t, ctx, "invite", chromedp.Click(chromedp.CSS(`#invite-form button[type="submit"]`)))
	waitJS(t, ctx, "invitation token", `(document.querySelector('#invitation-token')?.value || '').startsWith('lmosgroup:')`)
	tok, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#invitation-token`)))
	if err != nil {
		t.Fatal(err)
	}
	apiDo(t, other, http.MethodPost, "/api/v1/groups/join", fmt.Sprintf(`{"token": %q}`, tok), http.StatusOK, nil)
	row := fmt.Sprintf(`#members tr[data-peer=%q]`, other.PeerID())
	waitJS(t, ctx, "the other node is a member", jsText(row, "member"))
	run(t, ctx, "make it admin", chromedp.Click(chromedp.CSS(fmt.Sprintf(`button[data-grant=%q]`, other.PeerID()))))
	waitJS(t, ctx, "admin shown", fmt.Sprintf(`!!document.querySelector('button[data-revoke=%q]') && document.querySelector(%q).children[1].textContent === 'admin'`, other.PeerID(), row))
	run(t, ctx, "revoke admin", chromedp.Click(chromedp.CSS(fmt.Sprintf(`button[data-revoke=%q]`, other.PeerID()))))
	waitJS(t, ctx, "member again", fmt.Sprintf(`!!document.querySelector('button[data-grant=%q]') && document.querySelector(%q).children[1].textContent === 'member'`, other.PeerID(), row))
	waitJS(t, ctx, "posts stream open", jsText("#posts-state", "live"))
	run(t, ctx, "post",
		chromedp.SetValue(chromedp.CSS(`#post-form input[name="text"]`), "hello from the console"),
		chromedp.Click(chromedp.CSS(`#post-form button[type="submit"]`)))
	waitJS(t, ctx, "own post shown", jsText("#posts", "hello from the console"))
	gid, err := chromedp.Run(ctx, chromedp.Evaluate[string](`decodeURIComponent(location.hash.split('/')[2])`))
	if err != nil {
		t.Fatal(err)
	}
	testnet.WaitFor(t, "the other node has a topic peer", waitLong, func() (bool, string) {
		err := other.Groups().Publish(context.Background(), gid, []byte(`"hello from node 2"`))
		return err == nil, fmt.Sprint(err)
	})
	waitJS(t, ctx, "the other node's post shown", jsText("#posts", "hello from node 2"))
	// A Thing of the other node restricted to the group, found through
	// the group's link to its Things.
	scoped := testnet.UniqueID(t) + "-scoped"
	if _, err := other.Register(groupTD(t, scoped, gid), diagnoser()); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "the group's Things", chromedp.Click(chromedp.CSS(`a[href^="#/things?group="]`)))
	waitJS(t, ctx, "the group's Thing", fmt.Sprintf(`!!document.querySelector('#things li[data-id=%q]')`, scoped))
	run(t, ctx, "back to the group", chromedp.Navigate(base+"/#/group/"+gid))
	waitJS(t, ctx, "group view again", jsText("#posts-state", "live"))
	dissolve := chromedp.CSS(`#group-dissolve`)
	run(t, ctx, "dissolve", chromedp.Click(dissolve), chromedp.Click(dissolve))
	waitJS(t, ctx, "dissolved", jsText("#main p.muted", "dissolved"))

	// Readable at 360 px: no view is wider than the screen. In the dark
	// scheme, for the screenshot.
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 360, Height: 740, DeviceScaleFactor: 2, Mobile: true}); err != nil {
		t.Fatal(err)
	}
	for _, view := range []struct{ hash, ready string }{
		{"#/node", "#node-peer-id"},
		{"#/peers", "#peers"},
		{"#/things", fmt.Sprintf("#things li[data-id=%q]", id)},
		{"#/thing/" + id, "#proof-verdict"},
		{"#/groups", "#groups table"},
		{"#/group/" + gid, "#members table"},
		{"#/own", "#publish-form"},
	} {
		run(t, ctx, "view "+view.hash, chromedp.Navigate(base+"/"+view.hash))
		waitJS(t, ctx, view.hash+" at 360 px", fmt.Sprintf(`!!document.querySelector(%q)`, view.ready))
		run(t, ctx, "settle", chromedp.Sleep(200*time.Millisecond))
		w, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		if err != nil {
			t.Fatal(err)
		}
		if w > 360 {
			wide, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > 361 && ![...e.children].some(c => c.getBoundingClientRect().right > 361)).slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right)).join('; ')`))
			t.Errorf("%s is %d px wide at 360 px: %s", view.hash, w, wide)
		}
		screenshot(t, ctx, "360-dark-"+strings.SplitN(strings.TrimPrefix(view.hash, "#/"), "/", 2)[0])
	}
	if out := reqs.outside(base); len(out) > 0 {
		t.Errorf("the console made requests elsewhere than its node: %q", out)
	}
}
