package proto_test

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/lmosnode/lmosnode/proto"
)

const thing = "urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77"

// validMessage returns a message of type typ that Validate accepts, with
// every member the spec makes mandatory for it.
func validMessage(typ proto.MessageType) *proto.Message {
	m := proto.NewMessage(thing, typ)
	obj := mustValue(`{"temperature":0.7}`)
	switch typ {
	case proto.MsgInvokeAction, proto.MsgCancelAction, proto.MsgQueryAction:
		m.Name = "getWeather"
	case proto.MsgActionStatus:
		m.Name, m.Status = "getWeather", proto.ActionCompleted
	case proto.MsgStreamInput:
		m.Name, m.CorrelationID, m.Input = "chat", uuid.NewString(), proto.StringValue("more")
	case proto.MsgStreamEnd:
		m.Name, m.CorrelationID = "chat", uuid.NewString()
	case proto.MsgSubscribeEvent, proto.MsgUnsubscribeEvent:
		m.Name = "userFeedbackReceived"
	case proto.MsgEvent:
		m.Name, m.CorrelationID, m.Data, m.Timestamp = "userFeedbackReceived", uuid.NewString(), obj, "2025-01-20T19:00:00Z"
	case proto.MsgReadProperty, proto.MsgObserveProperty, proto.MsgUnobserveProperty:
		m.Name = "modelConfiguration"
	case proto.MsgPropertyReading:
		m.Name, m.Value, m.Timestamp = "modelConfiguration", obj, "2024-01-13T23:20:50.52Z"
	case proto.MsgPropertyReadings:
		m.Data, m.Timestamp = obj, "2025-01-20T19:00:00Z"
	case proto.MsgWriteProperty:
		m.Name, m.Data = "modelConfiguration", obj
	case proto.MsgWriteMultipleProperties:
		m.Data = obj
	case proto.MsgError:
		m.ProblemType, m.Title, m.Status, m.Detail, m.Instance = "about:blank", "Bad", "400", "Bad input", "urn:uuid:"+uuid.NewString()
	}
	return m
}

// removeMember removes the member with wire name member from m.
func removeMember(m *proto.Message, member string) {
	switch member {
	case "thingID":
		m.ThingID = ""
	case "messageID":
		m.MessageID = ""
	case "messageType":
		m.Type = ""
	case "correlationID":
		m.CorrelationID = ""
	case "name", "action", "event":
		m.Name = ""
	case "data":
		m.Data = proto.Value{}
	case "input":
		m.Input = proto.Value{}
	case "value":
		m.Value = proto.Value{}
	case "status":
		m.Status = ""
	case "timestamp":
		m.Timestamp = ""
	case "type":
		m.ProblemType = ""
	case "title":
		m.Title = ""
	case "detail":
		m.Detail = ""
	case "instance":
		m.Instance = ""
	default:
		panic("removeMember: unknown member " + member)
	}
}

// TestValidateRequired: for every type, a complete message validates, and
// removing any mandatory member fails naming exactly that member (under
// its wire name for the type).
func TestValidateRequired(t *testing.T) {
	required := map[proto.MessageType][]string{
		proto.MsgInvokeAction:            {"action"},
		proto.MsgCancelAction:            {"action"},
		proto.MsgQueryAction:             {"action"},
		proto.MsgActionStatus:            {"action", "status"},
		proto.MsgStreamInput:             {"action", "correlationID", "input"},
		proto.MsgStreamEnd:               {"action", "correlationID"},
		proto.MsgSubscribeEvent:          {"event"},
		proto.MsgUnsubscribeEvent:        {"event"},
		proto.MsgSubscribeAllEvents:      nil,
		proto.MsgUnsubscribeAllEvents:    nil,
		proto.MsgEvent:                   {"event", "correlationID", "data", "timestamp"},
		proto.MsgReadProperty:            {"name"},
		proto.MsgPropertyReading:         {"name", "value", "timestamp"},
		proto.MsgPropertyReadings:        {"data", "timestamp"},
		proto.MsgWriteProperty:           {"name", "data"},
		proto.MsgWriteMultipleProperties: {"data"},
		proto.MsgObserveProperty:         {"name"},
		proto.MsgUnobserveProperty:       {"name"},
		proto.MsgError:                   {"type", "title", "status", "detail", "instance"},
	}
	if len(required) != len(allTypes) {
		t.Fatalf("test covers %d types, want %d", len(required), len(allTypes))
	}
	for _, typ := range allTypes {
		if !typ.Known() {
			t.Errorf("%s is not Known", typ)
		}
		m := validMessage(typ)
		if err := m.Validate(); err != nil {
			t.Errorf("%s: Validate of a complete message: %v", typ, err)
		}
		for _, member := range append([]string{"thingID", "messageID", "messageType"}, required[typ]...) {
			c := m.Clone()
			removeMember(c, member)
			assertMemberErr(t, fmt.Sprintf("%s without %s", typ, member), c.Validate(), member, proto.ErrMissingMember)
		}
	}
}

