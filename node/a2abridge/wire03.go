package a2abridge

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
)

// A2A 0.3 on the wire. The bridge keeps one model, A2A 1.0's (wire.go);
// a 0.3 request or answer is translated to and from it here, with the
// 0.3 types of the official Go SDK (github.com/a2aproject/a2a-go/a2a):
// kind-tagged parts and events, lower-case kebab enums, a message/send
// result that is a Task or a Message itself.

// ProtocolVersion03 is the 0.3 version the bridge speaks: the card's
// protocolVersion (a 0.3 card names the patch version) and, as "0.3",
// the version of the card's 0.3 interface and of the A2A-Version header.
const (
	ProtocolVersion03 = "0.3.0"
	version03         = "0.3"
)

// CardV03 are the members of an A2A 0.3 Agent Card that A2A 1.0 has not:
// with them a card serves both generations (a 0.3 client reads url and
// preferredTransport, a 1.0 client supportedInterfaces).
type CardV03 struct {
	URL                  string                `json:"url,omitempty"`
	PreferredTransport   string                `json:"preferredTransport,omitempty"`
	ProtocolVersion      string                `json:"protocolVersion,omitempty"`
	AdditionalInterfaces []AgentInterfaceV03   `json:"additionalInterfaces,omitempty"`
	Security             []map[string][]string `json:"security,omitempty"`
}

// AgentInterfaceV03 is an A2A 0.3 AgentInterface.
type AgentInterfaceV03 struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

// SchemeV03 are the members of an A2A 0.3 (OpenAPI) security scheme; the
// bridge declares HTTP bearer authentication only.
type SchemeV03 struct {
	Type   string `json:"type,omitempty"`
	Scheme string `json:"scheme,omitempty"`
}

// dualCard adds to the 1.0 card c what a 0.3 client reads: its JSON-RPC
// endpoint as url and its 0.3 HTTP+JSON interface (rest03.go) in
// additionalInterfaces (both also as 1.0 interfaces of version 0.3, for
// 1.0 SDKs with 0.3 transports), the 0.3 protocol version and security.
func dualCard(c *AgentCard) {
	if len(c.SupportedInterfaces) == 0 {
		return
	}
	u := c.SupportedInterfaces[0].URL
	rest := rest03Interface(u)
	c.CardV03 = CardV03{URL: u, PreferredTransport: BindingJSONRPC, ProtocolVersion: ProtocolVersion03,
		AdditionalInterfaces: []AgentInterfaceV03{{URL: u, Transport: BindingJSONRPC}, rest}}
	c.SupportedInterfaces = append(c.SupportedInterfaces, AgentInterface{URL: u, ProtocolBinding: BindingJSONRPC, ProtocolVersion: version03},
		AgentInterface{URL: rest.URL, ProtocolBinding: BindingHTTPJSON, ProtocolVersion: version03})
	for name, s := range c.SecuritySchemes {
		if s.HTTPAuth != nil {
			s.SchemeV03 = SchemeV03{Type: "http", Scheme: strings.ToLower(s.HTTPAuth.Scheme)}
			c.SecuritySchemes[name] = s
		}
	}
	for _, r := range c.SecurityRequirements {
		req := map[string][]string{}
		for name, scopes := range r.Schemes {
			req[name] = append([]string{}, scopes.List...)
		}
		c.Security = append(c.Security, req)
	}
}

// view10 is the card c as an A2A 1.0 client that drops what 1.0 does not
// define sees it: without the 0.3 members.
func view10(c AgentCard) AgentCard {
	c.CardV03 = CardV03{}
	if c.SecuritySchemes != nil {
		schemes := make(map[string]SecurityScheme, len(c.SecuritySchemes))
		for name, s := range c.SecuritySchemes {
			s.SchemeV03 = SchemeV03{}
			schemes[name] = s
		}
		c.SecuritySchemes = schemes
	}
	c.Signatures = nil
	return c
}

// signDual signs the dual card c twice: first over its 1.0 view, which
// verifiers that read the card through the 1.0 model check (the A2A
// JavaScript SDK 1.x), then over the whole card, which verifiers of the
// card as served check (the specification's rule, VerifyCard).
func (s *signer) signDual(c *AgentCard, jku string) error {
	v := view10(*c)
	if err := s.sign(&v, jku); err != nil {
		return err
	}
	if err := s.sign(c, jku); err != nil {
		return err
	}
	c.Signatures = append(v.Signatures, c.Signatures...)
	return nil
}

// state03 is the 0.3 form of a 1.0 task state ("TASK_STATE_INPUT_REQUIRED"
// is "input-required"), state10 the 1.0 form of a 0.3 one.
func state03(s string) a2a.TaskState {
	return a2a.TaskState(strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(s, "TASK_STATE_")), "_", "-"))
}

func state10(s a2a.TaskState) string {
	return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(string(s), "-", "_"))
}

func role03(r string) a2a.MessageRole {
	if r == RoleAgent {
		return a2a.MessageRoleAgent
	}
	return a2a.MessageRoleUser
}

