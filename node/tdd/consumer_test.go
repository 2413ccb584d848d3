package tdd_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/tdd"
	"github.com/lmosnode/lmosnode/node/tdd/tddtest"
)

// consumerViews is an Env whose Deps.ConsumerView marks each entry (the
// node wires the gateway's consumer view there) and whose Visibility hides
// group-scoped Things from callers without X-Test-Member.
func consumerViews(t *testing.T) *tddtest.Env {
	t.Helper()
	return tddtest.NewEnv(t, func(d *tdd.Deps, _ *tdd.Config) {
		d.ConsumerView = func(r *http.Request, e directory.Entry) ([]byte, error) {
			return json.Marshal(map[string]any{"id": e.ThingID, "view": "consumer", "publisher": e.Publisher.String(), "host": r.Host})
		}
		d.Visibility = func(r *http.Request) func(directory.Entry) bool {
			if r.Header.Get("X-Test-Member") != "" {
				return nil
			}
			return func(e directory.Entry) bool { return len(e.Groups) == 0 }
		}
	})
}

type viewItem struct {
	ID, View, Publisher, Host string
	Proof                     json.RawMessage
}

func viewList(t *testing.T, r response) []viewItem {
	t.Helper()
	if r.status != http.StatusOK || r.contentType() != tdd.ContentTypeLDJSON {
		t.Fatalf("listing: %d %q %s", r.status, r.contentType(), r.body)
	}
	var items []viewItem
	if err := json.Unmarshal(r.body, &items); err != nil {
		t.Fatalf("listing %s: %v", r.body, err)
	}
	return items
}

// GET /things?view=consumer lists the consumer views of the Things the
// caller may see; GET /things stays the signed TDs.
func TestConsumerViewListing(t *testing.T) {
	env := consumerViews(t)
	fleet(t, env)

	items := viewList(t, do(t, http.MethodGet, env.URL+"/things?view=consumer", nil))
	var got []string
	for _, it := range items {
		if it.View != "consumer" || it.Proof != nil || it.Host != strings.TrimPrefix(env.URL, "http://") {
			t.Errorf("item %+v is not the hook's consumer view for this request", it)
		}
		got = append(got, it.ID)
	}
	if want := []string{"urn:a1", "urn:a2", "urn:b1", "urn:t1"}; !slices.Equal(got, want) { // in id order
		t.Errorf("consumer views of %v, want %v (the group-scoped urn:b2 hidden)", got, want)
	}
	member := viewList(t, do(t, http.MethodGet, env.URL+"/things?view=consumer&type=tool", nil, "X-Test-Member", "g-ops"))
	if len(member) != 2 || member[0].ID != "urn:b2" {
		t.Errorf("member's consumer views: %+v", member)
	}
	// The signed records are unchanged.
	for _, raw := range tdList(t, do(t, http.MethodGet, env.URL+"/things", nil)) {
		if raw.Proof == nil {
			t.Errorf("signed listing has %q without proof", raw.ID)
		}
	}
	// Pagination keeps the view.
	r := do(t, http.MethodGet, env.URL+"/things?view=consumer&limit=2", nil)
	if len(viewList(t, r)) != 2 || !strings.Contains(r.header.Get("Link"), "view=consumer") {
		t.Errorf("page: Link %q", r.header.Get("Link"))
	}
	for _, q := range []string{"view=signed", "view=consumer&view=consumer"} {
		problem(t, do(t, http.MethodGet, env.URL+"/things?"+q, nil), http.StatusBadRequest)
	}
	// A signed TD leads to its consumer view.
	r = do(t, http.MethodGet, env.URL+"/things/urn:a1", nil)
	if l := r.header.Values("Link"); !slices.Contains(l, `</things/urn:a1/td>; rel="alternate"; type="application/td+json"`) {
		t.Errorf("GET /things/urn:a1: Link %q", l)
	}
}

// Without consumer views (no Deps.ConsumerView) view=consumer is 501 and
// the directory TD's things property reads the signed TDs.
func TestConsumerViewAbsent(t *testing.T) {
	env := tddtest.NewEnv(t)
	problem(t, do(t, http.MethodGet, env.URL+"/things?view=consumer", nil), http.StatusNotImplemented)
	if href := thingsHref(t, env); href != "/things{?offset,limit,format,sort_by,sort_order,type,capability,vendor,publisher,group,q}" {
		t.Errorf("things href %q", href)
	}
	withViews := consumerViews(t)
	if href := thingsHref(t, withViews); href != "/things?view=consumer{&offset,limit,format,sort_by,sort_order,type,capability,vendor,publisher,group,q}" {
		t.Errorf("things href with consumer views %q", href)
	}
}

// thingsHref is the href of the directory TD's things property.
func thingsHref(t *testing.T, env *tddtest.Env) string {
	t.Helper()
	r := do(t, http.MethodGet, env.URL+"/.well-known/wot", nil)
	var td struct {
		Properties struct {
			Things struct {
				Forms []struct{ Href string } `json:"forms"`
			} `json:"things"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(r.body, &td); err != nil || len(td.Properties.Things.Forms) != 1 {
		t.Fatalf("directory TD %s: %v", r.body, err)
	}
	return td.Properties.Things.Forms[0].Href
}
