package proto

// The LMOS message envelope (spec/lmos/10-communication_protocol.md).
//
// One Message type carries every LMOS message type; every transport (libp2p
// streams, WebSocket "lmosprotocol", HTTP, MQTT) carries it unchanged, as
// JSON or as CBOR (codec.go), framed on streams by frame.go.
//
// lmosnode's extension for one-way messages and streaming sessions is
// described on MessageType.

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// MessageType is the value of the messageType member.
//
// lmosnode extensions. The spec's message table covers request-reply, one
// request-multiple responses, event notification and publish-subscribe.
// The LMOS requirements also ask for one-way messages and
// request-stream/response-stream sessions, which the table has no message
// for. lmosnode adds the smallest extension that carries them, in the
// spirit of the lmos vocabulary additions: two message types, two boolean
// members and two action status values.
//
//	messageType "streamInput"   consumer → Thing: one more input chunk of a session
//	messageType "streamEnd"     consumer → Thing: no more input (half-close)
//	"stream": true              on invokeAction: open a session;
//	                            on actionStatus: a message of an accepted session
//	"oneWay": true              on a consumer → Thing message: the sender reads no reply
//	status "running"            actionStatus: the action runs (the spec's "in progress");
//	                            in a session, output is the next output chunk
//	status "cancelled"          actionStatus: the action was cancelled (answer to cancelAction)
//
// A streaming session (a chat agent streaming tokens while the consumer
// streams more input):
//
//	consumer → Thing  invokeAction {action, stream: true, input?}
//	Thing → consumer  actionStatus {action, stream: true, status: "running", output?: <chunk>}  (any number)
//	consumer → Thing  streamInput  {action, correlationID, input: <chunk>}                      (any number)
//	consumer → Thing  streamEnd    {action, correlationID}
//	Thing → consumer  actionStatus {action, stream: true, status: "completed"|"failed"|"cancelled", output?}
//
// The session is named by the invokeAction's correlationID, or its
// messageID when it has none (what Reply does); every later message of the
// session carries it as correlationID. The Thing accepts the session by
// marking its actionStatus messages with "stream": true; the consumer sends
// streamInput only after the first of them. A Thing that does not know the
// extension ignores "stream" and answers with unmarked actionStatus
// messages: the invocation is then an ordinary one, ended by its final
// status. Output chunks of a session are deltas, not the output
// accumulated so far. Either side may end a session early: the consumer
// with cancelAction, the Thing with an error or a final actionStatus (see
// EndsAction), after which the consumer sends nothing more. Chunks carry
// no sequence number, so a session needs an ordered transport (a libp2p
// stream, a WebSocket), which is what lmosnode uses for them.
//
// "oneWay" gives the one-way (fire-and-forget) pattern: the Thing, and
// every node that relays the message, SHOULD NOT send a reply, errors
// included, and a relay may close its stream as soon as the message is
// forwarded.
type MessageType string

// Message types of the LMOS spec table, the two its examples use
// (propertyReadings, event), and lmosnode's streaming extension (see
// MessageType).
const (
	MsgInvokeAction            MessageType = "invokeAction"
	MsgCancelAction            MessageType = "cancelAction"
	MsgQueryAction             MessageType = "queryAction"
	MsgActionStatus            MessageType = "actionStatus"
	MsgSubscribeEvent          MessageType = "subscribeEvent"
	MsgUnsubscribeEvent        MessageType = "unsubscribeEvent"
	MsgSubscribeAllEvents      MessageType = "subscribeAllEvents"
	MsgUnsubscribeAllEvents    MessageType = "unsubscribeAllEvents"
	MsgEvent                   MessageType = "event"
	MsgReadProperty            MessageType = "readProperty"
	MsgPropertyReading         MessageType = "propertyReading"
	MsgPropertyReadings        MessageType = "propertyReadings"
	MsgWriteProperty           MessageType = "writeProperty"
	MsgWriteMultipleProperties MessageType = "writeMultipleProperties"
	MsgObserveProperty         MessageType = "observeProperty"
	MsgUnobserveProperty       MessageType = "unobserveProperty"
	MsgError                   MessageType = "error"

	// MsgStreamInput carries one more input chunk of a streaming session
	// (lmosnode extension).
	MsgStreamInput MessageType = "streamInput"
	// MsgStreamEnd tells the Thing that the consumer sends no more input in
	// a streaming session (lmosnode extension).
	MsgStreamEnd MessageType = "streamEnd"
)