func assertMemberErr(t *testing.T, what string, err error, member string, target error) {
	t.Helper()
	var me *proto.MemberError
	switch {
	case err == nil:
		t.Errorf("%s: no error, want one naming %q", what, member)
	case !errors.As(err, &me):
		t.Errorf("%s: %v, want a MemberError naming %q", what, err, member)
	case me.Member != member:
		t.Errorf("%s: error names %q, want %q: %v", what, me.Member, member, err)
	case target != nil && !errors.Is(err, target):
		t.Errorf("%s: %v, want it to match %v", what, err, target)
	}
}

func TestValidateFormats(t *testing.T) {
	for _, tc := range []struct {
		name   string
		typ    proto.MessageType
		mutate func(*proto.Message)
		member string // "" for valid
		target error
	}{
		{"relative thingID", proto.MsgReadProperty, func(m *proto.Message) { m.ThingID = "weather-agent" }, "thingID", proto.ErrInvalidMember},
		{"unknown type", proto.MsgReadProperty, func(m *proto.Message) { m.Type = "readProperties" }, "messageType", proto.ErrInvalidMember},
		{"bad action status", proto.MsgActionStatus, func(m *proto.Message) { m.Status = "done" }, "status", proto.ErrInvalidMember},
		{"in progress is running", proto.MsgActionStatus, func(m *proto.Message) { m.Status = "in progress" }, "status", proto.ErrInvalidMember},
		{"every action status", proto.MsgActionStatus, func(m *proto.Message) { m.Status = proto.ActionCancelled }, "", nil},
		{"error status text", proto.MsgError, func(m *proto.Message) { m.Status = "Internal" }, "status", proto.ErrInvalidMember},
		{"error status 600", proto.MsgError, func(m *proto.Message) { m.Status = "600" }, "status", proto.ErrInvalidMember},
		{"error status +50", proto.MsgError, func(m *proto.Message) { m.Status = "+50" }, "status", proto.ErrInvalidMember},
		{"multiple properties not an object", proto.MsgWriteMultipleProperties, func(m *proto.Message) { m.Data = mustValue(`[1]`) }, "data", proto.ErrInvalidMember},
		{"readings not an object", proto.MsgPropertyReadings, func(m *proto.Message) { m.Data = proto.Null }, "data", proto.ErrInvalidMember},
		{"writeProperty with any data", proto.MsgWriteProperty, func(m *proto.Message) { m.Data = mustValue(`0.7`) }, "", nil},
		{"event with null data", proto.MsgEvent, func(m *proto.Message) { m.Data = proto.Null }, "", nil},
		{"bad timestamp", proto.MsgPropertyReading, func(m *proto.Message) { m.Timestamp = "2024-01-13 23:20:50" }, "timestamp", proto.ErrInvalidMember},
		{"RFC 9557 timestamp", proto.MsgPropertyReading, func(m *proto.Message) { m.Timestamp = "2024-01-13T23:20:50+01:00[Europe/Paris][u-ca=iso8601]" }, "", nil},
		{"bad RFC 9557 suffix", proto.MsgPropertyReading, func(m *proto.Message) { m.Timestamp = "2024-01-13T23:20:50Z[Europe/Paris" }, "timestamp", proto.ErrInvalidMember},
		{"traceparent", proto.MsgReadProperty, func(m *proto.Message) {
			m.Traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		}, "", nil},
		{"future traceparent version", proto.MsgReadProperty, func(m *proto.Message) {
			m.Traceparent = "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra"
		}, "", nil},
		{"traceparent zero trace id", proto.MsgReadProperty, func(m *proto.Message) {
			m.Traceparent = "00-00000000000000000000000000000000-b7ad6b7169203331-01"
		}, "traceparent", proto.ErrInvalidMember},
		{"traceparent upper case", proto.MsgReadProperty, func(m *proto.Message) {
			m.Traceparent = "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01"
		}, "traceparent", proto.ErrInvalidMember},
		{"stream on invokeAction", proto.MsgInvokeAction, func(m *proto.Message) { m.Stream = true }, "", nil},
		{"stream on actionStatus", proto.MsgActionStatus, func(m *proto.Message) { m.Stream = true }, "", nil},
		{"stream elsewhere", proto.MsgQueryAction, func(m *proto.Message) { m.Stream = true }, "stream", proto.ErrInvalidMember},
		{"oneWay request", proto.MsgWriteProperty, func(m *proto.Message) { m.OneWay = true }, "", nil},
		{"oneWay reply", proto.MsgActionStatus, func(m *proto.Message) { m.OneWay = true }, "oneWay", proto.ErrInvalidMember},
		{"messageID not a UUID", proto.MsgReadProperty, func(m *proto.Message) { m.MessageID = "abcd1234-5678-90ef-ghij-klmnopqrstuv" }, "messageID", proto.ErrNotUUID},
		{"messageID braced", proto.MsgReadProperty, func(m *proto.Message) { m.MessageID = "{" + uuid.NewString() + "}" }, "messageID", proto.ErrNotUUID},
		{"messageID urn", proto.MsgReadProperty, func(m *proto.Message) { m.MessageID = "urn:uuid:" + uuid.NewString() }, "messageID", proto.ErrNotUUID},
		{"messageID v7 upper case", proto.MsgReadProperty, func(m *proto.Message) { m.MessageID = "0190F3A2-7B1C-7D4E-8F00-112233445566" }, "", nil},
		{"correlationID not a UUID", proto.MsgReadProperty, func(m *proto.Message) { m.CorrelationID = "b45e8f90" }, "correlationID", proto.ErrNotUUID},
		{"UUID is checked last", proto.MsgReadProperty, func(m *proto.Message) { m.MessageID, m.Name = "x", "" }, "name", proto.ErrMissingMember},
	} {
		m := validMessage(tc.typ)
		tc.mutate(m)
		err := m.Validate()
		if tc.member == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		assertMemberErr(t, tc.name, err, tc.member, tc.target)
	}
}

