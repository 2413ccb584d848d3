package proto

// JSON and CBOR codecs of the message envelope.
//
// Both codecs carry the same model: a map with the same text keys. Decoding
// goes bytes → tree → Message (fromWire), encoding Message → member list
// (toWire) → bytes, and the tree → Message step is shared, so the two
// codecs accept and reject exactly the same messages. Payloads (Value) are
// canonical JSON text; the CBOR codec converts them to and from CBOR data
// items by walking the tree.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"mime"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
)

// MaxMessageSize is the largest encoded message, in bytes, that the codecs
// decode or produce (4 MiB). It bounds the memory one message can take
// and is the default frame limit.
const MaxMessageSize = 4 << 20

// MaxDepth is how deep arrays and objects may nest in one payload or
// extension value (a scalar has depth 0, [] depth 1). The JSON and CBOR
// decoders enforce the same limit, so a payload one accepts the other
// accepts too.
const MaxDepth = 64

// maxIntBits bounds exact integers: their magnitude is below 2^1024 (the
// range of float64), at most 309 decimal digits.
const (
	maxIntBits   = 1024
	maxIntDigits = 309
)

// ErrTooLarge is returned for a message or value larger than
// MaxMessageSize.
var ErrTooLarge = fmt.Errorf("larger than MaxMessageSize (%d bytes)", MaxMessageSize)

// Media types of the codecs.
const (
	ContentTypeJSON = "application/json"
	ContentTypeCBOR = "application/cbor"
)

// Codec encodes and decodes messages. Implementations are stateless and
// safe for concurrent use.
type Codec interface {
	// Marshal encodes m. It fails when m's type is unknown, an
	// extension member clashes with a known member, a string is not valid
	// UTF-8, or the result exceeds MaxMessageSize; it does not Validate.
	Marshal(m *Message) ([]byte, error)
	// Unmarshal decodes data into m, replacing all of m, or leaves m
	// unchanged and returns an error (a *MemberError when one member is at
	// fault). Input larger than MaxMessageSize is rejected unread.
	Unmarshal(data []byte, m *Message) error
	// ContentType returns the codec's media type.
	ContentType() string
}

// The codecs.
var (
	// JSON is the spec's JSON form. It writes the members named in the
	// spec's tables (thingID, messageID, correlationID) and reads the
	// forms of its examples too (thingId, messageId, correlationId); it
	// reads the affordance name from any of name, action or event.
	JSON Codec = jsonCodec{}
	// CBOR (RFC 8949) carries the same map as JSON, in Core Deterministic
	// Encoding: keys sorted, shortest integers, lengths and floats, no
	// indefinite lengths. Integers beyond 64 bits are bignums (tag 2/3).
	// Byte strings, other tags, undefined and other simple values have no
	// JSON counterpart and are rejected.
	CBOR Codec = cborCodec{}
)

// CodecFor returns the codec of a media type (parameters such as charset
// are ignored).
func CodecFor(contentType string) (Codec, bool) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, _, _ = strings.Cut(contentType, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	switch mt {
	case ContentTypeJSON:
		return JSON, true
	case ContentTypeCBOR:
		return CBOR, true
	}
	return nil, false
}

// SniffCodec returns the codec of an encoded message by its first byte,
// for transports without a content type (MQTT 3.1.1): a JSON message
// starts with '{' after optional whitespace, a CBOR one with a map head
// (0xa0–0xbf) or the self-described CBOR tag. The two never overlap.
func SniffCodec(p []byte) (Codec, bool) {
	q := bytes.TrimLeft(p, " \t\r\n")
	switch {
	case len(q) > 0 && q[0] == '{':
		return JSON, true
	case len(p) > 0 && p[0]>>5 == 5:
		return CBOR, true
	case len(p) > 3 && p[0] == 0xd9 && p[1] == 0xd9 && p[2] == 0xf7:
		return CBOR, true
	}
	return nil, false
}

type jsonCodec struct{}

