package gateway_test

import (
	"bytes"
	"io"
	"math/big"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// raw sends a request with the given Accept and Content-Type (either may
// be empty) and returns the status, the Content-Type and the body.
func (a *api) raw(method, path, accept, contentType string, body []byte) (int, string, []byte) {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

func mustCBOR(t *testing.T, x any) []byte {
	t.Helper()
	b, err := cbor.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeCBOR decodes b with fxamacker/cbor (integers as int64/uint64,
// maps with string keys).
func decodeCBOR(t *testing.T, b []byte) any {
	t.Helper()
	dm, err := cbor.DecOptions{DefaultMapType: reflect.TypeFor[map[string]any]()}.DecMode()
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := dm.Unmarshal(b, &v); err != nil {
		t.Fatalf("body %x is not CBOR: %v", b, err)
	}
	return v
}

// A consumer reads, writes and invokes across nodes in CBOR: Accept
// application/cbor answers values and action statuses in CBOR,
// Content-Type application/cbor bodies are decoded from CBOR, and errors
// stay problem+json.
func TestCBORNegotiation(t *testing.T) {
	_, consumer, id, _ := pair(t)
	c := newAPI(t, consumer)
	p := thingPath(id)
	const cb, js = lmosproto.ContentTypeCBOR, lmosproto.ContentTypeJSON

	// Read a property in CBOR.
	code, ct, b := c.raw("GET", p+"/properties/model", cb, "", nil)
	if code != 200 || ct != cb {
		t.Fatalf("read model in CBOR: %d %s %x", code, ct, b)
	}
	if got := decodeCBOR(t, b); got != "T-1000" {
		t.Errorf("read model in CBOR = %#v", got)
	}

	// Write a property with a CBOR body (a bignum, then a float); read it
	// back in CBOR and JSON.
	for _, tc := range []struct {
		in       any
		wantCBOR any
		wantJSON string
	}{
		{new(big.Int).Lsh(big.NewInt(1), 70), *new(big.Int).Lsh(big.NewInt(1), 70), "1180591620717411303424"},
		{21.5, 21.5, "21.5"},
		{-7, int64(-7), "-7"},
	} {
		if code, ct, b := c.raw("PUT", p+"/properties/target", "", cb, mustCBOR(t, tc.in)); code != 204 {
			t.Fatalf("write target %v in CBOR: %d %s %s", tc.in, code, ct, b)
		}
		code, ct, b = c.raw("GET", p+"/properties/target", cb, "", nil)
		if code != 200 || ct != cb {
			t.Fatalf("read target in CBOR: %d %s %x", code, ct, b)
		}
		if got := decodeCBOR(t, b); !reflect.DeepEqual(got, tc.wantCBOR) {
			t.Errorf("read target in CBOR = %#v, want %#v", got, tc.wantCBOR)
		}
		if b := c.expect("GET", p+"/properties/target", "", 200); string(b) != tc.wantJSON {
			t.Errorf("read target in JSON = %s, want %s", b, tc.wantJSON)
		}
	}

	// Invoke an action with CBOR input and CBOR output.
	code, ct, b = c.raw("POST", p+"/actions/add", cb, cb, mustCBOR(t, map[string]int{"a": 2, "b": 40}))
	if code != 200 || ct != cb {
		t.Fatalf("add in CBOR: %d %s %x", code, ct, b)
	}
	if got := decodeCBOR(t, b); got != uint64(42) {
		t.Errorf("add in CBOR = %#v", got)
	}
	// CBOR input, JSON output (no Accept).
	if code, ct, b := c.raw("POST", p+"/actions/add", "", cb, mustCBOR(t, map[string]float64{"a": 0.5, "b": 1})); code != 200 || ct != js || string(b) != "1.5" {
		t.Errorf("add with CBOR input, JSON output: %d %s %s", code, ct, b)
	}
	// The higher quality wins; a tie or a wildcard is JSON.
	for accept, wantCT := range map[string]string{
		"application/json;q=0.5, application/cbor": cb,
		"application/cbor;q=0.1, application/json": js,
		"application/cbor, application/json":       js,
		"*/*":                                      js,
		"application/cbor, text/html":              cb,
	} {
		if code, ct, b := c.raw("POST", p+"/actions/add", accept, js, []byte(`{"a":1,"b":1}`)); code != 200 || ct != wantCT {
			t.Errorf("Accept %q: %d %s %x, want %s", accept, code, ct, b, wantCT)
		}
	}

	// Action status bodies: 201, query and cancel in CBOR.
	code, ct, b = c.raw("POST", p+"/actions/calibrate", cb, "", nil)
	if code != 201 || ct != cb {
		t.Fatalf("calibrate in CBOR: %d %s %x", code, ct, b)
	}
	st, _ := decodeCBOR(t, b).(map[string]any)
	loc, _ := st["href"].(string)
	if loc == "" || st["status"] == nil {
		t.Fatalf("calibrate status in CBOR = %#v", st)
	}
	code, ct, b = c.raw("GET", loc, cb, "", nil)
	if st, _ := decodeCBOR(t, b).(map[string]any); code != 200 || ct != cb || st["status"] != lmosproto.ActionRunning || st["output"] != "warming up" {
		t.Errorf("query calibrate in CBOR: %d %s %#v", code, ct, decodeCBOR(t, b))
	}
	code, ct, b = c.raw("DELETE", loc, cb, "", nil)
	if st, _ := decodeCBOR(t, b).(map[string]any); code != 200 || ct != cb || st["status"] != lmosproto.ActionCancelled {
		t.Errorf("cancel calibrate in CBOR: %d %s %#v", code, ct, decodeCBOR(t, b))
	}

	// 406, 415, 400 and other errors: problem+json whatever was asked.
	for _, tc := range []struct {
		method, path, accept, contentType string
		body                              []byte
		status                            int
		detail                            string
	}{
		{"GET", p + "/properties/model", "application/xml", "", nil, 406, "application/json or application/cbor only"},
		{"GET", p + "/properties/model", "application/cbor;q=0, application/json;q=0", "", nil, 406, "application/cbor only"},
		{"POST", p + "/actions/add", "text/plain", js, []byte(`{"a":1,"b":1}`), 406, "only"},
		{"GET", p + "/td", cb, "", nil, 406, "application/json only"},
		{"PUT", p + "/properties/target", "", "application/xml", []byte("<x/>"), 415, "application/json or application/cbor"},
		{"POST", p + "/actions/add", cb, "text/plain", []byte("1"), 415, "application/json or application/cbor"},
		{"PUT", p + "/properties/target", cb, cb, []byte{0x43, 1, 2, 3}, 400, "byte string"},
		{"PUT", p + "/properties/target", cb, cb, []byte{0x82, 1}, 400, "CBOR"},
		{"POST", p + "/actions/add", cb, cb, mustCBOR(t, map[string]string{"a": "one", "b": "two"}), 400, "/a"},
		{"GET", p + "/properties/nope", cb, "", nil, 404, "nope"},
	} {
		code, ct, b := c.raw(tc.method, tc.path, tc.accept, tc.contentType, tc.body)
		if code != tc.status || ct != "application/problem+json" || !strings.Contains(string(b), tc.detail) {
			t.Errorf("%s %s (Accept %q, Content-Type %q): %d %s %s, want %d problem+json naming %q",
				tc.method, tc.path, tc.accept, tc.contentType, code, ct, b, tc.status, tc.detail)
		}
	}
}