// TestLenientIDs: the spec's examples use ids that are not UUIDs. They
// decode, and Validate reports ErrNotUUID only, which a receiver may
// tolerate.
func TestLenientIDs(t *testing.T) {
	in := `{"thingId":"urn:uuid:3f1d3a7a-4f97-2e6b-c45f-f3c2e1c84c77","messageId":"abcd1234-5678-90ef-ghij-klmnopqrstuv",` +
		`"messageType":"observeProperty","name":"modelConfiguration"}`
	var m proto.Message
	if err := proto.JSON.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); !errors.Is(err, proto.ErrNotUUID) {
		t.Errorf("Validate = %v, want ErrNotUUID", err)
	}
}

func TestNewMessageAndReply(t *testing.T) {
	req := proto.NewMessage(thing, proto.MsgInvokeAction)
	id, err := uuid.Parse(req.MessageID)
	if err != nil || id.Version() != 4 || len(req.MessageID) != 36 {
		t.Fatalf("messageID %q is not a UUIDv4: %v", req.MessageID, err)
	}
	req.Name, req.Traceparent, req.Tracestate = "getWeather", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "congo=x"
	r := req.Reply(proto.MsgActionStatus)
	if r.ThingID != thing || r.Name != req.Name || r.Type != proto.MsgActionStatus ||
		r.CorrelationID != req.MessageID || r.MessageID == req.MessageID ||
		r.Traceparent != req.Traceparent || r.Tracestate != req.Tracestate {
		t.Errorf("Reply = %+v", r)
	}
	// A request with a correlationID keeps it in replies.
	req.CorrelationID = uuid.NewString()
	if r := req.Reply(proto.MsgActionStatus); r.CorrelationID != req.CorrelationID || req.Correlation() != req.CorrelationID {
		t.Errorf("Reply correlationID = %q, want %q", r.CorrelationID, req.CorrelationID)
	}
}

func TestClone(t *testing.T) {
	m := validMessage(proto.MsgEvent)
	m.Extensions = map[string]proto.Value{"x": proto.Null}
	c := m.Clone()
	c.Extensions["y"] = proto.Null
	c.Name = "other"
	if len(m.Extensions) != 1 || m.Name == "other" {
		t.Error("Clone shares state with the original")
	}
}