func role10(r a2a.MessageRole) string {
	if r == a2a.MessageRoleAgent {
		return RoleAgent
	}
	return RoleUser
}

// metaCompat marks a 0.3 data part that wraps a value which is not an
// object as {"value": …} (0.3 data is an object; the convention of the
// A2A SDKs' 0.3 compatibility layers).
const metaCompat = "data_part_compat"

// objectOf decodes JSON that is an object, with numbers kept as written.
func objectOf(raw json.RawMessage) (map[string]any, bool) {
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

// valueOfJSON decodes any JSON, with numbers kept as written.
func valueOfJSON(raw json.RawMessage) any {
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.UseNumber()
	var v any
	_ = d.Decode(&v) // a Part's data is valid JSON
	return v
}

func rawOf(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// part03 is the 0.3 form of p.
func part03(p Part) a2a.Part {
	md, _ := objectOf(p.Metadata)
	switch {
	case p.Text != nil:
		return a2a.TextPart{Text: *p.Text, Metadata: md}
	case p.Data != nil:
		if obj, ok := objectOf(p.Data); ok {
			return a2a.DataPart{Data: obj, Metadata: md}
		}
		if md == nil {
			md = map[string]any{}
		}
		md[metaCompat] = true
		return a2a.DataPart{Data: map[string]any{"value": valueOfJSON(p.Data)}, Metadata: md}
	case p.URL != "":
		return a2a.FilePart{File: a2a.FileURI{URI: p.URL, FileMeta: a2a.FileMeta{MimeType: p.MediaType, Name: p.Filename}}, Metadata: md}
	}
	return a2a.FilePart{File: a2a.FileBytes{Bytes: base64.StdEncoding.EncodeToString(p.Raw), FileMeta: a2a.FileMeta{MimeType: p.MediaType, Name: p.Filename}}, Metadata: md}
}

// part10 is the 1.0 form of the 0.3 part p.
func part10(p a2a.Part) Part {
	switch x := p.(type) {
	case a2a.TextPart:
		return Part{Text: &x.Text, Metadata: rawOf(x.Metadata)}
	case a2a.DataPart:
		if compat, _ := x.Metadata[metaCompat].(bool); compat {
			md := map[string]any{}
			for k, v := range x.Metadata {
				if k != metaCompat {
					md[k] = v
				}
			}
			return Part{Data: orNull(rawOf(x.Data["value"])), Metadata: rawOf(md)}
		}
		data := rawOf(x.Data)
		if data == nil {
			data = json.RawMessage("{}")
		}
		return Part{Data: data, Metadata: rawOf(x.Metadata)}
	case a2a.FilePart:
		switch f := x.File.(type) {
		case a2a.FileURI:
			return Part{URL: f.URI, MediaType: f.MimeType, Filename: f.Name, Metadata: rawOf(x.Metadata)}
		case a2a.FileBytes:
			raw, err := base64.StdEncoding.DecodeString(f.Bytes)
			if err != nil || len(raw) == 0 {
				raw = []byte(f.Bytes) // not base64: kept as sent, so that the part stays a file part
			}
			return Part{Raw: raw, MediaType: f.MimeType, Filename: f.Name, Metadata: rawOf(x.Metadata)}
		}
	}
	return Part{}
}

func orNull(b json.RawMessage) json.RawMessage {
	if b == nil {
		return json.RawMessage("null")
	}
	return b
}

func parts03(ps []Part) a2a.ContentParts {
	out := make(a2a.ContentParts, len(ps))
	for i, p := range ps {
		out[i] = part03(p)
	}
	return out
}

func parts10(ps a2a.ContentParts) []Part {
	out := make([]Part, len(ps))
	for i, p := range ps {
		out[i] = part10(p)
	}
	return out
}

// message03 is the 0.3 form of m.
func message03(m *Message) *a2a.Message {
	if m == nil {
		return nil
	}
	md, _ := objectOf(m.Metadata)
	out := &a2a.Message{ID: m.MessageID, ContextID: m.ContextID, TaskID: a2a.TaskID(m.TaskID), Role: role03(m.Role),
		Parts: parts03(m.Parts), Metadata: md, Extensions: m.Extensions}
	for _, id := range m.ReferenceTaskIDs {
		out.ReferenceTasks = append(out.ReferenceTasks, a2a.TaskID(id))
	}
	return out
}

// message10 is the 1.0 form of the 0.3 message m.
func message10(m *a2a.Message) *Message {
	if m == nil {
		return nil
	}
	out := &Message{MessageID: m.ID, ContextID: m.ContextID, TaskID: string(m.TaskID), Role: role10(m.Role),
		Parts: parts10(m.Parts), Metadata: rawOf(m.Metadata), Extensions: m.Extensions}
	for _, id := range m.ReferenceTasks {
		out.ReferenceTaskIDs = append(out.ReferenceTaskIDs, string(id))
	}
	return out
}

func status03(s TaskStatus) a2a.TaskStatus {
	out := a2a.TaskStatus{State: state03(s.State), Message: message03(s.Message)}
	if t, err := time.Parse(time.RFC3339Nano, s.Timestamp); err == nil {
		out.Timestamp = &t
	}
	return out
}

func status10(s a2a.TaskStatus) TaskStatus {
	out := TaskStatus{State: state10(s.State), Message: message10(s.Message)}
	if s.Timestamp != nil {
		out.Timestamp = s.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	return out
}

func artifact03(a Artifact) *a2a.Artifact {
	md, _ := objectOf(a.Metadata)
	return &a2a.Artifact{ID: a2a.ArtifactID(a.ArtifactID), Name: a.Name, Description: a.Description, Parts: parts03(a.Parts), Metadata: md}
}

func artifact10(a *a2a.Artifact) Artifact {
	return Artifact{ArtifactID: string(a.ID), Name: a.Name, Description: a.Description, Parts: parts10(a.Parts), Metadata: rawOf(a.Metadata)}
}

// task03 is the 0.3 form of t.
func task03(t *Task) *a2a.Task {
	md, _ := objectOf(t.Metadata)
	out := &a2a.Task{ID: a2a.TaskID(t.ID), ContextID: t.ContextID, Status: status03(t.Status), Metadata: md}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, artifact03(a))
	}
	for i := range t.History {
		out.History = append(out.History, message03(&t.History[i]))
	}
	return out
}

// task10 is the 1.0 form of the 0.3 task t.
func task10(t *a2a.Task) *Task {
	out := &Task{ID: string(t.ID), ContextID: t.ContextID, Status: status10(t.Status), Metadata: rawOf(t.Metadata)}
	for _, a := range t.Artifacts {
		if a != nil {
			out.Artifacts = append(out.Artifacts, artifact10(a))
		}
	}
	for _, m := range t.History {
		if m != nil {
			out.History = append(out.History, *message10(m))
		}
	}
	return out
}

// event03 is the 0.3 form of a stream event (or of a message/send
// result); a status update is final when the task is terminal or waits
// for its client.
func event03(ev StreamResponse) a2a.Event {
	switch {
	case ev.Task != nil:
		return task03(ev.Task)
	case ev.Message != nil:
		return message03(ev.Message)
	case ev.StatusUpdate != nil:
		u := ev.StatusUpdate
		md, _ := objectOf(u.Metadata)
		return &a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(u.TaskID), ContextID: u.ContextID, Status: status03(u.Status),
			Final: terminal(u.Status.State) || interrupted(u.Status.State), Metadata: md}
	case ev.ArtifactUpdate != nil:
		u := ev.ArtifactUpdate
		return &a2a.TaskArtifactUpdateEvent{TaskID: a2a.TaskID(u.TaskID), ContextID: u.ContextID, Artifact: artifact03(u.Artifact),
			Append: u.Append, LastChunk: u.LastChunk}
	}
	return nil
}

