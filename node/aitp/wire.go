package aitp

import (
	"encoding/json"
	"net/http"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

// Thread is an AITP thread (docs/threads.md), with the members of the
// OpenAI Assistants v2 thread AITP-T01 is compatible with (object,
// created_at).
type Thread struct {
	ID        string         `json:"id"`
	Object    string         `json:"object"`
	CreatedAt int64          `json:"created_at"`
	Messages  []Message      `json:"messages"`
	Metadata  ThreadMetadata `json:"metadata"`
}

// ThreadMetadata is a thread's metadata: its parent and its actors.
type ThreadMetadata struct {
	ParentID *string `json:"parent_id"`
	Actors   []Actor `json:"actors"`
}

// Actor is a participant of a thread and the capabilities it declared.
type Actor struct {
	ID           string       `json:"id"`
	ClientID     string       `json:"client_id,omitempty"`
	Capabilities []Capability `json:"capabilities"`
}

// Capability names a capability by its schema URL.
type Capability struct {
	Schema string `json:"schema"`
}

// Message is a message of a thread: content is a list of strings, AITP
// capability messages JSON encoded as strings.
type Message struct {
	ID          string          `json:"id"`
	Object      string          `json:"object"`
	CreatedAt   int64           `json:"created_at"`
	ThreadID    string          `json:"thread_id"`
	Role        string          `json:"role"`
	Content     []string        `json:"content"`
	Attachments []Attachment    `json:"attachments"`
	Metadata    MessageMetadata `json:"metadata"`
}

// Attachment is a file attached to a message.
type Attachment struct {
	FileID string `json:"file_id"`
}

// MessageMetadata names the actor that produced a message.
type MessageMetadata struct {
	Actor string `json:"actor"`
}

// MessageList is the answer of GET …/messages (the OpenAI list object).
type MessageList struct {
	Object  string    `json:"object"`
	Data    []Message `json:"data"`
	FirstID string    `json:"first_id,omitempty"`
	LastID  string    `json:"last_id,omitempty"`
	HasMore bool      `json:"has_more"`
}

// AgentInfo is the answer of GET /aitp/{publisher}/{id}: the agent, the
// capabilities it declares and those AITP defines that it does not.
type AgentInfo struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	Description  string       `json:"description,omitempty"`
	Transport    string       `json:"transport"`
	Threads      string       `json:"threads"`
	Capabilities []Capability `json:"capabilities"`
	Unsupported  []Capability `json:"unsupported_capabilities"`
}

// createThread is the body of POST …/v1/thread(s).
type createThread struct {
	// Messages are strings (AITP-T01) or {role, content} (OpenAI).
	Messages []json.RawMessage `json:"messages"`
	Metadata struct {
		Actors []struct {
			ID       string `json:"id"`
			ClientID string `json:"client_id"`
			// Capabilities are schema URLs, or {schema} objects.
			Capabilities []json.RawMessage `json:"capabilities"`
		} `json:"actors"`
	} `json:"metadata"`
}

// createMessage is the body of POST …/messages.
type createMessage struct {
	Role string `json:"role"`
	// Content is a string or an array of strings (or of OpenAI text
	// parts).
	Content     json.RawMessage   `json:"content"`
	Attachments []json.RawMessage `json:"attachments"`
}

// Error is the error answer, the OpenAI API's shape that AITP-T01 is
// compatible with (AITP defines none of its own).
type Error struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is the error of an Error.
type ErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// Error codes of the AITP endpoints.
const (
	CodeCapabilityNotSupported = "capability_not_supported"
	// CodeInvalidCapabilityMessage: a message of a capability AITP
	// defines that does not match its official schema.
	CodeInvalidCapabilityMessage = "invalid_capability_message"
	CodeInvalidRequest           = "invalid_request"
	CodeNotFound                 = "not_found"
	CodeAgentError               = "agent_error"
)

// writeError answers an error of HTTP status with code; param names the
// member at fault ("" for none).
func writeError(w http.ResponseWriter, status int, code, param, message string) {
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	}
	var p *string
	if param != "" {
		p = &param
	}
	httpapi.WriteJSON(w, status, Error{Error: ErrorBody{Message: message, Type: typ, Param: p, Code: code}})
}

// strings decodes a string or a list of strings (or of {schema}
// objects, or of OpenAI text parts) raw.
func stringsOf(raw json.RawMessage) ([]string, bool) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, true
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, item := range list {
		s, ok := stringOf(item)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// stringOf is a string, a {schema} object's schema or an OpenAI text
// part's text ({type: "text", text: "…" | {value: "…"}}).
func stringOf(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var obj struct {
		Schema string          `json:"schema"`
		Type   string          `json:"type"`
		Text   json.RawMessage `json:"text"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return "", false
	}
	if obj.Schema != "" {
		return obj.Schema, true
	}
	if obj.Type != "text" {
		return "", false
	}
	if json.Unmarshal(obj.Text, &s) == nil {
		return s, true
	}
	var v struct {
		Value string `json:"value"`
	}
	return v.Value, json.Unmarshal(obj.Text, &v) == nil
}
