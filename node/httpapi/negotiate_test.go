package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

func TestNegotiate(t *testing.T) {
	offers := []string{"application/json", "application/cbor"}
	for _, tc := range []struct {
		accept []string // nil: no header
		want   string   // "": 406
	}{
		{nil, "application/json"},
		{[]string{"application/cbor"}, "application/cbor"},
		{[]string{"application/json"}, "application/json"},
		{[]string{"*/*"}, "application/json"},
		{[]string{"application/*"}, "application/json"},
		{[]string{"application/cbor, application/json"}, "application/json"}, // a tie: the first offer
		{[]string{"application/json;q=0.5, application/cbor"}, "application/cbor"},
		{[]string{"application/cbor;q=0.9, */*;q=0.1"}, "application/cbor"},
		{[]string{"application/json;q=0, */*"}, "application/json"}, // */* still admits JSON
		{[]string{"application/json;q=0"}, ""},
		{[]string{"application/td+json"}, "application/json"},
		{[]string{"application/senml+cbor"}, "application/cbor"},
		{[]string{"Application/CBOR"}, "application/cbor"},
		{[]string{"text/html"}, ""},
		{[]string{"text/html", "application/cbor;q=0.5"}, "application/cbor"}, // several header lines
		{[]string{""}, ""},
		{[]string{"json"}, ""},
		{[]string{"application/json;q=x"}, ""},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		for _, v := range tc.accept {
			r.Header.Add("Accept", v)
		}
		got, ok := httpapi.Negotiate(r, offers...)
		if ok != (tc.want != "") || (ok && got != tc.want) {
			t.Errorf("Accept %q: %q, %v; want %q", tc.accept, got, ok, tc.want)
		}
	}
	if _, ok := httpapi.Negotiate(httptest.NewRequest(http.MethodGet, "/", nil)); ok {
		t.Error("no offers negotiated")
	}
}