// Action status values of an actionStatus message's status member. The spec
// names pending, completed and failed and speaks of "in progress";
// ActionRunning and ActionCancelled are lmosnode's names for the other two
// states.
const (
	ActionPending   = "pending"
	ActionRunning   = "running"
	ActionCompleted = "completed"
	ActionFailed    = "failed"
	ActionCancelled = "cancelled"
)

// msgTypeInfo is what the spec says about one message type.
type msgTypeInfo struct {
	// nameKey is the wire member of the affordance name: "name" for
	// property messages, "action" for action messages, "event" for event
	// messages. Types without an affordance use "name".
	nameKey string
	// required lists the members the spec makes mandatory besides thingID,
	// messageID and messageType, by wire name.
	required []string
	// fromThing is true for Thing → consumer messages.
	fromThing bool
}

var msgTypes = map[MessageType]msgTypeInfo{
	MsgInvokeAction:            {nameKey: "action", required: []string{"action"}},
	MsgCancelAction:            {nameKey: "action", required: []string{"action"}},
	MsgQueryAction:             {nameKey: "action", required: []string{"action"}},
	MsgActionStatus:            {nameKey: "action", required: []string{"action", "status"}, fromThing: true},
	MsgStreamInput:             {nameKey: "action", required: []string{"action", "correlationID", "input"}},
	MsgStreamEnd:               {nameKey: "action", required: []string{"action", "correlationID"}},
	MsgSubscribeEvent:          {nameKey: "event", required: []string{"event"}},
	MsgUnsubscribeEvent:        {nameKey: "event", required: []string{"event"}},
	MsgSubscribeAllEvents:      {nameKey: "name"},
	MsgUnsubscribeAllEvents:    {nameKey: "name"},
	MsgEvent:                   {nameKey: "event", required: []string{"event", "correlationID", "data", "timestamp"}, fromThing: true},
	MsgReadProperty:            {nameKey: "name", required: []string{"name"}},
	MsgPropertyReading:         {nameKey: "name", required: []string{"name", "value", "timestamp"}, fromThing: true},
	MsgPropertyReadings:        {nameKey: "name", required: []string{"data", "timestamp"}, fromThing: true},
	MsgWriteProperty:           {nameKey: "name", required: []string{"name", "data"}},
	MsgWriteMultipleProperties: {nameKey: "name", required: []string{"data"}},
	MsgObserveProperty:         {nameKey: "name", required: []string{"name"}},
	MsgUnobserveProperty:       {nameKey: "name", required: []string{"name"}},
	MsgError:                   {nameKey: "name", required: []string{"type", "title", "status", "detail", "instance"}, fromThing: true},
}

// Known reports whether t is a message type of the spec or of lmosnode's
// extension.
func (t MessageType) Known() bool {
	_, ok := msgTypes[t]
	return ok
}

// NameMember returns the wire member that carries the affordance name in a
// message of type t: "action", "event" or "name".
func (t MessageType) NameMember() string {
	if ti, ok := msgTypes[t]; ok {
		return ti.nameKey
	}
	return "name"
}

// Message is one LMOS message of any type. Members that are absent on the
// wire are zero: "" for strings, false for flags, the zero Value for
// payloads (a JSON null payload is the non-zero Null). An empty string is
// therefore never sent; a member received as "" or null is absent.
//
// A Message is a plain value without locks; Clone gives a copy that shares
// nothing mutable.
type Message struct {
	ThingID       string      // thingID: the Thing's id (a URI)
	MessageID     string      // messageID: a UUID, fresh for every message
	Type          MessageType // messageType
	CorrelationID string      // correlationID: shared by the messages of one operation

	// Name is the affordance name: on the wire "name" for property
	// messages, "action" for action messages and "event" for event
	// messages (see MessageType.NameMember).
	Name string

	Data   Value // data: writeProperty, writeMultipleProperties, propertyReadings, event
	Input  Value // input: invokeAction, streamInput
	Output Value // output: actionStatus
	Value  Value // value: propertyReading

	// Status is an actionStatus's status (ActionPending, …) or an error's
	// RFC 7807 status code as a decimal string ("500").
	Status    string
	Reason    string // reason: cancelAction
	Timestamp string // timestamp: RFC 9557 date-time, kept as received (see ParseTimestamp)

	Traceparent string // traceparent: W3C Trace Context
	Tracestate  string // tracestate: W3C Trace Context

	// RFC 7807 members of an error message. Status holds its status.
	ProblemType string // type: URI reference of the error type
	Title       string // title
	Detail      string // detail
	Instance    string // instance: URI reference of this occurrence

	// Stream opens a streaming session on invokeAction and marks the
	// actionStatus messages of an accepted session (extension member
	// "stream", see MessageType).
	Stream bool
	// OneWay marks a consumer → Thing message whose sender reads no reply
	// (extension member "oneWay").
	OneWay bool

	// Extensions holds every member this package does not know, keyed by
	// its wire name, so that a relay passes it on unchanged. On an error
	// message these are the RFC 7807 extension members. Keys must not be
	// the wire name (or accepted alias) of a known member.
	Extensions map[string]Value
}