func (jsonCodec) ContentType() string { return ContentTypeJSON }

func (jsonCodec) Marshal(m *Message) ([]byte, error) {
	ms, err := m.toWire()
	if err != nil {
		return nil, err
	}
	buf := []byte{'{'}
	for i, mem := range ms {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendString(buf, mem.key)
		buf = append(buf, ':')
		switch v := mem.val.(type) {
		case string:
			buf = appendString(buf, v)
		case bool:
			buf = strconv.AppendBool(buf, v)
		case Value:
			buf = append(buf, v.raw...)
		}
	}
	buf = append(buf, '}')
	if len(buf) > MaxMessageSize {
		return nil, fmt.Errorf("lmos message: %w", ErrTooLarge)
	}
	return buf, nil
}

func (jsonCodec) Unmarshal(data []byte, m *Message) error {
	if len(data) > MaxMessageSize {
		return fmt.Errorf("lmos message: %w", ErrTooLarge)
	}
	tree, err := parseJSON(data, MaxDepth+1)
	if err != nil {
		return envelopeErr(err)
	}
	obj, ok := tree.(object)
	if !ok {
		return fmt.Errorf("lmos message: want a JSON object, got %s", kindOf(tree))
	}
	msg, err := fromWire(obj)
	if err != nil {
		return err
	}
	*m = msg
	return nil
}

type cborCodec struct{}

func (cborCodec) ContentType() string { return ContentTypeCBOR }

func (cborCodec) Marshal(m *Message) ([]byte, error) {
	ms, err := m.toWire()
	if err != nil {
		return nil, err
	}
	wire := make(map[string]any, len(ms))
	for _, mem := range ms {
		switch v := mem.val.(type) {
		case Value:
			tree, err := parseJSON(v.raw, MaxDepth)
			if err != nil { // impossible: v.raw is canonical JSON
				return nil, memberErr(mem.key, err)
			}
			wire[mem.key] = cborItem(tree)
		default:
			wire[mem.key] = v
		}
	}
	b, err := cborEnc.Marshal(wire)
	if err != nil {
		return nil, fmt.Errorf("lmos message: cbor: %w", err)
	}
	if len(b) > MaxMessageSize {
		return nil, fmt.Errorf("lmos message: %w", ErrTooLarge)
	}
	return b, nil
}

func (cborCodec) Unmarshal(data []byte, m *Message) error {
	if len(data) > MaxMessageSize {
		return fmt.Errorf("lmos message: %w", ErrTooLarge)
	}
	var raw any
	if err := cborDec.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("lmos message: invalid CBOR: %w", err)
	}
	top, ok := raw.(map[any]any)
	if !ok {
		return fmt.Errorf("lmos message: want a CBOR map, got %s", cborKind(raw))
	}
	obj := make(object, len(top))
	for k, v := range top {
		key, ok := k.(string)
		if !ok {
			return fmt.Errorf("lmos message: CBOR map key %v is %s, not a text string", k, cborKind(k))
		}
		tree, err := fromCBOR(v, 0)
		if err != nil {
			return memberErr(key, err)
		}
		obj[key] = tree
	}
	msg, err := fromWire(obj)
	if err != nil {
		return err
	}
	*m = msg
	return nil
}

// MarshalJSON encodes m with the JSON codec. (A value receiver, so that
// encoding/json uses it for Message and *Message alike.)
func (m Message) MarshalJSON() ([]byte, error) { return JSON.Marshal(&m) }

// UnmarshalJSON decodes m with the JSON codec.
func (m *Message) UnmarshalJSON(b []byte) error { return JSON.Unmarshal(b, m) }

// MarshalCBOR encodes m with the CBOR codec.
func (m Message) MarshalCBOR() ([]byte, error) { return CBOR.Marshal(&m) }

// UnmarshalCBOR decodes m with the CBOR codec.
func (m *Message) UnmarshalCBOR(b []byte) error { return CBOR.Unmarshal(b, m) }

