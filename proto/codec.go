package proto

// JSON and CBOR codecs of the message envelope.
//
// Both codecs carry the same model: a map with the same text keys. Decoding
// goes bytes → tree → Message (fromWire) — the JSON codec reads ordinary
// messages straight into a Message (decodeJSONDirect) and leaves the rest
// to the tree —, encoding Message → members in wire order (visitWire) →
// bytes, and the tree → Message step is shared, so the two
// codecs accept and reject exactly the same messages. Payloads (Value) are
// canonical JSON text; the CBOR codec converts them to and from CBOR data
// items by walking the tree.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"mime"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
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
	// one allocation for most messages: the size first, then the text
	var size jsonSize = 2
	if err := m.visitWire(&size); err != nil {
		return nil, err
	}
	w := jsonWriter{buf: make([]byte, 0, int(size)+int(size)/16)}
	w.buf = append(w.buf, '{')
	_ = m.visitWire(&w) // checked above
	w.buf = append(w.buf, '}')
	if len(w.buf) > MaxMessageSize {
		return nil, fmt.Errorf("lmos message: %w", ErrTooLarge)
	}
	return w.buf, nil
}

func (jsonCodec) Unmarshal(data []byte, m *Message) error {
	if len(data) > MaxMessageSize {
		return fmt.Errorf("lmos message: %w", ErrTooLarge)
	}
	if decodeJSONDirect(data, m) {
		return nil
	}
	return decodeJSONTree(data, m)
}