func TestEndsAction(t *testing.T) {
	for _, tc := range []struct {
		typ    proto.MessageType
		status string
		want   bool
	}{
		{proto.MsgActionStatus, proto.ActionPending, false},
		{proto.MsgActionStatus, proto.ActionRunning, false},
		{proto.MsgActionStatus, proto.ActionCompleted, true},
		{proto.MsgActionStatus, proto.ActionFailed, true},
		{proto.MsgActionStatus, proto.ActionCancelled, true},
		{proto.MsgError, "500", true},
		{proto.MsgPropertyReading, "", false},
	} {
		m := &proto.Message{Type: tc.typ, Status: tc.status}
		if got := m.EndsAction(); got != tc.want {
			t.Errorf("EndsAction(%s %s) = %v", tc.typ, tc.status, got)
		}
	}
}

func TestNameMember(t *testing.T) {
	for typ, want := range map[proto.MessageType]string{
		proto.MsgInvokeAction: "action", proto.MsgActionStatus: "action", proto.MsgStreamEnd: "action",
		proto.MsgSubscribeEvent: "event", proto.MsgEvent: "event",
		proto.MsgReadProperty: "name", proto.MsgError: "name", "nope": "name",
	} {
		if got := typ.NameMember(); got != want {
			t.Errorf("%s.NameMember() = %q, want %q", typ, got, want)
		}
	}
}

func TestTimestamp(t *testing.T) {
	at := time.Date(2025, 1, 20, 20, 0, 0, 520_000_000, time.FixedZone("CET", 3600))
	s := proto.FormatTimestamp(at)
	if s != "2025-01-20T19:00:00.52Z" {
		t.Errorf("FormatTimestamp = %q", s)
	}
	for _, in := range []string{s, "2025-01-20T20:00:00.52+01:00", "2025-01-20T20:00:00.52+01:00[Europe/Berlin]"} {
		got, err := proto.ParseTimestamp(in)
		if err != nil || !got.Equal(at) {
			t.Errorf("ParseTimestamp(%q) = %v, %v", in, got, err)
		}
	}
}

func TestProblem(t *testing.T) {
	req := validMessage(proto.MsgInvokeAction)
	e := proto.NewError(req, 503, "Service Unavailable", "")
	if err := e.Validate(); err != nil {
		t.Fatalf("NewError gives an invalid message: %v", err)
	}
	if e.Status != "503" || e.Detail != "Service Unavailable" || e.ProblemType != proto.ProblemTypeBlank ||
		e.Instance != "urn:uuid:"+e.MessageID || e.CorrelationID != req.MessageID || !e.EndsAction() {
		t.Errorf("NewError = %+v", e)
	}
	p := e.Problem()
	if p == nil || p.Status != 503 || p.Title != "Service Unavailable" {
		t.Errorf("Problem() = %+v", p)
	}
	if req.Problem() != nil {
		t.Error("Problem() of a non-error message is not nil")
	}

	// A handler's *Problem becomes the error message as it is.
	custom := &proto.Problem{Type: "https://example.com/probs/out-of-credit", Title: "Out of credit", Status: 403, Detail: "balance 30", Instance: "/account/1"}
	e = proto.ErrorFor(req, fmt.Errorf("charging: %w", custom))
	if got := e.Problem(); !reflect.DeepEqual(got, custom) {
		t.Errorf("ErrorFor(problem) = %+v, want %+v", got, custom)
	}
	// Any other error is a 500.
	e = proto.ErrorFor(req, errors.New("disk on fire"))
	if e.Status != "500" || e.Detail != "disk on fire" || e.Validate() != nil {
		t.Errorf("ErrorFor(plain error) = %+v (%v)", e, e.Validate())
	}
	if got := custom.Error(); got != "403 Out of credit: balance 30" {
		t.Errorf("Problem.Error() = %q", got)
	}
	// Validation errors follow, one a line; a detail that repeats the
	// title is said once.
	invalid := &proto.Problem{Title: "Bad Request", Status: 400, Detail: "Bad Request",
		ValidationErrors: []proto.FieldError{{Field: "/title", Description: "required"}, {Description: "not an object"}}}
	if got := invalid.Error(); got != "400 Bad Request\n  /title: required\n  (root): not an object" {
		t.Errorf("Problem.Error() with validation errors = %q", got)
	}
	// Without a request, the caller fills thingID.
	e = proto.NewError(nil, 400, "Bad Request", "not JSON")
	if e.ThingID != "" || e.CorrelationID != "" {
		t.Errorf("NewError(nil) = %+v", e)
	}
	assertMemberErr(t, "NewError(nil)", e.Validate(), "thingID", proto.ErrMissingMember)
}