var cborEnc, cborDec = cborModes()

func cborModes() (cbor.EncMode, cbor.DecMode) {
	enc, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		panic(err) // impossible: fixed, valid options
	}
	noUndefined, err := cbor.NewSimpleValueRegistryFromDefaults(cbor.WithRejectedSimpleValue(23))
	if err != nil {
		panic(err) // impossible: 23 may be rejected
	}
	dec, err := cbor.DecOptions{
		DupMapKey: cbor.DupMapKeyEnforcedAPF,
		// +2: the envelope map, and a bignum tag around the deepest integer.
		MaxNestedLevels:  MaxDepth + 2,
		MaxArrayElements: MaxMessageSize,
		MaxMapPairs:      MaxMessageSize,
		IndefLength:      cbor.IndefLengthAllowed,
		TagsMd:           cbor.TagsAllowed,
		IntDec:           cbor.IntDecConvertNone,
		BigIntDec:        cbor.BigIntDecodeValue,
		SimpleValues:     noUndefined,
		UTF8:             cbor.UTF8RejectInvalid,
	}.DecMode()
	if err != nil {
		panic(err) // impossible: fixed, valid options
	}
	return enc, dec
}

// member is one wire member: its value is a string, a bool or a Value.
type member struct {
	key string
	val any
}

// knownMembers are the wire names (and accepted aliases) of Message's
// fields; no extension may use them.
var knownMembers = map[string]bool{
	"thingID": true, "thingId": true, "messageID": true, "messageId": true,
	"messageType": true, "correlationID": true, "correlationId": true,
	"name": true, "action": true, "event": true,
	"data": true, "input": true, "output": true, "value": true,
	"status": true, "reason": true, "timestamp": true,
	"traceparent": true, "tracestate": true,
	"type": true, "title": true, "detail": true, "instance": true,
	"stream": true, "oneWay": true,
}

// toWire lists m's members in wire order: the common members, the
// affordance name, the type-specific ones, trace context, then extensions
// sorted by key.
func (m *Message) toWire() ([]member, error) {
	if m == nil {
		return nil, errors.New("lmos message: nil message")
	}
	if !m.Type.Known() {
		if m.Type == "" {
			return nil, memberErr("messageType", ErrMissing)
		}
		return nil, invalid("messageType", "unknown message type %q", m.Type)
	}
	ms := make([]member, 0, 8+len(m.Extensions))
	var err error
	str := func(key, s string) {
		if s == "" || err != nil {
			return
		}
		if !utf8.ValidString(s) {
			err = invalid(key, "not valid UTF-8")
			return
		}
		ms = append(ms, member{key, s})
	}
	val := func(key string, v Value) {
		if v.Present() {
			ms = append(ms, member{key, v})
		}
	}
	flag := func(key string, b bool) {
		if b {
			ms = append(ms, member{key, true})
		}
	}
	str("thingID", m.ThingID)
	str("messageID", m.MessageID)
	str("messageType", string(m.Type))
	str("correlationID", m.CorrelationID)
	str(m.Type.NameMember(), m.Name)
	str("status", m.Status)
	str("reason", m.Reason)
	flag("stream", m.Stream)
	flag("oneWay", m.OneWay)
	val("input", m.Input)
	val("output", m.Output)
	val("data", m.Data)
	val("value", m.Value)
	str("type", m.ProblemType)
	str("title", m.Title)
	str("detail", m.Detail)
	str("instance", m.Instance)
	str("timestamp", m.Timestamp)
	str("traceparent", m.Traceparent)
	str("tracestate", m.Tracestate)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(m.Extensions))
	for k, v := range m.Extensions {
		if !v.Present() {
			continue
		}
		if knownMembers[k] {
			return nil, invalid(k, "extension member clashes with a known member")
		}
		if !utf8.ValidString(k) {
			return nil, invalid(k, "extension member name is not valid UTF-8")
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ms = append(ms, member{k, m.Extensions[k]})
	}
	return ms, nil
}

