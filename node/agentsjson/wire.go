package agentsjson

import "encoding/json"

// Version is the version of the agents.json specification the node
// writes (agentsJson).
const Version = "0.1.0"

// Doc is an agents.json document (agentsJson.schema.json).
type Doc struct {
	AgentsJSON string   `json:"agentsJson"`
	Info       Info     `json:"info"`
	Sources    []Source `json:"sources"`
	Overrides  []any    `json:"overrides,omitempty"`
	Flows      []Flow   `json:"flows"`
}

// Info is the document's info member.
type Info struct {
	Title       string `json:"title"`
	Version     string `json:"version"`
	Description string `json:"description"`
}

// Source is an API of the document: the URL of its OpenAPI document
// (Path) and, in the documents this node writes, the OpenAPI document
// itself (OpenAPI, an extension member, so that a client needs one
// request).
type Source struct {
	ID          string          `json:"id"`
	Path        string          `json:"path"`
	Description string          `json:"description,omitempty"`
	OpenAPI     json.RawMessage `json:"openapi,omitempty"`
}

// Flow is a flow: actions (operations of sources) and the links between
// its fields and the actions' fields.
type Flow struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Actions     []Action `json:"actions"`
	Links       []Link   `json:"links,omitempty"`
	Fields      Fields   `json:"fields"`
}

// Action is one operation of a source in a flow.
type Action struct {
	ID          string `json:"id"`
	SourceID    string `json:"sourceId"`
	OperationID string `json:"operationId"`
}

// Link moves a value from Origin to Target. An Origin whose ActionID is
// the flow's id (or empty) reads the flow's fields.
type Link struct {
	Origin LinkEnd `json:"origin"`
	Target LinkEnd `json:"target"`
}

// LinkEnd is one end of a link: a dotted field path in an action (or in
// the flow).
type LinkEnd struct {
	ActionID  string `json:"actionId"`
	FieldPath string `json:"fieldPath"`
}

// Fields are a flow's interface: its parameters, request body and
// success response.
type Fields struct {
	Parameters  []Parameter  `json:"parameters"`
	RequestBody *RequestBody `json:"requestBody,omitempty"`
	Responses   Responses    `json:"responses"`
}

// Parameter is an input of a flow.
type Parameter struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
	Type        string `json:"type,omitempty"`
}

// RequestBody is a flow's request body, by media type.
type RequestBody struct {
	Content  map[string]MediaType `json:"content,omitempty"`
	Required bool                 `json:"required,omitempty"`
}

// MediaType is the schema of a request body of one media type.
type MediaType struct {
	Schema json.RawMessage `json:"schema,omitempty"`
}

// Responses is a flow's success response schema.
type Responses struct {
	Success json.RawMessage `json:"success"`
}