func ExampleNewMessage() {
	m := proto.NewMessage("urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77", proto.MsgInvokeAction)
	m.MessageID = "b45e8f90-8824-4c23-bc37-c6c4ddad4b2c" // fixed for the example
	m.Name = "getWeather"
	m.Input, _ = proto.ValueOf(map[string]string{"question": "What is the weather in New York?"})
	b, _ := proto.JSON.Marshal(m)
	fmt.Println(string(b))
	fmt.Println(m.Validate())
	// Output:
	// {"thingID":"urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77","messageID":"b45e8f90-8824-4c23-bc37-c6c4ddad4b2c","messageType":"invokeAction","action":"getWeather","input":{"question":"What is the weather in New York?"}}
	// <nil>
}

func ExampleMessage_Reply() {
	req := &proto.Message{
		ThingID: "urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77", MessageID: "b45e8f90-8824-4c23-bc37-c6c4ddad4b2c",
		Type: proto.MsgInvokeAction, Name: "getWeather",
	}
	r := req.Reply(proto.MsgActionStatus)
	r.Status = proto.ActionCompleted
	r.Output = proto.StringValue("Sunny, 25°C.")
	fmt.Println(r.CorrelationID, r.Name, r.Status, r.Output, r.EndsAction())
	// Output: b45e8f90-8824-4c23-bc37-c6c4ddad4b2c getWeather completed "Sunny, 25°C." true
}

func ExampleNewError() {
	req := &proto.Message{ThingID: "urn:x", MessageID: "b45e8f90-8824-4c23-bc37-c6c4ddad4b2c", Type: proto.MsgReadProperty, Name: "p"}
	e := proto.NewError(req, 404, "Not Found", "no property p")
	fmt.Println(e.Type, e.Status, e.Title, "-", e.Detail, e.Validate())
	// Output: error 404 Not Found - no property p <nil>
}

func ExampleMessage_Validate() {
	var m proto.Message
	_ = proto.JSON.Unmarshal([]byte(`{"thingId":"urn:x","messageId":"abcd1234-5678-90ef-ghij-klmnopqrstuv","messageType":"readProperty"}`), &m)
	fmt.Println(m.Validate())
	m.Name = "modelConfiguration"
	err := m.Validate()
	fmt.Println(err, errors.Is(err, proto.ErrNotUUID))
	// Output:
	// lmos message: member "name": missing
	// lmos message: member "messageID": not a UUID: "abcd1234-5678-90ef-ghij-klmnopqrstuv" true
}

// A streaming session: the consumer opens it with a streaming invokeAction;
// the Thing accepts it and streams output chunks while the consumer sends
// more input; the Thing ends it.
func Example_streamSession() {
	open := proto.NewMessage("urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77", proto.MsgInvokeAction)
	open.Name, open.Stream, open.Input = "chat", true, proto.StringValue("Weather in")

	// The Thing's side: every actionStatus of the session is marked.
	status := func(s string, output proto.Value) *proto.Message {
		m := open.Reply(proto.MsgActionStatus)
		m.Stream, m.Status, m.Output = true, s, output
		return m
	}
	accepted := status(proto.ActionRunning, proto.Value{})

	more := open.Reply(proto.MsgStreamInput) // correlationID = open's messageID
	more.Input = proto.StringValue(" New York?")
	end := open.Reply(proto.MsgStreamEnd)

	chunk := status(proto.ActionRunning, proto.StringValue("Sunny"))
	done := status(proto.ActionCompleted, proto.Value{})

	for _, m := range []*proto.Message{open, accepted, more, chunk, end, done} {
		fmt.Printf("%-12s session=%v in=%s out=%s ends=%v valid=%v\n",
			m.Type, m.Correlation() == open.MessageID, m.Input, m.Output, m.EndsAction(), m.Validate() == nil)
	}
	// Output:
	// invokeAction session=true in="Weather in" out= ends=false valid=true
	// actionStatus session=true in= out= ends=false valid=true
	// streamInput  session=true in=" New York?" out= ends=false valid=true
	// actionStatus session=true in= out="Sunny" ends=false valid=true
	// streamEnd    session=true in= out= ends=false valid=true
	// actionStatus session=true in= out= ends=true valid=true
}

func TestLogValue(t *testing.T) {
	m := validMessage(proto.MsgActionStatus)
	m.Output = proto.StringValue("secret output")
	var b strings.Builder
	log := slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	log.Info("sent", "msg", m)
	log.Info("sent", "msg", *m)
	want := fmt.Sprintf("level=INFO msg=sent msg.messageType=actionStatus msg.thingID=%s msg.messageID=%s msg.action=getWeather msg.status=completed\n", thing, m.MessageID)
	if got := b.String(); got != want+want {
		t.Errorf("log output:\n%s\nwant twice:\n%s", got, want)
	}
}