// fromWire builds a Message from a decoded top-level map. Members are
// visited in sorted order so that errors are deterministic.
func fromWire(obj object) (Message, error) {
	var m Message
	setBy := map[*string]string{} // field → the key that set it, for aliases
	setStr := func(dst *string, key string, v any) error {
		s, err := asString(key, v)
		if err != nil || s == "" {
			return err
		}
		if prev, ok := setBy[dst]; ok && *dst != s {
			return invalid(key, "%q conflicts with member %q = %q", s, prev, *dst)
		}
		*dst, setBy[dst] = s, key
		return nil
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := obj[k]
		var err error
		switch k {
		case "thingID", "thingId":
			err = setStr(&m.ThingID, k, v)
		case "messageID", "messageId":
			err = setStr(&m.MessageID, k, v)
		case "correlationID", "correlationId":
			err = setStr(&m.CorrelationID, k, v)
		case "name", "action", "event":
			err = setStr(&m.Name, k, v)
		case "messageType":
			var s string
			if s, err = asString(k, v); err == nil && s != "" {
				m.Type = MessageType(s)
				if !m.Type.Known() {
					err = invalid(k, "unknown message type %q", s)
				}
			}
		case "status":
			// RFC 7807 makes status a number, the LMOS spec a string:
			// accept an integer and keep the spec's form.
			if n, ok := v.(number); ok && n.isInt {
				m.Status = n.lit
			} else {
				m.Status, err = asString(k, v)
			}
		case "reason":
			m.Reason, err = asString(k, v)
		case "timestamp":
			m.Timestamp, err = asString(k, v)
		case "traceparent":
			m.Traceparent, err = asString(k, v)
		case "tracestate":
			m.Tracestate, err = asString(k, v)
		case "type":
			m.ProblemType, err = asString(k, v)
		case "title":
			m.Title, err = asString(k, v)
		case "detail":
			m.Detail, err = asString(k, v)
		case "instance":
			m.Instance, err = asString(k, v)
		case "stream":
			m.Stream, err = asBool(k, v)
		case "oneWay":
			m.OneWay, err = asBool(k, v)
		case "data":
			m.Data = valueOfTree(v)
		case "input":
			m.Input = valueOfTree(v)
		case "output":
			m.Output = valueOfTree(v)
		case "value":
			m.Value = valueOfTree(v)
		default:
			if m.Extensions == nil {
				m.Extensions = make(map[string]Value)
			}
			m.Extensions[k] = valueOfTree(v)
		}
		if err != nil {
			return Message{}, err
		}
	}
	if m.Type == "" {
		return Message{}, memberErr("messageType", ErrMissing)
	}
	return m, nil
}

// asString returns a string member; null counts as absent ("").
func asString(key string, v any) (string, error) {
	switch s := v.(type) {
	case string:
		return s, nil
	case nil:
		return "", nil
	}
	return "", invalid(key, "want a string, got %s", kindOf(v))
}

// asBool returns a boolean member; null counts as absent (false).
func asBool(key string, v any) (bool, error) {
	switch b := v.(type) {
	case bool:
		return b, nil
	case nil:
		return false, nil
	}
	return false, invalid(key, "want a boolean, got %s", kindOf(v))
}

// The decoded tree: nil, bool, string, number, []any and object.
type (
	// number is a JSON number as its canonical literal.
	number struct {
		lit   string
		isInt bool
	}
	// object is a JSON object; its keys are unique.
	object map[string]any
)

func kindOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case number:
		if v.isInt {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case object:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// pathError is an error inside a value; rev holds the path to it, innermost
// segment first.
type pathError struct {
	rev []string
	err error
}

func (e *pathError) Error() string {
	if len(e.rev) == 0 {
		return e.err.Error()
	}
	var b strings.Builder
	b.WriteString("at ")
	for i := len(e.rev) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(e.rev[i]))
	}
	b.WriteString(": ")
	b.WriteString(e.err.Error())
	return b.String()
}

