package a2abridge

import (
	"encoding/json"
)

// The A2A 1.0 data model in its JSON form (ProtoJSON: camelCase members,
// enums as their SCREAMING_SNAKE_CASE names, oneofs as the member that is
// set). Only what the bridge reads or writes is declared; a member that is
// absent or has its default value is not written, which is also the form
// an Agent Card is signed in (specification §8.4.1).

// ProtocolVersion is the A2A version the bridge implements, as it appears
// in the A2A-Version header and in AgentInterface.protocolVersion.
const ProtocolVersion = "1.0"

// BindingJSONRPC is AgentInterface.protocolBinding of the JSON-RPC binding.
const BindingJSONRPC = "JSONRPC"

// Task states (TaskState).
const (
	StateSubmitted     = "TASK_STATE_SUBMITTED"
	StateWorking       = "TASK_STATE_WORKING"
	StateCompleted     = "TASK_STATE_COMPLETED"
	StateFailed        = "TASK_STATE_FAILED"
	StateCanceled      = "TASK_STATE_CANCELED"
	StateInputRequired = "TASK_STATE_INPUT_REQUIRED"
	StateRejected      = "TASK_STATE_REJECTED"
	StateAuthRequired  = "TASK_STATE_AUTH_REQUIRED"
)

// terminal reports whether a task in state s changes no more.
func terminal(s string) bool {
	switch s {
	case StateCompleted, StateFailed, StateCanceled, StateRejected:
		return true
	}
	return false
}

// interrupted reports whether a task in state s waits for its client.
func interrupted(s string) bool { return s == StateInputRequired || s == StateAuthRequired }

// Roles (Role).
const (
	RoleUser  = "ROLE_USER"
	RoleAgent = "ROLE_AGENT"
)

// Part is a piece of message or artifact content: text, raw bytes, a URL
// or JSON data.
type Part struct {
	Text      *string         `json:"text,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	URL       string          `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

// TextPart is a text part.
func TextPart(s string) Part { return Part{Text: &s} }

// Message is one unit of communication between a client and an agent.
type Message struct {
	MessageID        string          `json:"messageId"`
	ContextID        string          `json:"contextId,omitempty"`
	TaskID           string          `json:"taskId,omitempty"`
	Role             string          `json:"role"`
	Parts            []Part          `json:"parts"`
	Metadata         json.RawMessage `json:"metadata,omitempty"`
	Extensions       []string        `json:"extensions,omitempty"`
	ReferenceTaskIDs []string        `json:"referenceTaskIds,omitempty"`
}

// TaskStatus is a task's state with an optional message.
type TaskStatus struct {
	State     string   `json:"state"`
	Message   *Message `json:"message,omitempty"`
	Timestamp string   `json:"timestamp,omitempty"`
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID  string          `json:"artifactId"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parts       []Part          `json:"parts"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
}

// Task is the unit of work of an A2A agent.
type Task struct {
	ID        string          `json:"id"`
	ContextID string          `json:"contextId"`
	Status    TaskStatus      `json:"status"`
	Artifacts []Artifact      `json:"artifacts,omitempty"`
	History   []Message       `json:"history,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

// TaskStatusUpdateEvent tells a streaming client of a new task status.
type TaskStatusUpdateEvent struct {
	TaskID    string          `json:"taskId"`
	ContextID string          `json:"contextId"`
	Status    TaskStatus      `json:"status"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

// TaskArtifactUpdateEvent tells a streaming client of (a chunk of) an
// artifact.
type TaskArtifactUpdateEvent struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	Append    bool     `json:"append,omitempty"`
	LastChunk bool     `json:"lastChunk,omitempty"`
}

// StreamResponse is one event of a stream: exactly one member is set.
type StreamResponse struct {
	Task           *Task                    `json:"task,omitempty"`
	Message        *Message                 `json:"message,omitempty"`
	StatusUpdate   *TaskStatusUpdateEvent   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *TaskArtifactUpdateEvent `json:"artifactUpdate,omitempty"`
}

// SendMessageConfiguration is the configuration of a SendMessage request.
type SendMessageConfiguration struct {
	AcceptedOutputModes []string `json:"acceptedOutputModes,omitempty"`
	HistoryLength       *int     `json:"historyLength,omitempty"`
	ReturnImmediately   bool     `json:"returnImmediately,omitempty"`
	// TaskPushNotificationConfig is refused: the bridge sends no push
	// notifications.
	TaskPushNotificationConfig json.RawMessage `json:"taskPushNotificationConfig,omitempty"`
}

// SendMessageRequest is the params of SendMessage and SendStreamingMessage.
type SendMessageRequest struct {
	Tenant        string                    `json:"tenant,omitempty"`
	Message       *Message                  `json:"message"`
	Configuration *SendMessageConfiguration `json:"configuration,omitempty"`
	Metadata      json.RawMessage           `json:"metadata,omitempty"`
}

// SendMessageResponse is the result of SendMessage: a task or a message.
type SendMessageResponse struct {
	Task    *Task    `json:"task,omitempty"`
	Message *Message `json:"message,omitempty"`
}

// TaskIDRequest is the params of GetTask, CancelTask and SubscribeToTask.
type TaskIDRequest struct {
	Tenant        string `json:"tenant,omitempty"`
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength,omitempty"`
}

// ListTasksRequest is the params of ListTasks.
type ListTasksRequest struct {
	ContextID        string `json:"contextId,omitempty"`
	Status           string `json:"status,omitempty"`
	PageSize         *int   `json:"pageSize,omitempty"`
	PageToken        string `json:"pageToken,omitempty"`
	HistoryLength    *int   `json:"historyLength,omitempty"`
	IncludeArtifacts bool   `json:"includeArtifacts,omitempty"`
}

// ListTasksResponse is the result of ListTasks.
type ListTasksResponse struct {
	Tasks         []Task `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int    `json:"pageSize"`
	TotalSize     int    `json:"totalSize"`
}

// AgentCard describes an A2A agent (specification §4.4.1, §8).
type AgentCard struct {
	Name                 string                    `json:"name"`
	Description          string                    `json:"description"`
	SupportedInterfaces  []AgentInterface          `json:"supportedInterfaces"`
	Provider             *AgentProvider            `json:"provider,omitempty"`
	Version              string                    `json:"version"`
	DocumentationURL     string                    `json:"documentationUrl,omitempty"`
	Capabilities         AgentCapabilities         `json:"capabilities"`
	SecuritySchemes      map[string]SecurityScheme `json:"securitySchemes,omitempty"`
	SecurityRequirements []SecurityRequirement     `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string                  `json:"defaultInputModes"`
	DefaultOutputModes   []string                  `json:"defaultOutputModes"`
	Skills               []AgentSkill              `json:"skills"`
	Signatures           []AgentCardSignature      `json:"signatures,omitempty"`
	IconURL              string                    `json:"iconUrl,omitempty"`
	// CardV03 are the members of an A2A 0.3 card (wire03.go).
	CardV03
}

// AgentInterface is a URL where the agent speaks a protocol binding.
type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
}