// NewMessage returns a message of type typ for the Thing thingID with a
// fresh UUIDv4 messageID.
func NewMessage(thingID string, typ MessageType) *Message {
	return &Message{ThingID: thingID, MessageID: uuid.NewString(), Type: typ}
}

// Reply returns a new message of type typ answering m: same Thing and
// affordance name, a fresh messageID, m's trace context, and as
// correlationID m's correlationID or, when m has none, m's messageID.
func (m *Message) Reply(typ MessageType) *Message {
	r := NewMessage(m.ThingID, typ)
	r.CorrelationID = m.Correlation()
	r.Name = m.Name
	r.Traceparent, r.Tracestate = m.Traceparent, m.Tracestate
	return r
}

// Correlation returns the id that names m's operation: its correlationID,
// or its messageID when it has none. Replies carry it as correlationID.
func (m *Message) Correlation() string {
	if m.CorrelationID != "" {
		return m.CorrelationID
	}
	return m.MessageID
}

// Clone returns a copy of m that shares nothing mutable with it (Values
// are immutable and shared).
func (m *Message) Clone() *Message {
	c := *m
	c.Extensions = maps.Clone(m.Extensions)
	return &c
}

// LogValue implements slog.LogValuer: the envelope members that identify
// m (type, thingID, messageID, correlationID, name, status), never the
// payloads. (A value receiver, so that Message and *Message log alike.)
func (m Message) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, 8)
	add := func(k, v string) {
		if v != "" {
			attrs = append(attrs, slog.String(k, v))
		}
	}
	add("messageType", string(m.Type))
	add("thingID", m.ThingID)
	add("messageID", m.MessageID)
	add("correlationID", m.CorrelationID)
	add(m.Type.NameMember(), m.Name)
	add("status", m.Status)
	add("title", m.Title)
	add("detail", m.Detail)
	return slog.GroupValue(attrs...)
}

// Errors that Validate and the codecs wrap in a MemberError.
var (
	ErrMissingMember = errors.New("missing")
	ErrInvalidMember = errors.New("invalid")
	// ErrNotUUID: a messageID or correlationID is not a UUID. Validate
	// checks the UUID formats last, so an error that matches ErrNotUUID
	// means every other rule holds (see Validate).
	ErrNotUUID = errors.New("not a UUID")
)

// MemberError is an error about one member of a message, named by its wire
// name (for a value nested in a payload, the payload member and a JSON
// pointer in Err).
type MemberError struct {
	Member string
	Err    error
}

func (e *MemberError) Error() string {
	return fmt.Sprintf("lmos message: member %q: %v", e.Member, e.Err)
}

func (e *MemberError) Unwrap() error { return e.Err }

func newMemberError(member string, err error) error { return &MemberError{Member: member, Err: err} }

func invalidMember(member, format string, args ...any) error {
	return newMemberError(member, fmt.Errorf("%w: "+format, append([]any{ErrInvalidMember}, args...)...))
}

