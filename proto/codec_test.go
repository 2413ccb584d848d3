package proto_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
	"github.com/lmosnode/lmosnode/proto"
)

const goldenDir = "testdata/golden/envelope"

// TestGoldenEnvelope decodes every input in testdata/golden/envelope (the
// spec's examples, copied verbatim, plus extension and lenient-input cases)
// and compares the JSON output, the CBOR output and Validate's verdict with
// the .golden file beside it.
func TestGoldenEnvelope(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			got := goldenReport(t, data)
			golden := strings.TrimSuffix(in, ".json") + ".golden"
			if *proto.UpdateGolden {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
			}
		})
	}
}

func goldenReport(t *testing.T, data []byte) string {
	t.Helper()
	var m proto.Message
	if err := proto.JSON.Unmarshal(data, &m); err != nil {
		t.Fatalf("decode: %v", err)
	}
	j, err := proto.JSON.Marshal(&m)
	if err != nil {
		t.Fatalf("encode JSON: %v", err)
	}
	c, err := proto.CBOR.Marshal(&m)
	if err != nil {
		t.Fatalf("encode CBOR: %v", err)
	}
	// The two forms carry the same message.
	var fromCBOR proto.Message
	if err := proto.CBOR.Unmarshal(c, &fromCBOR); err != nil {
		t.Fatalf("decode CBOR: %v", err)
	}
	if !reflect.DeepEqual(m, fromCBOR) {
		t.Errorf("CBOR round trip changed the message:\n%+v\n%+v", m, fromCBOR)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, j, "", "  "); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, j)
	}
	diag, err := cbor.Diagnose(c)
	if err != nil {
		t.Fatalf("diagnose: %v", err)
	}
	verdict := "ok"
	if err := m.Validate(); err != nil {
		verdict = err.Error()
	}
	return fmt.Sprintf("# JSON (compact on the wire, indented here)\n%s\n# CBOR (%d bytes, hex)\n%s\n# CBOR (diagnostic notation)\n%s\n# Validate\n%s\n",
		indented.String(), len(c), hex.EncodeToString(c), diag, verdict)
}

func TestCodecFor(t *testing.T) {
	for _, tc := range []struct {
		ct   string
		want proto.Codec
	}{
		{"application/json", proto.JSON},
		{"application/JSON; charset=utf-8", proto.JSON},
		{"application/cbor", proto.CBOR},
		{" application/cbor ;", proto.CBOR},
		{"text/plain", nil},
		{"", nil},
	} {
		got, ok := proto.CodecFor(tc.ct)
		if got != tc.want || ok != (tc.want != nil) {
			t.Errorf("CodecFor(%q) = %v, %v; want %v", tc.ct, got, ok, tc.want)
		}
		if ok && got.ContentType() != strings.ToLower(strings.TrimSpace(strings.Split(tc.ct, ";")[0])) {
			t.Errorf("ContentType() = %q for %q", got.ContentType(), tc.ct)
		}
	}
}

func TestSniffCodec(t *testing.T) {
	m := proto.NewMessage("urn:x", proto.MsgSubscribeAllEvents)
	for _, c := range []proto.Codec{proto.JSON, proto.CBOR} {
		b, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := proto.SniffCodec(b); !ok || got != c {
			t.Errorf("SniffCodec(%s output) = %v, %v", c.ContentType(), got, ok)
		}
	}
	if got, ok := proto.SniffCodec([]byte("\n\t {}")); !ok || got != proto.JSON {
		t.Errorf("SniffCodec(whitespace + {) = %v, %v", got, ok)
	}
	for _, b := range [][]byte{nil, []byte("[]"), {0x80}, []byte(" ")} {
		if got, ok := proto.SniffCodec(b); ok {
			t.Errorf("SniffCodec(%x) = %v, want none", b, got)
		}
	}
}