func (e *pathError) Unwrap() error { return e.err }

// under adds the path segment seg in front of err's path.
func under(seg string, err error) error {
	var pe *pathError
	if errors.As(err, &pe) {
		pe.rev = append(pe.rev, seg)
		return pe
	}
	return &pathError{rev: []string{seg}, err: err}
}

// envelopeErr turns an error from parsing a whole message into one naming
// the top-level member it is in, when there is one.
func envelopeErr(err error) error {
	var pe *pathError
	if errors.As(err, &pe) && len(pe.rev) > 0 {
		n := len(pe.rev) - 1
		return memberErr(pe.rev[n], &pathError{rev: pe.rev[:n], err: pe.err})
	}
	return fmt.Errorf("lmos message: %w", err)
}

// parseJSON parses one JSON text into a tree, checking everything Value
// promises: valid UTF-8, unique object keys, numbers in range, nesting at
// most maxDepth.
func parseJSON(data []byte, maxDepth int) (any, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("invalid JSON: not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseJSONValue(dec, 0, maxDepth)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("invalid JSON: data after the value at offset %d", dec.InputOffset())
	}
	return v, nil
}

func parseJSONValue(dec *json.Decoder, depth, maxDepth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonSyntaxErr(err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth+1 > maxDepth {
			return nil, fmt.Errorf("nested deeper than %d levels", maxDepth)
		}
		switch t {
		case '{':
			obj := object{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, jsonSyntaxErr(err)
				}
				key, _ := kt.(string) // the decoder only gives strings here
				if _, dup := obj[key]; dup {
					return nil, under(key, errors.New("duplicate member"))
				}
				v, err := parseJSONValue(dec, depth+1, maxDepth)
				if err != nil {
					return nil, under(key, err)
				}
				obj[key] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, jsonSyntaxErr(err)
			}
			return obj, nil
		case '[':
			arr := []any{}
			for i := 0; dec.More(); i++ {
				v, err := parseJSONValue(dec, depth+1, maxDepth)
				if err != nil {
					return nil, under(strconv.Itoa(i), err)
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, jsonSyntaxErr(err)
			}
			return arr, nil
		}
		return nil, fmt.Errorf("invalid JSON: unexpected %q", t)
	case json.Number:
		return parseNumber(string(t))
	case string, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("invalid JSON: unexpected token %v", tok) // impossible
}

func jsonSyntaxErr(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at offset %d: %w", se.Offset, err)
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// parseNumber returns the canonical form of a JSON number literal.
func parseNumber(lit string) (number, error) {
	if !strings.ContainsAny(lit, ".eE") {
		digits := strings.TrimPrefix(lit, "-")
		if digits == "0" {
			return number{"0", true}, nil // -0 is no integer of its own
		}
		if len(digits) > maxIntDigits {
			return number{}, fmt.Errorf("integer %.20s… is beyond ±2^%d", lit, maxIntBits)
		}
		if len(digits) == maxIntDigits {
			n, ok := new(big.Int).SetString(digits, 10)
			if !ok || n.BitLen() > maxIntBits {
				return number{}, fmt.Errorf("integer %.20s… is beyond ±2^%d", lit, maxIntBits)
			}
		}
		return number{lit, true}, nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return number{}, fmt.Errorf("number %.40s is out of the range of a float64", lit)
	}
	return number{formatFloat(f), false}, nil
}

// formatFloat writes f like encoding/json (shortest round-trip digits,
// exponent form below 1e-6 and from 1e21) and always with a fraction or an
// exponent, so it reads back as a float.
func formatFloat(f float64) string {
	abs := math.Abs(f)
	fmtc := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmtc = 'e'
	}
	b := strconv.AppendFloat(nil, f, fmtc, -1, 64)
	if fmtc == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	if !bytes.ContainsAny(b, ".e") {
		b = append(b, ".0"...)
	}
	return string(b)
}

func valueOfTree(tree any) Value { return Value{raw: appendCanon(nil, tree)} }

// appendCanon appends the canonical JSON text of a tree.
func appendCanon(buf []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(buf, "null"...)
	case bool:
		return strconv.AppendBool(buf, v)
	case string:
		return appendString(buf, v)
	case number:
		return append(buf, v.lit...)
	case []any:
		buf = append(buf, '[')
		for i, e := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendCanon(buf, e)
		}
		return append(buf, ']')
	case object:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, k)
			buf = append(buf, ':')
			buf = appendCanon(buf, v[k])
		}
		return append(buf, '}')
	}
	panic(fmt.Sprintf("proto: appendCanon: unexpected %T", v)) // impossible: trees hold only the types above
}