// Validate reports the first way in which m breaks the spec, as a
// *MemberError naming the member:
//
//   - thingID, messageID and messageType are present, thingID is an absolute
//     URI and messageType is known;
//   - the members the spec makes mandatory for m's type are present (the
//     affordance name under its wire name "name", "action" or "event"; value
//     and timestamp for propertyReading; the RFC 7807 members for error; …);
//   - data is an object for writeMultipleProperties and propertyReadings, an
//     actionStatus's status is one of the Action* values, an error's status
//     is an HTTP status code (100–599), timestamp is an RFC 9557 date-time,
//     traceparent has the W3C Trace Context form, stream appears only on
//     invokeAction and actionStatus, oneWay only on consumer → Thing
//     messages;
//   - last, messageID and correlationID are UUIDs (RFC 9562 text form, any
//     version; lmosnode itself sends version 4).
//
// Decoding is more lenient than Validate: the spec's own examples use ids
// like "abcd1234-5678-90ef-ghij-klmnopqrstuv", which decode fine and fail
// here with ErrNotUUID. A receiver that wants to talk to such peers treats
// an error matching ErrNotUUID as a warning: it is reported only when all
// other rules hold.
func (m *Message) Validate() error {
	if m.ThingID == "" {
		return newMemberError("thingID", ErrMissingMember)
	}
	if u, err := url.Parse(m.ThingID); err != nil || u.Scheme == "" {
		return invalidMember("thingID", "%q is not an absolute URI", m.ThingID)
	}
	if m.MessageID == "" {
		return newMemberError("messageID", ErrMissingMember)
	}
	if m.Type == "" {
		return newMemberError("messageType", ErrMissingMember)
	}
	ti, ok := msgTypes[m.Type]
	if !ok {
		return invalidMember("messageType", "unknown message type %q", m.Type)
	}
	for _, member := range ti.required {
		if !m.has(member) {
			return newMemberError(member, ErrMissingMember)
		}
	}
	switch m.Type {
	case MsgWriteMultipleProperties, MsgPropertyReadings:
		if !m.Data.isObject() {
			return invalidMember("data", "want an object of property values")
		}
	case MsgActionStatus:
		switch m.Status {
		case ActionPending, ActionRunning, ActionCompleted, ActionFailed, ActionCancelled:
		default:
			return invalidMember("status", "%q is not an action status (pending, running, completed, failed, cancelled)", m.Status)
		}
	case MsgError:
		if n, err := strconv.Atoi(m.Status); err != nil || n < 100 || n > 599 || len(m.Status) != 3 {
			return invalidMember("status", "%q is not an HTTP status code", m.Status)
		}
	}
	if m.Timestamp != "" {
		if _, err := ParseTimestamp(m.Timestamp); err != nil {
			return newMemberError("timestamp", fmt.Errorf("%w: %w", ErrInvalidMember, err))
		}
	}
	if m.Traceparent != "" && !validTraceparent(m.Traceparent) {
		return invalidMember("traceparent", "%q is not a W3C traceparent", m.Traceparent)
	}
	if m.Stream && m.Type != MsgInvokeAction && m.Type != MsgActionStatus {
		return invalidMember("stream", "only on invokeAction and actionStatus, not %s", m.Type)
	}
	if m.OneWay && ti.fromThing {
		return invalidMember("oneWay", "%s is a reply, not a consumer request", m.Type)
	}
	if !isUUIDText(m.MessageID) {
		return newMemberError("messageID", fmt.Errorf("%w: %q", ErrNotUUID, m.MessageID))
	}
	if m.CorrelationID != "" && !isUUIDText(m.CorrelationID) {
		return newMemberError("correlationID", fmt.Errorf("%w: %q", ErrNotUUID, m.CorrelationID))
	}
	return nil
}

// has reports whether the member with wire name member is present.
func (m *Message) has(member string) bool {
	switch member {
	case "name", "action", "event":
		return m.Name != ""
	case "correlationID":
		return m.CorrelationID != ""
	case "data":
		return m.Data.Present()
	case "input":
		return m.Input.Present()
	case "value":
		return m.Value.Present()
	case "status":
		return m.Status != ""
	case "timestamp":
		return m.Timestamp != ""
	case "type":
		return m.ProblemType != ""
	case "title":
		return m.Title != ""
	case "detail":
		return m.Detail != ""
	case "instance":
		return m.Instance != ""
	}
	return false // impossible: msgTypes names only the members above
}

// isUUIDText reports whether s is a UUID in the RFC 9562 text form
// 8-4-4-4-12 hex digits (either case).
func isUUIDText(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}

// validTraceparent checks the W3C Trace Context form
// version-traceid-parentid-flags; versions other than 00 may append fields.
func validTraceparent(s string) bool {
	parts := strings.Split(s, "-")
	if len(parts) < 4 || (parts[0] == "00" && len(parts) != 4) {
		return false
	}
	want := []int{2, 32, 16, 2}
	for i, n := range want {
		if len(parts[i]) != n || strings.Trim(parts[i], "0123456789abcdef") != "" {
			return false
		}
	}
	return parts[0] != "ff" &&
		strings.Trim(parts[1], "0") != "" && strings.Trim(parts[2], "0") != ""
}