// TestRejections checks that bad input fails with an error naming the
// member at fault (or none, for faults of the whole message), in both
// codecs where the fault can be expressed in both.
func TestRejections(t *testing.T) {
	const head = `"thingID":"urn:x","messageID":"m","messageType":`
	for _, tc := range []struct {
		name   string
		json   string // JSON input, or "" for a CBOR-only case
		cbor   string // CBOR input in hex, or "" for a JSON-only case
		member string // the member the error must name; "" for none
		substr string // part of the error text
	}{
		{name: "array", json: `[]`, cbor: "80", substr: "array"},
		{name: "string", json: `"x"`, substr: "got string"},
		{name: "empty", json: ``, substr: "invalid JSON"},
		{name: "trailing data", json: `{"messageType":"event"} {}`, substr: "data after the value"},
		{name: "not UTF-8", json: "{\"messageType\":\"event\",\"x\":\"\xff\"}", substr: "UTF-8"},
		{name: "no messageType", json: `{"thingID":"urn:x"}`, cbor: "a167746869" + "6e674944" + "6575726e3a78", member: "messageType", substr: "missing"},
		{name: "unknown messageType", json: `{` + head + `"invokeActions"}`, member: "messageType", substr: `unknown message type "invokeActions"`},
		{name: "messageType number", json: `{"messageType":1}`, cbor: "a16b6d65737361676554797065" + "01", member: "messageType", substr: "want a string, got integer"},
		{name: "thingID number", json: `{"messageType":"event","thingID":7}`, member: "thingID", substr: "want a string"},
		{name: "messageId object", json: `{"messageType":"event","messageId":{}}`, member: "messageId", substr: "got object"},
		{name: "correlationID array", json: `{"messageType":"event","correlationID":[]}`, member: "correlationID", substr: "got array"},
		{name: "name bool", json: `{"messageType":"readProperty","name":true}`, member: "name", substr: "got boolean"},
		{name: "status float", json: `{"messageType":"error","status":500.0}`, member: "status", substr: "got number"},
		{name: "timestamp number", json: `{"messageType":"event","timestamp":1}`, member: "timestamp", substr: "want a string"},
		{name: "stream string", json: `{"messageType":"invokeAction","stream":"yes"}`, member: "stream", substr: "want a boolean"},
		{name: "oneWay number", json: `{"messageType":"invokeAction","oneWay":1}`, member: "oneWay", substr: "want a boolean"},
		{name: "title number", json: `{"messageType":"error","title":1}`, member: "title", substr: "want a string"},
		{name: "conflicting thingID", json: `{"messageType":"event","thingID":"urn:a","thingId":"urn:b"}`, member: "thingId", substr: `conflicts with member "thingID"`},
		{name: "conflicting messageID", json: `{"messageType":"event","messageID":"a","messageId":"b"}`, member: "messageId", substr: "conflicts"},
		{name: "conflicting correlationID", json: `{"messageType":"event","correlationID":"a","correlationId":"b"}`, member: "correlationId", substr: "conflicts"},
		{name: "conflicting action and name", json: `{"messageType":"invokeAction","action":"a","name":"b"}`, member: "name", substr: `conflicts with member "action"`},
		{name: "conflicting event and name", json: `{"messageType":"event","event":"a","name":"b"}`, member: "name", substr: `conflicts with member "event"`},
		{name: "duplicate member", json: `{"messageType":"event","data":1,"data":2}`, member: "data", substr: "duplicate"},
		{name: "duplicate nested", json: `{"messageType":"event","data":{"a":{"b":1,"b":1}}}`, member: "data", substr: "at /a/b: duplicate"},
		{name: "float overflow", json: `{"messageType":"event","input":[1e400]}`, member: "input", substr: "at /0: number 1e400 is out of the range"},
		{name: "integer beyond 2^1024", json: `{"messageType":"event","value":` + strings.Repeat("9", 310) + `}`, member: "value", substr: "beyond"},
		{name: "integer 2^1024", json: `{"messageType":"event","value":` + pow2(1024) + `}`, member: "value", substr: "beyond"},
		{name: "too deep", json: `{"messageType":"event","data":` + strings.Repeat("[", proto.MaxDepth+1) + strings.Repeat("]", proto.MaxDepth+1) + `}`, member: "data", substr: "nested deeper"},
		{name: "syntax error in payload", json: `{"messageType":"event","data":{"a":[1,}}`, member: "data", substr: "at /a/1: invalid JSON"},
		{name: "truncated", json: `{"messageType":"event","data":{"a":`, member: "data", substr: "unexpected EOF"},
		// CBOR-only faults: things JSON cannot say.
		{name: "CBOR byte string", cbor: "a2" + "6b6d65737361676554797065" + "656576656e74" + "6464617461" + "4101", member: "data", substr: "byte string has no JSON form"},
		{name: "CBOR NaN", cbor: "a2" + "6b6d65737361676554797065" + "656576656e74" + "6464617461" + "f97e00", member: "data", substr: "no JSON form"},
		{name: "CBOR infinity", cbor: "a2" + "6b6d65737361676554797065" + "656576656e74" + "6464617461" + "81f97c00", member: "data", substr: "at /0: float +Inf"},
		{name: "CBOR integer map key", cbor: "a2" + "6b6d65737361676554797065" + "656576656e74" + "6464617461" + "a10101", member: "data", substr: "not a text string"},
		{name: "CBOR integer envelope key", cbor: "a1" + "01" + "01", substr: "not a text string"},
		{name: "CBOR date tag", cbor: "a2" + "6b6d65737361676554797065" + "656576656e74" + "6464617461" + "c11a514b67b0", member: "data", substr: "no JSON form"},
		{name: "CBOR unknown tag", cbor: "a2" + "6b6d65737361676554797065" + "656576656e74" + "6464617461" + "d8ff01", member: "data", substr: "tag 255 has no JSON form"},
		{name: "CBOR simple value", cbor: "a2" + "6b6d65737361676554797065" + "656576656e74" + "6464617461" + "e0", member: "data", substr: "simple value 0"},
		{name: "CBOR undefined", cbor: "a2" + "6b6d65737361676554797065" + "656576656e74" + "6464617461" + "f7", substr: "invalid CBOR"},
		{name: "CBOR duplicate key", cbor: "a2" + "6b6d65737361676554797065" + "656576656e74" + "6b6d65737361676554797065" + "656576656e74", substr: "invalid CBOR"},
		{name: "CBOR trailing data", cbor: "a1" + "6b6d65737361676554797065" + "656576656e74" + "00", substr: "invalid CBOR"},
		{name: "CBOR truncated", cbor: "a2" + "6b6d65737361676554797065", substr: "invalid CBOR"},
		{name: "CBOR invalid UTF-8", cbor: "a1" + "6b6d65737361676554797065" + "61ff", substr: "invalid CBOR"},
		{name: "CBOR bignum beyond 2^1024", cbor: "a2" + "6b6d65737361676554797065" + "656576656e74" + "6464617461" + "c25881" + "01" + strings.Repeat("00", 128), member: "data", substr: "beyond"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(c proto.Codec, in []byte) {
				m := proto.Message{Name: "untouched"}
				err := c.Unmarshal(in, &m)
				if err == nil {
					t.Fatalf("%s: accepted %q", c.ContentType(), in)
				}
				if m.Name != "untouched" {
					t.Errorf("%s: a failed decode changed the message", c.ContentType())
				}
				var me *proto.MemberError
				switch {
				case tc.member == "" && errors.As(err, &me):
					t.Errorf("%s: error names member %q, want none: %v", c.ContentType(), me.Member, err)
				case tc.member != "" && !errors.As(err, &me):
					t.Errorf("%s: error names no member, want %q: %v", c.ContentType(), tc.member, err)
				case tc.member != "" && me.Member != tc.member:
					t.Errorf("%s: error names member %q, want %q: %v", c.ContentType(), me.Member, tc.member, err)
				}
				if !strings.Contains(err.Error(), tc.substr) {
					t.Errorf("%s: error %q does not contain %q", c.ContentType(), err, tc.substr)
				}
			}
			if tc.json != "" || tc.cbor == "" {
				check(proto.JSON, []byte(tc.json))
				// The same document in CBOR, where JSON can be decoded
				// leniently into a generic tree.
				if tc.cbor == "" {
					return
				}
			}
			if tc.cbor != "" {
				b, err := hex.DecodeString(tc.cbor)
				if err != nil {
					t.Fatal(err)
				}
				check(proto.CBOR, b)
			}
		})
	}
}