// decodeJSONTree decodes a JSON message through a tree (parseJSONTree,
// fromWire): every message the direct decoder leaves to it, with a
// deterministic error for those it rejects.
func decodeJSONTree(data []byte, m *Message) error {
	tree, err := parseJSONTree(data, MaxDepth+1)
	if err != nil {
		return envelopeErr(err)
	}
	obj, ok := tree.(jsonObject)
	if !ok {
		return fmt.Errorf("lmos message: want a JSON object, got %s", treeKind(tree))
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
	w := wireMap{m: make(map[string]any, 12)}
	if err := m.visitWire(&w); err != nil {
		return nil, err
	}
	if w.err != nil {
		return nil, w.err
	}
	wire := w.m
	b, err := msgCBOREnc.Marshal(wire)
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
	if err := msgCBORDec.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("lmos message: invalid CBOR: %w", err)
	}
	top, ok := raw.(map[any]any)
	if !ok {
		return fmt.Errorf("lmos message: want a CBOR map, got %s", cborKind(raw))
	}
	keys, err := cborKeys(top)
	if err != nil {
		return fmt.Errorf("lmos message: %w", err)
	}
	obj := make(jsonObject, len(top))
	for _, key := range keys {
		tree, err := fromCBOR(top[key], 0)
		if err != nil {
			return newMemberError(key, err)
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

// MarshalCBOR encodes v as the CBOR data item of its JSON value, as the
// CBOR codec writes a payload member (integers beyond 64 bits as bignums,
// floats as floats, maps with text keys); an absent Value encodes as null.
func (v Value) MarshalCBOR() ([]byte, error) {
	if v.raw == nil {
		return []byte{0xf6}, nil // null
	}
	tree, err := parseJSONTree(v.raw, MaxDepth)
	if err != nil { // impossible: v.raw is canonical JSON
		return nil, fmt.Errorf("lmos value: %w", err)
	}
	b, err := msgCBOREnc.Marshal(cborItemOf(tree))
	if err != nil {
		return nil, fmt.Errorf("lmos value: cbor: %w", err)
	}
	return b, nil
}

// UnmarshalCBOR sets v to the JSON value of the CBOR data item b, with the
// CBOR codec's rules for payload members: what JSON cannot carry (byte
// strings, tags other than bignums, undefined, NaN, non-text map keys) is
// rejected, and so are trailing bytes.
func (v *Value) UnmarshalCBOR(b []byte) error {
	if len(b) > MaxMessageSize {
		return fmt.Errorf("lmos value: %w", ErrTooLarge)
	}
	var raw any
	if err := msgCBORDec.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("lmos value: invalid CBOR: %w", err)
	}
	tree, err := fromCBOR(raw, 0)
	if err != nil {
		return fmt.Errorf("lmos value: %w", err)
	}
	*v = valueOfTree(tree)
	return nil
}

var msgCBOREnc, msgCBORDec = msgCBORModes()

func msgCBORModes() (cbor.EncMode, cbor.DecMode) {
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
		// +3: a self-described CBOR tag, the envelope map, and a bignum
		// tag around the deepest integer; fromCBOR enforces MaxDepth.
		MaxNestedLevels:  MaxDepth + 3,
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

// envelopeMembers are the wire names (and accepted aliases) of Message's
// fields; no extension may use them.
var envelopeMembers = map[string]bool{
	"thingID": true, "thingId": true, "messageID": true, "messageId": true,
	"messageType": true, "correlationID": true, "correlationId": true,
	"name": true, "action": true, "event": true,
	"data": true, "input": true, "output": true, "value": true,
	"status": true, "reason": true, "timestamp": true,
	"traceparent": true, "tracestate": true,
	"type": true, "title": true, "detail": true, "instance": true,
	"stream": true, "oneWay": true,
}

// wireSink receives a message's members in wire order (visitWire).
type wireSink interface {
	str(key, s string)
	flag(key string)
	value(key string, v Value)
}

// visitWire passes m's members to sink in wire order: the common members,
// the affordance name, the type-specific ones, trace context, then
// extensions sorted by key. It checks the message first, so that a sink
// sees only a message that encodes.
func (m *Message) visitWire(sink wireSink) error {
	if m == nil {
		return errors.New("lmos message: nil message")
	}
	if !m.Type.Known() {
		if m.Type == "" {
			return newMemberError("messageType", ErrMissingMember)
		}
		return invalidMember("messageType", "unknown message type %q", m.Type)
	}
	nameKey := m.Type.NameMember()
	for _, f := range [...]struct{ key, s string }{
		{"thingID", m.ThingID}, {"messageID", m.MessageID}, {"correlationID", m.CorrelationID},
		{nameKey, m.Name}, {"status", m.Status}, {"reason", m.Reason},
		{"type", m.ProblemType}, {"title", m.Title}, {"detail", m.Detail}, {"instance", m.Instance},
		{"timestamp", m.Timestamp}, {"traceparent", m.Traceparent}, {"tracestate", m.Tracestate},
	} {
		if !utf8.ValidString(f.s) {
			return invalidMember(f.key, "not valid UTF-8")
		}
	}
	var keyBuf [4]string
	keys := keyBuf[:0]
	for k, v := range m.Extensions {
		if !v.Present() {
			continue
		}
		if envelopeMembers[k] {
			return invalidMember(k, "extension member clashes with a known member")
		}
		if !utf8.ValidString(k) {
			return invalidMember(k, "extension member name is not valid UTF-8")
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)

	str := func(key, s string) {
		if s != "" {
			sink.str(key, s)
		}
	}
	val := func(key string, v Value) {
		if v.Present() {
			sink.value(key, v)
		}
	}
	str("thingID", m.ThingID)
	str("messageID", m.MessageID)
	str("messageType", string(m.Type))
	str("correlationID", m.CorrelationID)
	str(nameKey, m.Name)
	str("status", m.Status)
	str("reason", m.Reason)
	if m.Stream {
		sink.flag("stream")
	}
	if m.OneWay {
		sink.flag("oneWay")
	}
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
	for _, k := range keys {
		sink.value(k, m.Extensions[k])
	}
	return nil
}

// jsonSize is a wireSink that adds up the JSON text's size: the members'
// lengths plus room for quotes and separators (escapes are rare).
type jsonSize int

func (n *jsonSize) str(key, s string)         { *n += jsonSize(len(key) + len(s) + 6) }
func (n *jsonSize) flag(key string)           { *n += jsonSize(len(key) + 8) }
func (n *jsonSize) value(key string, v Value) { *n += jsonSize(len(key) + len(v.raw) + 4) }

// jsonWriter is a wireSink that appends the members to a JSON object.
type jsonWriter struct{ buf []byte }

func (w *jsonWriter) key(key string) {
	if len(w.buf) > 1 {
		w.buf = append(w.buf, ',')
	}
	w.buf = appendJSONString(w.buf, key)
	w.buf = append(w.buf, ':')
}

func (w *jsonWriter) str(key, s string) {
	w.key(key)
	w.buf = appendJSONString(w.buf, s)
}

func (w *jsonWriter) flag(key string) {
	w.key(key)
	w.buf = append(w.buf, "true"...)
}

func (w *jsonWriter) value(key string, v Value) {
	w.key(key)
	w.buf = append(w.buf, v.raw...)
}

// wireMap is a wireSink that collects the members as the CBOR encoder's
// map: payloads as CBOR items (cborItemOf).
type wireMap struct {
	m   map[string]any
	err error
}

func (w *wireMap) str(key, s string) { w.m[key] = s }
func (w *wireMap) flag(key string)   { w.m[key] = true }
func (w *wireMap) value(key string, v Value) {
	tree, err := parseJSONTree(v.raw, MaxDepth)
	if err != nil { // impossible: v.raw is canonical JSON
		if w.err == nil {
			w.err = newMemberError(key, err)
		}
		return
	}
	w.m[key] = cborItemOf(tree)
}

// fromWire builds a Message from a decoded top-level map. Members are
// visited in sorted order so that errors are deterministic.
func fromWire(obj jsonObject) (Message, error) {
	var m Message
	// the key that set each aliased field (thingID, messageID,
	// correlationID, name), to report conflicting aliases
	var setBy [4]string
	setStr := func(field int, dst *string, key string, v any) error {
		s, err := wireString(key, v)
		if err != nil || s == "" {
			return err
		}
		if prev := setBy[field]; prev != "" && *dst != s {
			return invalidMember(key, "%q conflicts with member %q = %q", s, prev, *dst)
		}
		*dst, setBy[field] = s, key
		return nil
	}
	var keyBuf [24]string // the members of any ordinary message
	keys := keyBuf[:0]
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := obj[k]
		var err error
		switch k {
		case "thingID", "thingId":
			err = setStr(0, &m.ThingID, k, v)
		case "messageID", "messageId":
			err = setStr(1, &m.MessageID, k, v)
		case "correlationID", "correlationId":
			err = setStr(2, &m.CorrelationID, k, v)
		case "name", "action", "event":
			err = setStr(3, &m.Name, k, v)
		case "messageType":
			var s string
			if s, err = wireString(k, v); err == nil && s != "" {
				m.Type = MessageType(s)
				if !m.Type.Known() {
					err = invalidMember(k, "unknown message type %q", s)
				}
			}
		case "status":
			// RFC 7807 makes status a number, the LMOS spec a string:
			// accept an integer and keep the spec's form.
			if n, ok := v.(jsonNumber); ok && n.isInt {
				m.Status = n.lit
			} else {
				m.Status, err = wireString(k, v)
			}
		case "reason", "timestamp", "traceparent", "tracestate", "type", "title", "detail", "instance":
			*m.plainStringMember(k), err = wireString(k, v)
		case "stream":
			m.Stream, err = wireBool(k, v)
		case "oneWay":
			m.OneWay, err = wireBool(k, v)
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
		return Message{}, newMemberError("messageType", ErrMissingMember)
	}
	return m, nil
}

// plainStringMember returns the field of the string member key, for the
// members with one name and no other form: reason, timestamp, trace
// context and the problem members.
func (m *Message) plainStringMember(key string) *string {
	switch key {
	case "reason":
		return &m.Reason
	case "timestamp":
		return &m.Timestamp
	case "traceparent":
		return &m.Traceparent
	case "tracestate":
		return &m.Tracestate
	case "type":
		return &m.ProblemType
	case "title":
		return &m.Title
	case "detail":
		return &m.Detail
	case "instance":
		return &m.Instance
	}
	return nil
}

// wireString returns a string member; null counts as absent ("").
func wireString(key string, v any) (string, error) {
	switch s := v.(type) {
	case string:
		return s, nil
	case nil:
		return "", nil
	}
	return "", invalidMember(key, "want a string, got %s", treeKind(v))
}

// wireBool returns a boolean member; null counts as absent (false).
func wireBool(key string, v any) (bool, error) {
	switch b := v.(type) {
	case bool:
		return b, nil
	case nil:
		return false, nil
	}
	return false, invalidMember(key, "want a boolean, got %s", treeKind(v))
}

// The decoded tree: nil, bool, string, jsonNumber, []any and jsonObject.
type (
	// jsonNumber is a JSON number as its canonical literal.
	jsonNumber struct {
		lit   string
		isInt bool
	}
	// jsonObject is a JSON object; its keys are unique.
	jsonObject map[string]any
)

func treeKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case jsonNumber:
		if v.isInt {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case jsonObject:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// valuePathError is an error inside a value; rev holds the path to it, innermost
// segment first.
type valuePathError struct {
	rev []string
	err error
}

func (e *valuePathError) Error() string {
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

func (e *valuePathError) Unwrap() error { return e.err }

// underPath adds the path segment seg in front of err's path.
func underPath(seg string, err error) error {
	var pe *valuePathError
	if errors.As(err, &pe) {
		pe.rev = append(pe.rev, seg)
		return pe
	}
	return &valuePathError{rev: []string{seg}, err: err}
}

// envelopeErr turns an error from parsing a whole message into one naming
// the top-level member it is in, when there is one.
func envelopeErr(err error) error {
	var pe *valuePathError
	if errors.As(err, &pe) && len(pe.rev) > 0 {
		n := len(pe.rev) - 1
		return newMemberError(pe.rev[n], &valuePathError{rev: pe.rev[:n], err: pe.err})
	}
	return fmt.Errorf("lmos message: %w", err)
}

// parseJSONTree parses one JSON text (RFC 8259) into a tree, checking
// everything Value promises: valid UTF-8, unique object keys, numbers in
// range, nesting at most maxDepth. Escaped lone surrogates become U+FFFD,
// as encoding/json does.
func parseJSONTree(data []byte, maxDepth int) (any, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("invalid JSON: not valid UTF-8")
	}
	p := &jsonParser{data: data, maxDepth: maxDepth}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(data) {
		return nil, fmt.Errorf("invalid JSON: data after the value at offset %d", p.pos)
	}
	return v, nil
}

// jsonParser is a recursive-descent JSON parser over a byte slice.
type jsonParser struct {
	data     []byte
	pos      int
	maxDepth int
}

func (p *jsonParser) errorf(format string, args ...any) error {
	if p.pos >= len(p.data) {
		return fmt.Errorf("invalid JSON: %w", io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("invalid JSON at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// peek returns the next byte, or 0 at the end of the input.
func (p *jsonParser) peek() byte {
	if p.pos < len(p.data) {
		return p.data[p.pos]
	}
	return 0
}

func (p *jsonParser) value(depth int) (any, error) {
	switch c := p.peek(); {
	case c == '{':
		return p.jsonObject(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.string()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, p.errorf("unexpected character %q", c)
	}
}

func (p *jsonParser) literal(lit string) error {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(lit)) {
		return p.errorf("invalid literal, want %s", lit)
	}
	p.pos += len(lit)
	return nil
}

func (p *jsonParser) jsonObject(depth int) (any, error) {
	if depth+1 > p.maxDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", p.maxDepth)
	}
	p.pos++ // {
	obj := jsonObject{}
	p.skipSpace()
	if p.peek() == '}' {
		p.pos++
		return obj, nil
	}
	for {
		p.skipSpace()
		if p.peek() != '"' {
			return nil, p.errorf("want a member name")
		}
		key, err := p.string()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.peek() != ':' {
			return nil, underPath(key, p.errorf("want ':' after the member name"))
		}
		p.pos++
		p.skipSpace()
		if _, dup := obj[key]; dup {
			return nil, underPath(key, errors.New("duplicate member"))
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, underPath(key, err)
		}
		obj[key] = v
		p.skipSpace()
		switch p.peek() {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return obj, nil
		default:
			return nil, p.errorf("want ',' or '}' after member %q", key)
		}
	}
}

func (p *jsonParser) array(depth int) (any, error) {
	if depth+1 > p.maxDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", p.maxDepth)
	}
	p.pos++ // [
	arr := []any{}
	p.skipSpace()
	if p.peek() == ']' {
		p.pos++
		return arr, nil
	}
	for {
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, underPath(strconv.Itoa(len(arr)), err)
		}
		arr = append(arr, v)
		p.skipSpace()
		switch p.peek() {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return arr, nil
		default:
			return nil, p.errorf("want ',' or ']' after an array element")
		}
	}
}

func (p *jsonParser) string() (string, error) {
	p.pos++ // "
	start := p.pos
	for p.pos < len(p.data) { // fast path: no escapes
		c := p.data[p.pos]
		if c == '"' {
			p.pos++
			return string(p.data[start : p.pos-1]), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.errorf("control character in a string")
		}
		p.pos++
	}
	buf := append([]byte(nil), p.data[start:p.pos]...)
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(buf), nil
		case c < 0x20:
			return "", p.errorf("control character in a string")
		case c != '\\':
			buf = append(buf, c)
			p.pos++
			continue
		}
		p.pos++ // backslash
		e := p.peek()
		p.pos++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4(p.pos)
			if !ok {
				p.pos--
				return "", p.errorf("invalid \\u escape")
			}
			p.pos += 4
			if utf16.IsSurrogate(r) {
				// A high surrogate followed by an escaped low one is one
				// character; any other surrogate is U+FFFD.
				r2, ok := p.hex4(p.pos + 2)
				if ok && r < 0xdc00 && p.peek() == '\\' && p.data[p.pos+1] == 'u' && r2 >= 0xdc00 && r2 < 0xe000 {
					r = utf16.DecodeRune(r, r2)
					p.pos += 6
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			p.pos--
			return "", p.errorf("invalid escape character %q", e)
		}
	}
	return "", p.errorf("unterminated string")
}

// hex4 decodes the four hex digits at data[i:].
func (p *jsonParser) hex4(i int) (rune, bool) {
	if i < 0 || i+4 > len(p.data) {
		return 0, false
	}
	var r rune
	for _, c := range p.data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number scans -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *jsonParser) number() (any, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.peek() == '-' {
		p.pos++
	}
	switch c := p.peek(); {
	case c == '0':
		p.pos++
	case c >= '1' && c <= '9':
		digits()
	default:
		return nil, p.errorf("invalid number")
	}
	if p.peek() == '.' {
		p.pos++
		if digits() == 0 {
			return nil, p.errorf("invalid number: no digits after '.'")
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.pos++
		if c := p.peek(); c == '+' || c == '-' {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errorf("invalid number: no digits in the exponent")
		}
	}
	return parseJSONNumber(string(p.data[start:p.pos]))
}

// parseJSONNumber returns the canonical form of a JSON number literal.
func parseJSONNumber(lit string) (jsonNumber, error) {
	if !strings.ContainsAny(lit, ".eE") {
		digits := strings.TrimPrefix(lit, "-")
		if digits == "0" {
			return jsonNumber{"0", true}, nil // -0 is no integer of its own
		}
		if len(digits) > maxIntDigits {
			return jsonNumber{}, fmt.Errorf("integer %.20s… is beyond ±2^%d", lit, maxIntBits)
		}
		if len(digits) == maxIntDigits {
			n, ok := new(big.Int).SetString(digits, 10)
			if !ok || n.BitLen() > maxIntBits {
				return jsonNumber{}, fmt.Errorf("integer %.20s… is beyond ±2^%d", lit, maxIntBits)
			}
		}
		return jsonNumber{lit, true}, nil
	}
	if canonicalFixed(lit) {
		return jsonNumber{lit, false}, nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return jsonNumber{}, fmt.Errorf("number %.40s is out of the range of a float64", lit)
	}
	return jsonNumber{formatJSONFloat(f), false}, nil
}

// canonicalFixed reports whether lit, a JSON number literal with a
// fraction, is already what formatJSONFloat writes for its value, without
// parsing it: no exponent, no trailing zero in the fraction, at least
// 1e-6 in magnitude and at most 15 significant digits (every such decimal
// is the shortest one that reads back as its float64).
func canonicalFixed(lit string) bool {
	s := strings.TrimPrefix(lit, "-")
	dot := strings.IndexByte(s, '.')
	if dot <= 0 || s[len(s)-1] == '0' || strings.ContainsAny(s, "eE") {
		return false
	}
	intPart, frac := s[:dot], s[dot+1:]
	sig := len(intPart) + len(frac)
	if intPart == "0" {
		zeros := len(frac) - len(strings.TrimLeft(frac, "0"))
		if zeros >= 6 {
			return false // below 1e-6: the exponent form
		}
		sig = len(frac) - zeros
	}
	return sig <= 15
}

// formatJSONFloat writes f like encoding/json (shortest round-trip digits,
// exponent form below 1e-6 and from 1e21) and always with a fraction or an
// exponent, so it reads back as a float.
func formatJSONFloat(f float64) string {
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

func valueOfTree(tree any) Value { return Value{raw: appendCanonJSON(nil, tree)} }

// appendCanonJSON appends the canonical JSON text of a tree.
func appendCanonJSON(buf []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(buf, "null"...)
	case bool:
		return strconv.AppendBool(buf, v)
	case string:
		return appendJSONString(buf, v)
	case jsonNumber:
		return append(buf, v.lit...)
	case []any:
		buf = append(buf, '[')
		for i, e := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendCanonJSON(buf, e)
		}
		return append(buf, ']')
	case jsonObject:
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
			buf = appendJSONString(buf, k)
			buf = append(buf, ':')
			buf = appendCanonJSON(buf, v[k])
		}
		return append(buf, '}')
	}
	panic(fmt.Sprintf("proto: appendCanon: unexpected %T", v)) // impossible: trees hold only the types above
}

// appendJSONString appends s (valid UTF-8) as a JSON string, escaping only
// '"', '\\' and control characters.
func appendJSONString(buf []byte, s string) []byte {
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

// cborItemOf converts a tree to the Go values the CBOR encoder writes as the
// same data item: integers as int64, uint64 or *big.Int (bignum beyond 64
// bits), floats as float64.
func cborItemOf(v any) any {
	switch v := v.(type) {
	case jsonNumber:
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
			out[i] = cborItemOf(e)
		}
		return out
	case jsonObject:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = cborItemOf(e)
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
		return jsonNumber{strconv.FormatUint(v, 10), true}, nil
	case int64:
		return jsonNumber{strconv.FormatInt(v, 10), true}, nil
	case big.Int:
		if v.CmpAbs(big.NewInt(0)) != 0 && new(big.Int).Abs(&v).BitLen() > maxIntBits {
			return nil, fmt.Errorf("integer is beyond ±2^%d", maxIntBits)
		}
		return jsonNumber{v.String(), true}, nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("float %v has no JSON form", v)
		}
		return jsonNumber{formatJSONFloat(v), false}, nil
	case []any:
		if depth+1 > MaxDepth {
			return nil, fmt.Errorf("nested deeper than %d levels", MaxDepth)
		}
		arr := make([]any, len(v))
		for i, e := range v {
			t, err := fromCBOR(e, depth+1)
			if err != nil {
				return nil, underPath(strconv.Itoa(i), err)
			}
			arr[i] = t
		}
		return arr, nil
	case map[any]any:
		if depth+1 > MaxDepth {
			return nil, fmt.Errorf("nested deeper than %d levels", MaxDepth)
		}
		keys, err := cborKeys(v)
		if err != nil {
			return nil, err
		}
		obj := make(jsonObject, len(v))
		for _, key := range keys {
			t, err := fromCBOR(v[key], depth+1)
			if err != nil {
				return nil, underPath(key, err)
			}
			obj[key] = t
		}
		return obj, nil
	}
	return nil, fmt.Errorf("%s has no JSON form", cborKind(v))
}

// cborKeys returns the keys of a decoded CBOR map, which must all be text
// strings, sorted so that errors about the members come in a fixed order.
func cborKeys(m map[any]any) ([]string, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		key, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("CBOR map key %v is %s, not a text string", k, cborKind(k))
		}
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys, nil
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