// ParseTimestamp parses a timestamp member: an RFC 9557 date-time, that is
// an RFC 3339 date-time optionally followed by bracketed suffixes such as
// "[Europe/Paris]" (which carry no instant and are ignored here).
func ParseTimestamp(s string) (time.Time, error) {
	base := s
	if i := strings.IndexByte(s, '['); i >= 0 {
		base = s[:i]
		for rest := s[i:]; rest != ""; {
			end := strings.IndexByte(rest, ']')
			if rest[0] != '[' || end < 0 {
				return time.Time{}, fmt.Errorf("timestamp %q: malformed RFC 9557 suffix", s)
			}
			rest = rest[end+1:]
		}
	}
	t, err := time.Parse(time.RFC3339Nano, base)
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp %q is not an RFC 3339 date-time: %w", s, err)
	}
	return t, nil
}

// FormatTimestamp formats t for a timestamp member: RFC 3339 in UTC with
// the fractional seconds that t has.
func FormatTimestamp(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}

// Value is an arbitrary JSON value, a message payload (data, input,
// output, value) or extension member.
//
// A Value holds the canonical JSON text of its value, which makes it exact
// through both codecs and comparable with Equal:
//
//   - objects have their members sorted by key (bytewise UTF-8), duplicate
//     keys are rejected;
//   - a number written without fraction and exponent is an integer, held
//     exactly (not as a float64) when its magnitude is below 2^1024; in CBOR
//     it is an integer, or a bignum (tag 2/3) beyond 64 bits;
//   - any other number is an IEEE 754 binary64 float, written in the
//     shortest form that reads back as the same float and always with a
//     fraction or exponent ("100.0", "1e+21"), so it stays a float through
//     CBOR and back; NaN and infinities, which JSON cannot carry, are
//     rejected;
//   - strings are valid UTF-8 and escape only '"', '\\' and control
//     characters;
//   - arrays and objects nest at most MaxDepth deep.
//
// The zero Value is an absent member; Null is a present JSON null. Values
// are immutable and safe for concurrent use.
type Value struct {
	raw []byte // canonical JSON text; nil when absent
}

// Null is the JSON null value.
var Null = Value{raw: []byte("null")}

// ValueOf returns the Value of x as encoding/json marshals it.
func ValueOf(x any) (Value, error) {
	b, err := json.Marshal(x)
	if err != nil {
		return Value{}, fmt.Errorf("lmos value: %w", err)
	}
	return ParseValue(b)
}

// ParseValue returns the Value of the JSON text b.
func ParseValue(b []byte) (Value, error) {
	if len(b) > MaxMessageSize {
		return Value{}, fmt.Errorf("lmos value: %w", ErrTooLarge)
	}
	tree, err := parseJSONTree(b, MaxDepth)
	if err != nil {
		return Value{}, fmt.Errorf("lmos value: %w", err)
	}
	return valueOfTree(tree), nil
}

// StringValue returns the Value of the JSON string s; invalid UTF-8 is
// replaced by U+FFFD.
func StringValue(s string) Value {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return Value{raw: appendJSONString(nil, s)}
}

// Present reports whether v is a present member (including null).
func (v Value) Present() bool { return v.raw != nil }

// IsNull reports whether v is the JSON null.
func (v Value) IsNull() bool { return string(v.raw) == "null" }

// JSON returns v's canonical JSON text, nil when v is absent. The caller
// must not modify it.
func (v Value) JSON() []byte { return v.raw }

// String returns v's canonical JSON text, "" when v is absent.
func (v Value) String() string { return string(v.raw) }

// Equal reports whether v and w are the same JSON value (both absent
// counts as equal).
func (v Value) Equal(w Value) bool {
	return (v.raw == nil) == (w.raw == nil) && string(v.raw) == string(w.raw)
}

// Decode unmarshals v into dst with encoding/json. Decoding into an any
// turns numbers into float64; decode into a json.Number or a typed integer
// to keep large integers exact.
func (v Value) Decode(dst any) error {
	if v.raw == nil {
		return errors.New("lmos value: absent")
	}
	return json.Unmarshal(v.raw, dst)
}

// MarshalJSON returns v's canonical JSON text; an absent Value marshals as
// null.
func (v Value) MarshalJSON() ([]byte, error) {
	if v.raw == nil {
		return []byte("null"), nil
	}
	return v.raw, nil
}

// UnmarshalJSON sets v to the value of the JSON text b.
func (v *Value) UnmarshalJSON(b []byte) error {
	p, err := ParseValue(b)
	if err != nil {
		return err
	}
	*v = p
	return nil
}

func (v Value) isObject() bool { return len(v.raw) > 0 && v.raw[0] == '{' }