// event10 is the 1.0 form of a 0.3 event.
func event10(ev a2a.Event) StreamResponse {
	switch x := ev.(type) {
	case *a2a.Task:
		return StreamResponse{Task: task10(x)}
	case *a2a.Message:
		return StreamResponse{Message: message10(x)}
	case *a2a.TaskStatusUpdateEvent:
		return StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{TaskID: string(x.TaskID), ContextID: x.ContextID,
			Status: status10(x.Status), Metadata: rawOf(x.Metadata)}}
	case *a2a.TaskArtifactUpdateEvent:
		u := &TaskArtifactUpdateEvent{TaskID: string(x.TaskID), ContextID: x.ContextID, Append: x.Append, LastChunk: x.LastChunk}
		if x.Artifact != nil {
			u.Artifact = artifact10(x.Artifact)
		}
		return StreamResponse{ArtifactUpdate: u}
	}
	return StreamResponse{}
}

// sendParams10 is the 1.0 form of 0.3 message/send params: blocking false
// is returnImmediately, pushNotificationConfig taskPushNotificationConfig.
func sendParams10(p *a2a.MessageSendParams) SendMessageRequest {
	out := SendMessageRequest{Message: message10(p.Message), Metadata: rawOf(p.Metadata)}
	if c := p.Config; c != nil {
		out.Configuration = &SendMessageConfiguration{AcceptedOutputModes: c.AcceptedOutputModes, HistoryLength: c.HistoryLength,
			ReturnImmediately: c.Blocking != nil && !*c.Blocking}
		if c.PushConfig != nil {
			out.Configuration.TaskPushNotificationConfig = rawOf(c.PushConfig)
		}
	}
	return out
}

// sendParams03 is the 0.3 form of SendMessage params.
func sendParams03(p SendMessageRequest) *a2a.MessageSendParams {
	md, _ := objectOf(p.Metadata)
	out := &a2a.MessageSendParams{Message: message03(p.Message), Metadata: md}
	if c := p.Configuration; c != nil {
		blocking := !c.ReturnImmediately
		out.Config = &a2a.MessageSendConfig{AcceptedOutputModes: c.AcceptedOutputModes, HistoryLength: c.HistoryLength, Blocking: &blocking}
	}
	return out
}