func pow2(n uint) string { return new(big.Int).Lsh(big.NewInt(1), n).String() }

func TestSizeLimit(t *testing.T) {
	big := []byte(`{"messageType":"event","data":"` + strings.Repeat("x", proto.MaxMessageSize) + `"}`)
	for _, c := range []proto.Codec{proto.JSON, proto.CBOR} {
		var m proto.Message
		if err := c.Unmarshal(big, &m); !errors.Is(err, proto.ErrTooLarge) {
			t.Errorf("%s: Unmarshal of %d bytes: %v, want ErrTooLarge", c.ContentType(), len(big), err)
		}
		m = proto.Message{Type: proto.MsgEvent, Data: proto.StringValue(strings.Repeat("x", proto.MaxMessageSize))}
		if _, err := c.Marshal(&m); !errors.Is(err, proto.ErrTooLarge) {
			t.Errorf("%s: Marshal of a too large message: %v, want ErrTooLarge", c.ContentType(), err)
		}
	}
	if _, err := proto.ParseValue(big); !errors.Is(err, proto.ErrTooLarge) {
		t.Errorf("ParseValue of %d bytes: %v, want ErrTooLarge", len(big), err)
	}
}

func TestMarshalRejects(t *testing.T) {
	ext := func(k string) map[string]proto.Value { return map[string]proto.Value{k: proto.Null} }
	for _, tc := range []struct {
		name   string
		m      *proto.Message
		member string
	}{
		{"nil", nil, ""},
		{"no type", &proto.Message{ThingID: "urn:x"}, "messageType"},
		{"unknown type", &proto.Message{Type: "foo"}, "messageType"},
		{"extension clashes", &proto.Message{Type: proto.MsgEvent, Extensions: ext("thingId")}, "thingId"},
		{"extension clashes with name alias", &proto.Message{Type: proto.MsgEvent, Extensions: ext("action")}, "action"},
		{"invalid UTF-8", &proto.Message{Type: proto.MsgEvent, Title: "\xff"}, "title"},
		{"invalid UTF-8 extension name", &proto.Message{Type: proto.MsgEvent, Extensions: ext("\xff")}, "\xff"},
	} {
		for _, c := range []proto.Codec{proto.JSON, proto.CBOR} {
			_, err := c.Marshal(tc.m)
			var me *proto.MemberError
			switch {
			case err == nil:
				t.Errorf("%s/%s: Marshal accepted %+v", tc.name, c.ContentType(), tc.m)
			case tc.member != "" && (!errors.As(err, &me) || me.Member != tc.member):
				t.Errorf("%s/%s: %v, want an error naming %q", tc.name, c.ContentType(), err, tc.member)
			}
		}
	}
}

// TestAbsentAndNull: an absent payload and a null payload are different
// messages, in both codecs; absent extension Values are not sent.
func TestAbsentAndNull(t *testing.T) {
	m := proto.NewMessage("urn:x", proto.MsgActionStatus)
	m.Name, m.Status = "a", proto.ActionCompleted
	m.Extensions = map[string]proto.Value{"gone": {}}
	withNull := m.Clone()
	withNull.Output = proto.Null
	for _, c := range []proto.Codec{proto.JSON, proto.CBOR} {
		for _, in := range []*proto.Message{m, withNull} {
			b, err := c.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			var out proto.Message
			if err := c.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			if out.Output.Present() != in.Output.Present() || out.Output.IsNull() != in.Output.IsNull() {
				t.Errorf("%s: output present=%v null=%v, want present=%v null=%v", c.ContentType(),
					out.Output.Present(), out.Output.IsNull(), in.Output.Present(), in.Output.IsNull())
			}
			if out.Extensions != nil {
				t.Errorf("%s: absent extension sent: %v", c.ContentType(), out.Extensions)
			}
		}
	}
}