// AgentProvider is the organisation behind an agent.
type AgentProvider struct {
	URL          string `json:"url,omitempty"`
	Organization string `json:"organization"`
}

// AgentCapabilities are the optional protocol features an agent supports.
type AgentCapabilities struct {
	Streaming         *bool            `json:"streaming,omitempty"`
	PushNotifications *bool            `json:"pushNotifications,omitempty"`
	Extensions        []AgentExtension `json:"extensions,omitempty"`
}

// AgentExtension declares a protocol extension the agent uses.
type AgentExtension struct {
	URI         string          `json:"uri"`
	Description string          `json:"description,omitempty"`
	Required    bool            `json:"required,omitempty"`
	Params      json.RawMessage `json:"params,omitempty"`
}

// AgentSkill is something the agent can do.
type AgentSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
	InputModes  []string `json:"inputModes,omitempty"`
	OutputModes []string `json:"outputModes,omitempty"`
}

// AgentCardSignature is a JWS (RFC 7515) of a card, in flattened form
// without the payload.
type AgentCardSignature struct {
	Protected string          `json:"protected"`
	Signature string          `json:"signature"`
	Header    json.RawMessage `json:"header,omitempty"`
}

// SecurityScheme is a security scheme; the bridge declares HTTP bearer
// authentication only.
type SecurityScheme struct {
	HTTPAuth *HTTPAuthSecurityScheme `json:"httpAuthSecurityScheme,omitempty"`
	// SchemeV03 is the scheme in its A2A 0.3 form (wire03.go).
	SchemeV03
}

// HTTPAuthSecurityScheme is HTTP authentication (RFC 7235).
type HTTPAuthSecurityScheme struct {
	Description string `json:"description,omitempty"`
	Scheme      string `json:"scheme"`
}

// SecurityRequirement names the schemes (with scopes) a client must satisfy.
type SecurityRequirement struct {
	Schemes map[string]StringList `json:"schemes"`
}

// StringList is a list of strings.
type StringList struct {
	List []string `json:"list,omitempty"`
}