// appendString appends s (valid UTF-8) as a JSON string, escaping only
// '"', '\\' and control characters.
func appendString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[start:i]...)
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\b':
			buf = append(buf, '\\', 'b')
		case '\f':
			buf = append(buf, '\\', 'f')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// cborItem converts a tree to the Go values the CBOR encoder writes as the
// same data item: integers as int64, uint64 or *big.Int (bignum beyond 64
// bits), floats as float64.
func cborItem(v any) any {
	switch v := v.(type) {
	case number:
		if !v.isInt {
			f, _ := strconv.ParseFloat(v.lit, 64) // canonical: never fails
			return f
		}
		if i, err := strconv.ParseInt(v.lit, 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(v.lit, 10, 64); err == nil {
			return u
		}
		n, _ := new(big.Int).SetString(v.lit, 10) // canonical: never fails
		return n
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = cborItem(e)
		}
		return out
	case object:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = cborItem(e)
		}
		return out
	}
	return v // nil, bool, string
}

// fromCBOR converts a decoded CBOR data item to a tree, rejecting what
// JSON cannot carry.
func fromCBOR(v any, depth int) (any, error) {
	switch v := v.(type) {
	case nil, bool, string:
		return v, nil
	case uint64:
		return number{strconv.FormatUint(v, 10), true}, nil
	case int64:
		return number{strconv.FormatInt(v, 10), true}, nil
	case big.Int:
		if v.CmpAbs(big.NewInt(0)) != 0 && new(big.Int).Abs(&v).BitLen() > maxIntBits {
			return nil, fmt.Errorf("integer is beyond ±2^%d", maxIntBits)
		}
		return number{v.String(), true}, nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("float %v has no JSON form", v)
		}
		return number{formatFloat(v), false}, nil
	case []any:
		if depth+1 > MaxDepth {
			return nil, fmt.Errorf("nested deeper than %d levels", MaxDepth)
		}
		arr := make([]any, len(v))
		for i, e := range v {
			t, err := fromCBOR(e, depth+1)
			if err != nil {
				return nil, under(strconv.Itoa(i), err)
			}
			arr[i] = t
		}
		return arr, nil
	case map[any]any:
		if depth+1 > MaxDepth {
			return nil, fmt.Errorf("nested deeper than %d levels", MaxDepth)
		}
		obj := make(object, len(v))
		for k, e := range v {
			key, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("map key %v is %s, not a text string", k, cborKind(k))
			}
			t, err := fromCBOR(e, depth+1)
			if err != nil {
				return nil, under(key, err)
			}
			obj[key] = t
		}
		return obj, nil
	}
	return nil, fmt.Errorf("%s has no JSON form", cborKind(v))
}

// cborKind names a decoded CBOR data item for error messages.
func cborKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a text string"
	case uint64, int64, big.Int:
		return "an integer"
	case float64:
		return "a float"
	case []byte:
		return "a byte string"
	case []any:
		return "an array"
	case map[any]any:
		return "a map"
	case cbor.Tag:
		return fmt.Sprintf("tag %d", v.Number)
	case cbor.SimpleValue:
		return fmt.Sprintf("simple value %d", v)
	}
	return fmt.Sprintf("a tagged item (%T)", v) // e.g. time.Time from tag 0/1
}