// TestCBORNumbers pins the CBOR form of numbers: shortest integers,
// bignums beyond 64 bits, shortest floats that keep the value.
func TestCBORNumbers(t *testing.T) {
	for _, tc := range []struct{ json, cbor string }{
		{"0", "00"},
		{"-0", "00"},
		{"23", "17"},
		{"-1", "20"},
		{"9007199254740993", "1b0020000000000001"},
		{"18446744073709551615", "1bffffffffffffffff"},
		{"18446744073709551616", "c249010000000000000000"},
		{"-9223372036854775808", "3b7fffffffffffffff"},
		{"-18446744073709551616", "3bffffffffffffffff"},
		{"-18446744073709551617", "c349010000000000000000"},
		{"1.0", "f93c00"},
		{"1.5", "f93e00"},
		{"-0.0", "f98000"},
		{"100000.0", "fa47c35000"},
		{"0.1", "fb3fb999999999999a"},
		{"1e2", "f95640"},
	} {
		v, err := proto.ParseValue([]byte(tc.json))
		if err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		m := &proto.Message{Type: proto.MsgEvent, Data: v}
		b, err := proto.CBOR.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		// {"data": X, "messageType": "event"}: X follows the key "data".
		want := "a2" + "6464617461" + tc.cbor + "6b6d65737361676554797065656576656e74"
		if got := hex.EncodeToString(b); got != want {
			t.Errorf("%s: CBOR %s, want %s", tc.json, got, want)
		}
		var back proto.Message
		if err := proto.CBOR.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !back.Data.Equal(v) {
			t.Errorf("%s: CBOR round trip gave %s, want %s", tc.json, back.Data, v)
		}
	}
	// Non-preferred CBOR input decodes to the same value: a bignum that
	// fits 64 bits, a float64 where a float16 would do, indefinite lengths.
	for _, tc := range []struct{ cbor, json string }{
		{"c24101", "1"},
		{"c34100", "-1"},
		{"fb3ff8000000000000", "1.5"},
		{"9f0102ff", "[1,2]"},
		{"bf616101ff", `{"a":1}`},
		{"7f61616162ff", `"ab"`},
		{"1800", "0"},
	} {
		b, _ := hex.DecodeString("a2" + "6464617461" + tc.cbor + "6b6d65737361676554797065656576656e74")
		var m proto.Message
		if err := proto.CBOR.Unmarshal(b, &m); err != nil {
			t.Errorf("%s: %v", tc.cbor, err)
			continue
		}
		if m.Data.String() != tc.json {
			t.Errorf("%s decodes to %s, want %s", tc.cbor, m.Data, tc.json)
		}
	}
}

func TestValue(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b": 1, "a": [true, false, null]}`, `{"a":[true,false,null],"b":1}`},
		{`"\u00e9\/\u2028<>&"`, "\"é/\u2028<>&\""},
		{`"\u0000\u001f\u007f"`, "\"\\u0000\\u001f\u007f\""},
		{`1E+2`, `100.0`},
		{`1e21`, `1e+21`},
		{`0.000001`, `0.000001`},
		{`0.0000001`, `1e-7`},
		{`-0`, `0`},
		{`12345678901234567890.0`, `12345678901234567000.0`},
		{`1e-400`, `0.0`},
		{` [ ] `, `[]`},
	} {
		v, err := proto.ParseValue([]byte(tc.in))
		if err != nil {
			t.Errorf("ParseValue(%s): %v", tc.in, err)
			continue
		}
		if v.String() != tc.want {
			t.Errorf("ParseValue(%s) = %s, want %s", tc.in, v, tc.want)
		}
		// Canonical text is a fixed point.
		again, err := proto.ParseValue(v.JSON())
		if err != nil || !again.Equal(v) {
			t.Errorf("ParseValue(%s) is not stable: %s, %v", v, again, err)
		}
	}
	v, err := proto.ValueOf(map[string]any{"n": uint64(math.MaxUint64), "s": "x"})
	if err != nil || v.String() != `{"n":18446744073709551615,"s":"x"}` {
		t.Errorf("ValueOf = %s, %v", v, err)
	}
	var n struct{ N uint64 }
	if err := v.Decode(&n); err != nil || n.N != math.MaxUint64 {
		t.Errorf("Decode = %v, %v", n, err)
	}
	if err := (proto.Value{}).Decode(&n); err == nil {
		t.Error("Decode of an absent value succeeded")
	}
	if _, err := proto.ValueOf(math.Inf(1)); err == nil {
		t.Error("ValueOf(+Inf) succeeded")
	}
	if s := proto.StringValue("a\"\xff"); s.String() != `"a\"`+"\uFFFD"+`"` {
		t.Errorf("StringValue = %s", s)
	}
	if (proto.Value{}).Present() || !proto.Null.Present() || !proto.Null.IsNull() || (proto.Value{}).Equal(proto.Null) {
		t.Error("absent and null are confused")
	}
	// Value in a user's struct.
	var s struct{ V proto.Value }
	if err := json.Unmarshal([]byte(`{"V": {"z": 1, "a": 2}}`), &s); err != nil || s.V.String() != `{"a":2,"z":1}` {
		t.Errorf("json.Unmarshal into Value: %s, %v", s.V, err)
	}
	if b, err := json.Marshal(struct{ V, W proto.Value }{V: s.V}); err != nil || string(b) != `{"V":{"a":2,"z":1},"W":null}` {
		t.Errorf("json.Marshal of Values: %s, %v", b, err)
	}
}

