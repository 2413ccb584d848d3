package tdd_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/lmosnode/lmosnode/node/tdd"
	"github.com/lmosnode/lmosnode/node/tdd/tddtest"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestWellKnownSecurity: the directory TD declares nosec by default and the
// bearer scheme when the API requires a token.
func TestWellKnownSecurity(t *testing.T) {
	for _, tc := range []struct {
		bearer bool
		want   string
		scheme string
	}{
		{false, "nosec_sc", "nosec"},
		{true, "bearer_sc", "bearer"},
	} {
		env := tddtest.NewEnv(t, func(_ *tdd.Deps, c *tdd.Config) { c.BearerAuth = tc.bearer })
		r := do(t, http.MethodGet, env.URL+"/.well-known/wot", nil)
		if r.status != http.StatusOK {
			t.Fatalf("bearer %v: status %d: %s", tc.bearer, r.status, r.body)
		}
		if err := lmosproto.ValidateTD(r.body); err != nil {
			t.Fatalf("bearer %v: directory TD is not valid: %v", tc.bearer, err)
		}
		var td struct {
			Security            string                       `json:"security"`
			SecurityDefinitions map[string]map[string]string `json:"securityDefinitions"`
		}
		if err := json.Unmarshal(r.body, &td); err != nil {
			t.Fatal(err)
		}
		def, ok := td.SecurityDefinitions[tc.want]
		if td.Security != tc.want || !ok || def["scheme"] != tc.scheme || len(td.SecurityDefinitions) != 1 {
			t.Errorf("bearer %v: security %q, definitions %v; want only %s with scheme %s", tc.bearer, td.Security, td.SecurityDefinitions, tc.want, tc.scheme)
		}
		if tc.bearer && (def["in"] != "header" || def["name"] != "Authorization") {
			t.Errorf("bearer definition %v, want in header Authorization", def)
		}
	}
}

// TestWellKnownSecurityWrites: with the token for writes only, the
// directory TD declares nosec and the bearer scheme on the forms of the
// actions that write, and stays a valid TD.
func TestWellKnownSecurityWrites(t *testing.T) {
	env := tddtest.NewEnv(t, func(_ *tdd.Deps, c *tdd.Config) { c.BearerWrites = true })
	r := do(t, http.MethodGet, env.URL+"/.well-known/wot", nil)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if err := lmosproto.ValidateTD(r.body); err != nil {
		t.Fatalf("directory TD is not valid: %v", err)
	}
	var td struct {
		Security            string                       `json:"security"`
		SecurityDefinitions map[string]map[string]string `json:"securityDefinitions"`
		Actions             map[string]struct {
			Forms []struct {
				Security string `json:"security"`
			} `json:"forms"`
		} `json:"actions"`
	}
	if err := json.Unmarshal(r.body, &td); err != nil {
		t.Fatal(err)
	}
	if td.Security != "nosec_sc" || td.SecurityDefinitions["bearer_sc"]["scheme"] != "bearer" {
		t.Errorf("security %q, definitions %v; want nosec_sc and a bearer_sc", td.Security, td.SecurityDefinitions)
	}
	for name, want := range map[string]string{"createThing": "bearer_sc", "createAnonymousThing": "bearer_sc", "updateThing": "bearer_sc",
		"partiallyUpdateThing": "bearer_sc", "deleteThing": "bearer_sc", "retrieveThing": "", "searchJSONPath": ""} {
		a, ok := td.Actions[name]
		if !ok || len(a.Forms) == 0 || a.Forms[0].Security != want {
			t.Errorf("action %s: %+v, want form security %q", name, a, want)
		}
	}
}
