package tdd

import "testing"

// TestMergePatchRFC7396 runs the examples of RFC 7396, Appendix A.
func TestMergePatchRFC7396(t *testing.T) {
	for _, tc := range []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		{`{"n":1.50}`, `{"m":12345678901234567890}`, `{"m":12345678901234567890,"n":1.50}`},
	} {
		target, err := decodeJSON([]byte(tc.target))
		if err != nil {
			t.Fatal(err)
		}
		patch, err := decodeJSON([]byte(tc.patch))
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeJSON(mergePatch(target, patch))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("merge %s with %s = %s, want %s", tc.target, tc.patch, got, tc.want)
		}
	}
}

func TestDecodeJSONRejectsTrailingData(t *testing.T) {
	for _, s := range []string{`{} {}`, `{}x`, `[1] 2`} {
		if _, err := decodeJSON([]byte(s)); err == nil {
			t.Errorf("decodeJSON(%q) accepted trailing data", s)
		}
	}
	if _, err := decodeJSON([]byte(" {} \n")); err != nil {
		t.Errorf("trailing whitespace: %v", err)
	}
}