// TestMessageInOtherEncoders: Message implements the json and cbor
// (un)marshaler interfaces, for values and pointers alike.
func TestMessageInOtherEncoders(t *testing.T) {
	m := proto.NewMessage("urn:x", proto.MsgReadProperty)
	m.Name = "p"
	want, _ := proto.JSON.Marshal(m)
	for _, x := range []any{*m, m} {
		b, err := json.Marshal(x)
		if err != nil || !bytes.Equal(b, want) {
			t.Errorf("json.Marshal(%T) = %s, %v; want %s", x, b, err, want)
		}
	}
	var back proto.Message
	if err := json.Unmarshal(want, &back); err != nil || !reflect.DeepEqual(&back, m) {
		t.Errorf("json.Unmarshal = %+v, %v", back, err)
	}
	wantC, _ := proto.CBOR.Marshal(m)
	b, err := cbor.Marshal([]any{*m})
	if err != nil || !bytes.Equal(b[1:], wantC) {
		t.Errorf("cbor.Marshal = %x, %v; want 81%x", b, err, wantC)
	}
	var backs []proto.Message
	if err := cbor.Unmarshal(b, &backs); err != nil || len(backs) != 1 || !reflect.DeepEqual(&backs[0], m) {
		t.Errorf("cbor.Unmarshal = %+v, %v", backs, err)
	}
}

// TestRoundTripRandom: random messages of every type, with random payloads
// (big integers, floats, deep nesting, every escape) survive
// JSON → CBOR → JSON and CBOR → JSON → CBOR byte for byte, and decode to
// the message they came from.
func TestRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 2000
	if testing.Short() {
		n = 200
	}
	for i := range n {
		m := randomMessage(rng, allTypes[i%len(allTypes)])
		j, err := proto.JSON.Marshal(m)
		if err != nil {
			t.Fatalf("JSON.Marshal(%+v): %v", m, err)
		}
		c, err := proto.CBOR.Marshal(m)
		if err != nil {
			t.Fatalf("CBOR.Marshal(%+v): %v", m, err)
		}
		var fromJ, fromC proto.Message
		if err := proto.JSON.Unmarshal(j, &fromJ); err != nil {
			t.Fatalf("JSON.Unmarshal(%s): %v", j, err)
		}
		if err := proto.CBOR.Unmarshal(c, &fromC); err != nil {
			t.Fatalf("CBOR.Unmarshal(%x): %v", c, err)
		}
		if !reflect.DeepEqual(&fromJ, m) || !reflect.DeepEqual(&fromC, m) {
			t.Fatalf("round trip changed the message\nin   %+v\njson %+v\ncbor %+v", m, fromJ, fromC)
		}
		j2, _ := proto.JSON.Marshal(&fromC)
		c2, _ := proto.CBOR.Marshal(&fromJ)
		if !bytes.Equal(j, j2) || !bytes.Equal(c, c2) {
			t.Fatalf("codecs disagree\njson      %s\nvia cbor  %s\ncbor      %x\nvia json  %x", j, j2, c, c2)
		}
	}
}

var allTypes = []proto.MessageType{
	proto.MsgInvokeAction, proto.MsgCancelAction, proto.MsgQueryAction, proto.MsgActionStatus,
	proto.MsgSubscribeEvent, proto.MsgUnsubscribeEvent, proto.MsgSubscribeAllEvents,
	proto.MsgUnsubscribeAllEvents, proto.MsgEvent, proto.MsgReadProperty, proto.MsgPropertyReading,
	proto.MsgPropertyReadings, proto.MsgWriteProperty, proto.MsgWriteMultipleProperties,
	proto.MsgObserveProperty, proto.MsgUnobserveProperty, proto.MsgError,
	proto.MsgStreamInput, proto.MsgStreamEnd,
}

func randomMessage(rng *rand.Rand, typ proto.MessageType) *proto.Message {
	m := proto.NewMessage("urn:uuid:"+randomUUID(rng), typ)
	str := func() string {
		if rng.IntN(3) == 0 {
			return ""
		}
		return randomString(rng)
	}
	val := func() proto.Value {
		if rng.IntN(3) == 0 {
			return proto.Value{}
		}
		return mustValue(randomJSON(rng, 0))
	}
	m.CorrelationID = str()
	m.Name, m.Status, m.Reason, m.Timestamp = str(), str(), str(), str()
	m.Traceparent, m.Tracestate = str(), str()
	m.ProblemType, m.Title, m.Detail, m.Instance = str(), str(), str(), str()
	m.Data, m.Input, m.Output, m.Value = val(), val(), val(), val()
	m.Stream, m.OneWay = rng.IntN(2) == 0, rng.IntN(2) == 0
	if rng.IntN(2) == 0 {
		m.Extensions = map[string]proto.Value{}
		for range rng.IntN(4) + 1 {
			k := "x-" + randomString(rng)
			m.Extensions[k] = mustValue(randomJSON(rng, 0))
		}
	}
	return m
}

func randomUUID(rng *rand.Rand) string {
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff,
		rng.Uint32()&0xfff, 0x8000|rng.Uint32()&0x3fff, rng.Uint64()&0xffffffffffff)
}

func randomString(rng *rand.Rand) string {
	alphabet := []string{"a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "€", "😀", "\u2028", "<", "&"}
	var b strings.Builder
	for range rng.IntN(12) + 1 {
		b.WriteString(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

// randomJSON returns random JSON text; numbers cover int64/uint64 edges,
// bignums and floats of every size.
func randomJSON(rng *rand.Rand, depth int) string {
	k := rng.IntN(10)
	if depth > 4 && k >= 8 {
		k = rng.IntN(8)
	}
	switch k {
	case 0:
		return "null"
	case 1:
		return strconv.FormatBool(rng.IntN(2) == 0)
	case 2:
		b, _ := json.Marshal(randomString(rng))
		return string(b)
	case 3:
		edges := []string{"0", "-1", "9007199254740993", "-9007199254740993", "9223372036854775807",
			"-9223372036854775808", "9223372036854775808", "18446744073709551615", "18446744073709551616",
			"-18446744073709551616", "-18446744073709551617"}
		return edges[rng.IntN(len(edges))]
	case 4:
		var b strings.Builder
		if rng.IntN(2) == 0 {
			b.WriteByte('-')
		}
		b.WriteByte(byte('1' + rng.IntN(9)))
		for range rng.IntN(60) {
			b.WriteByte(byte('0' + rng.IntN(10)))
		}
		return b.String()
	case 5:
		return strconv.FormatInt(rng.Int64()>>rng.IntN(64), 10)
	case 6:
		var f float64
		for {
			f = math.Float64frombits(rng.Uint64())
			if !math.IsNaN(f) && !math.IsInf(f, 0) {
				break
			}
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case 7:
		fs := []float64{0, math.Copysign(0, -1), 1, 0.5, 1e21, 1e-7, 65504, 100000, math.MaxFloat64, math.SmallestNonzeroFloat64}
		return strconv.FormatFloat(fs[rng.IntN(len(fs))], 'e', -1, 64)
	case 8:
		parts := make([]string, rng.IntN(5))
		for i := range parts {
			parts[i] = randomJSON(rng, depth+1)
		}
		return "[" + strings.Join(parts, ",") + "]"
	default:
		n := rng.IntN(5)
		parts := make([]string, 0, n)
		seen := map[string]bool{}
		for range n {
			key := randomString(rng)
			if seen[key] {
				continue
			}
			seen[key] = true
			kb, _ := json.Marshal(key)
			parts = append(parts, string(kb)+":"+randomJSON(rng, depth+1))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
}

func mustValue(s string) proto.Value {
	v, err := proto.ParseValue([]byte(s))
	if err != nil {
		panic(fmt.Sprintf("ParseValue(%s): %v", s, err))
	}
	return v
}

// checkStable is the fuzz property of both decoders: what decodes
// re-encodes in both codecs, and decoding that gives the same message and
// the same bytes again.
func checkStable(t *testing.T, m *proto.Message) {
	j, err := proto.JSON.Marshal(m)
	if err != nil {
		if errors.Is(err, proto.ErrTooLarge) {
			return
		}
		t.Fatalf("JSON.Marshal of a decoded message: %v", err)
	}
	c, err := proto.CBOR.Marshal(m)
	if err != nil {
		if errors.Is(err, proto.ErrTooLarge) {
			return
		}
		t.Fatalf("CBOR.Marshal of a decoded message: %v", err)
	}
	var fromJ, fromC proto.Message
	if err := proto.JSON.Unmarshal(j, &fromJ); err != nil {
		t.Fatalf("JSON.Unmarshal(%s): %v", j, err)
	}
	if err := proto.CBOR.Unmarshal(c, &fromC); err != nil {
		t.Fatalf("CBOR.Unmarshal(%x): %v", c, err)
	}
	if !reflect.DeepEqual(&fromJ, m) || !reflect.DeepEqual(&fromC, m) {
		t.Fatalf("not stable\nin   %+v\njson %+v\ncbor %+v", m, fromJ, fromC)
	}
	j2, _ := proto.JSON.Marshal(&fromC)
	if !bytes.Equal(j, j2) {
		t.Fatalf("JSON → Message → JSON not stable:\n%s\n%s", j, j2)
	}
	_ = m.Validate() // must not panic
}

// checkAgainstEncodingJSON compares the package's JSON parser with
// encoding/json: both accept the same texts, except for what Value rejects
// on purpose, and read the same value from them.
func checkAgainstEncodingJSON(t *testing.T, data []byte) {
	v, err := proto.ParseValue(data)
	if err != nil {
		if !json.Valid(data) {
			return
		}
		for _, deliberate := range []string{"duplicate member", "nested deeper", "beyond", "out of the range", "not valid UTF-8"} {
			if strings.Contains(err.Error(), deliberate) {
				return
			}
		}
		t.Fatalf("ParseValue rejects valid JSON %q: %v", data, err)
	}
	if !json.Valid(data) {
		t.Fatalf("ParseValue accepts invalid JSON %q as %s", data, v)
	}
	var want, got any
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	if err := json.Unmarshal(v.JSON(), &got); err != nil {
		t.Fatalf("encoding/json on canonical %s: %v", v, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q reads as %#v, its canonical form %s as %#v", data, want, v, got)
	}
}

func fuzzSeeds(tb testing.TB) [][]byte {
	inputs, _ := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	var seeds [][]byte
	for _, in := range inputs {
		b, err := os.ReadFile(in)
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	return seeds
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte(`{"messageType":"event","data":[1e2,-0,18446744073709551616,{"a":"\u0000"}]}`))
	f.Add([]byte(`["\ud83d\ude00","\ud83d","\ude00x","\ud83d\u0041",1E-2,0.5e+3]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstEncodingJSON(t, data)
		checkDirectDecode(t, data)
		var m proto.Message
		if err := proto.JSON.Unmarshal(data, &m); err != nil {
			return
		}
		checkStable(t, &m)
	})
}

// checkDirectDecode checks that wherever the JSON codec's direct decoder
// takes a message, the tree decoder accepts it too, as the same Message.
func checkDirectDecode(t *testing.T, data []byte) {
	t.Helper()
	var direct, tree proto.Message
	if !proto.DecodeJSONDirect(data, &direct) {
		return
	}
	if err := proto.DecodeJSONTree(data, &tree); err != nil {
		t.Fatalf("%s: the direct decoder took it, the tree decoder: %v", data, err)
	}
	if !reflect.DeepEqual(direct, tree) {
		t.Fatalf("%s: direct decoder %+v, tree decoder %+v", data, direct, tree)
	}
}

// The direct decoder takes every ordinary message (the golden ones, a
// reply with a payload of each kind) and agrees with the tree decoder; it
// leaves what it does not handle to the tree.
func TestDirectDecodeMatchesTree(t *testing.T) {
	cases := fuzzSeeds(t)
	if len(cases) == 0 {
		t.Fatal("no golden messages")
	}
	for _, payload := range []string{`21.5`, `-0`, `1E2`, `"a\u00e9\n"`, `true`, `null`, `[1,{"b":2,"a":[]}]`, `{"z":1,"a":"x"}`} {
		cases = append(cases, []byte(`{"thingID":"urn:t","messageID":"m1","messageType":"propertyReading","correlationID":"c1","name":"temperature","value":`+payload+`,"timestamp":"2025-01-01T00:00:00Z","x-ext":`+payload+`}`))
	}
	for _, c := range cases {
		var m proto.Message
		if !proto.DecodeJSONDirect(c, &m) {
			t.Errorf("direct decoder refused %s", c)
			continue
		}
		checkDirectDecode(t, c)
	}
	for _, odd := range []string{
		`{"messageType":"readProperty","thingID":"a","thingId":"b"}`, // conflicting aliases
		`{"messageType":"readProperty","name":"a","name":"a"}`,       // duplicate
		`{"messageType":"error","status":404.5}`,                     // a fraction as status
		`{"messageType":"nope"}`,
		`{"thingID":"a"}`,
		`{"messageType":"readProperty"} x`,
		`{"messageType":"readProperty","stream":"yes"}`,
		"{\"messageType\":\"readProperty\",\"name\":\"\xff\"}",
	} {
		var direct proto.Message
		if proto.DecodeJSONDirect([]byte(odd), &direct) {
			t.Errorf("direct decoder took %s: %+v", odd, direct)
		}
		var viaCodec, tree proto.Message
		errCodec := proto.JSON.Unmarshal([]byte(odd), &viaCodec)
		errTree := proto.DecodeJSONTree([]byte(odd), &tree)
		if fmt.Sprint(errCodec) != fmt.Sprint(errTree) || !reflect.DeepEqual(viaCodec, tree) {
			t.Errorf("%s: codec %v, tree %v", odd, errCodec, errTree)
		}
	}
}

func FuzzDecodeCBOR(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		var m proto.Message
		if err := proto.JSON.Unmarshal(s, &m); err != nil {
			f.Fatal(err)
		}
		c, err := proto.CBOR.Marshal(&m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(c)
	}
	f.Add([]byte{0xa1, 0x6b, 'm', 'e', 's', 's', 'a', 'g', 'e', 'T', 'y', 'p', 'e', 0x65, 'e', 'v', 'e', 'n', 't'})
	f.Fuzz(func(t *testing.T, data []byte) {
		var m proto.Message
		if err := proto.CBOR.Unmarshal(data, &m); err != nil {
			return
		}
		checkStable(t, &m)
	})
}

// TestMaxDepth: a payload nested exactly MaxDepth deep, with a bignum at
// the bottom, passes both codecs; one level more fails both.
func TestMaxDepth(t *testing.T) {
	deep := strings.Repeat("[", proto.MaxDepth) + "18446744073709551616" + strings.Repeat("]", proto.MaxDepth)
	m := &proto.Message{Type: proto.MsgEvent, Data: mustValue(deep)}
	c, err := proto.CBOR.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back proto.Message
	if err := proto.CBOR.Unmarshal(c, &back); err != nil || !back.Data.Equal(m.Data) {
		t.Fatalf("CBOR round trip at MaxDepth: %v", err)
	}
	// One more array level, in CBOR: 0x81 wraps the payload once more.
	i := bytes.Index(c, []byte{0x81})
	deeper := append(append(append([]byte{}, c[:i]...), 0x81), c[i:]...)
	err = proto.CBOR.Unmarshal(deeper, &back)
	if err == nil {
		t.Fatal("CBOR payload deeper than MaxDepth accepted")
	}
	if _, err := proto.ParseValue([]byte("[" + deep + "]")); err == nil {
		t.Fatal("JSON payload deeper than MaxDepth accepted")
	}
}

// TestSelfDescribedCBOR: the self-described CBOR tag 55799 in front of a
// message is sniffed and skipped.
func TestSelfDescribedCBOR(t *testing.T) {
	c, err := proto.CBOR.Marshal(proto.NewMessage("urn:x", proto.MsgSubscribeAllEvents))
	if err != nil {
		t.Fatal(err)
	}
	tagged := append([]byte{0xd9, 0xd9, 0xf7}, c...)
	codec, ok := proto.SniffCodec(tagged)
	if !ok || codec != proto.CBOR {
		t.Fatalf("SniffCodec = %v, %v", codec, ok)
	}
	var m proto.Message
	if err := codec.Unmarshal(tagged, &m); err != nil || m.Type != proto.MsgSubscribeAllEvents {
		t.Fatalf("Unmarshal = %+v, %v", m, err)
	}
}

// benchMessage is an actionStatus with a typical agent output: text, a
// few numbers, a list of records.
func benchMessage(b *testing.B) *proto.Message {
	type record struct {
		ID      int64   `json:"id"`
		Title   string  `json:"title"`
		Score   float64 `json:"score"`
		Tags    []string
		Visited bool `json:"visited"`
	}
	out := struct {
		Text    string   `json:"text"`
		Tokens  []int    `json:"tokens"`
		Records []record `json:"records"`
	}{Text: strings.Repeat("The weather in New York is sunny, 25°C. ", 20)}
	for i := range 100 {
		out.Tokens = append(out.Tokens, i*7919)
		if i < 20 {
			out.Records = append(out.Records, record{int64(i) << 40, fmt.Sprintf("record \"%d\"", i), float64(i) / 3, []string{"a", "b"}, i%2 == 0})
		}
	}
	m := validMessage(proto.MsgActionStatus)
	v, err := proto.ValueOf(out)
	if err != nil {
		b.Fatal(err)
	}
	m.Output = v
	return m
}

func BenchmarkCodec(b *testing.B) {
	var err error
	reading := validMessage(proto.MsgPropertyReading)
	reading.Name, reading.Timestamp = "temperature", "2025-01-01T00:00:00Z"
	if reading.Value, err = proto.ValueOf(21.5); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		c    proto.Codec
		m    *proto.Message
	}{
		{"json", proto.JSON, benchMessage(b)}, {"cbor", proto.CBOR, benchMessage(b)},
		{"json-reading", proto.JSON, reading}, {"cbor-reading", proto.CBOR, reading},
	} {
		c, m := bc.c, bc.m
		data, err := c.Marshal(m)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name+"/marshal", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := c.Marshal(m); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/unmarshal", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			var out proto.Message
			for b.Loop() {
				if err := c.Unmarshal(data, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A Value goes to CBOR and back unchanged: big integers as bignums, floats
// as floats, nested objects and arrays; what JSON cannot carry is refused.
func TestValueCBORRoundTrip(t *testing.T) {
	for _, js := range []string{
		`null`, `true`, `"héllo"`, `0`, `-1`, `42`, `1.5`, `100.0`, `1e+21`, `-0.0`,
		`9223372036854775807`, `18446744073709551615`, `-18446744073709551616`,
		`123456789012345678901234567890`, `-123456789012345678901234567890`,
		`[1,2.5,[],{},"x",null]`,
		`{"a":{"b":[{"c":1e-7,"d":99999999999999999999999}]},"z":false}`,
	} {
		v, err := proto.ParseValue([]byte(js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		b, err := v.MarshalCBOR()
		if err != nil {
			t.Fatalf("%s: marshal: %v", js, err)
		}
		var back proto.Value
		if err := back.UnmarshalCBOR(b); err != nil {
			t.Fatalf("%s: unmarshal %x: %v", js, b, err)
		}
		if !back.Equal(v) {
			t.Errorf("%s: round trip = %s (cbor %x)", js, back, b)
		}
		// Through fxamacker/cbor as a plain Go value, and as a field.
		var generic any
		if err := cbor.Unmarshal(b, &generic); err != nil {
			t.Errorf("%s: cbor.Unmarshal: %v", js, err)
		}
		wrapped, err := cbor.Marshal(map[string]proto.Value{"v": v})
		if err != nil {
			t.Fatalf("%s: cbor.Marshal: %v", js, err)
		}
		var got map[string]proto.Value
		if err := cbor.Unmarshal(wrapped, &got); err != nil || !got["v"].Equal(v) {
			t.Errorf("%s: as a map member = %s, %v", js, got["v"], err)
		}
	}

	// Integers and floats keep their CBOR kinds.
	for js, want := range map[string]string{
		`1`:                    "01",
		`1.0`:                  "f93c00",
		`18446744073709551616`: "c249010000000000000000",
		`{"b":1,"a":[true]}`:   "a26161 81f5 616201",
	} {
		v, _ := proto.ParseValue([]byte(js))
		b, err := v.MarshalCBOR()
		if err != nil {
			t.Fatal(err)
		}
		if got, w := hex.EncodeToString(b), strings.ReplaceAll(want, " ", ""); got != w {
			t.Errorf("%s: cbor %s, want %s", js, got, w)
		}
	}
	if b, err := (proto.Value{}).MarshalCBOR(); err != nil || !bytes.Equal(b, []byte{0xf6}) {
		t.Errorf("absent Value: %x %v", b, err)
	}

	for name, bad := range map[string]string{
		"byte string": "43010203",
		"NaN":         "f97e00",
		"int map key": "a10102",
		"trailing":    "0101",
		"undefined":   "f7",
		"truncated":   "82",
		"date tag":    "c11a514b67b0",
	} {
		b, _ := hex.DecodeString(bad)
		var v proto.Value
		if err := v.UnmarshalCBOR(b); err == nil {
			t.Errorf("%s: decoded as %s", name, v)
		}
	}
}

// A float literal taken as canonical without parsing is what parsing and
// formatting it would give.
func TestCanonicalFloatShortcut(t *testing.T) {
	check := func(lit string) {
		t.Helper()
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil || !strings.Contains(lit, ".") { // integers have rules of their own
			return
		}
		got, err := proto.ParseJSONNumber(lit)
		if want := proto.FormatJSONFloat(f); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", lit, got, err, want)
		}
	}
	for _, lit := range []string{"21.5", "-21.5", "0.1", "0.000001", "0.0000001", "0.0000012", "-0.5",
		"123456789012345.5", "12345678901234.5", "1234567890123456.5", "0.123456789012345", "0.1234567890123456",
		"999999999999999.9", "100000000000000000000.5", "1.10", "-0.0", "0.0", "5.0", "3.14159"} {
		check(lit)
	}
	for i := range 20000 {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		check(strconv.FormatFloat(r.NormFloat64()*math.Pow(10, float64(r.IntN(30)-12)), 'f', r.IntN(18), 64))
	}
}
