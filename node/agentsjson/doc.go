// Package agentsjson serves the node's agents.json (the Wildcard
// agents.json specification 0.1.0: OpenAPI 3 sources and flows over
// them) and imports the flows of other agents.json documents as Tools.
//
//	GET  /.well-known/agents.json                          the Things this node may see
//	GET  /agentsjson/sources/{publisher}/{id}/openapi.json  one Thing's OpenAPI document
//	POST /api/v1/agentsjson/imports                        import a document (lmosnode import agents-json)
//
// # Export
//
// Every Thing the node may see (Deps.Visible, the directory listing's
// rule: group-scoped Things only for members) that has an action or a
// readable property is one source: the OpenAPI 3.1 document of its WoT
// HTTP binding on this node, generated from its consumer view
// (Deps.ConsumerView, the TD with forms rewritten to point at this node,
// as the directory serves it). The source's path is the URL of that
// document, and the document is also embedded in the source (member
// "openapi", which the schema's additionalProperties allows) so that a
// client needs one request. Each action is an operation invoke_<name>
// (POST, the action's input as JSON request body, its output as the 200
// answer, 201 for a long-running invocation, problems as default) and
// each readable property an operation read_<name> (GET); the form's
// ?publisher= pin is a required query parameter whose enum and default
// are its one value. Each operation is one flow (id <source>_<operation>)
// with one action; an object input's members are the flow's parameters,
// each linked to the request body's member (parameters.x →
// requestBody.x), any other input the flow's request body. The node's
// own Things come first, then the others by id; the document holds at
// most Config.MaxThings Things and Config.MaxBytes bytes, and its
// description says how many it left out. Documents are rendered once per
// revision of the directory and of what this node may see (Refresh), kept
// in an httpapi.DocCache and served with an ETag and 304.
//
// # Import
//
// Handler.Import reads an agents.json (bounded, Client's timeout, no
// redirect to another host), finds each flow's operations in its
// sources' OpenAPI documents (embedded, or JSON or YAML at the source's
// path, relative to the document; local $refs of parameters followed)
// and publishes one lmos:Tool per flow, signed by this node, with one
// action "run" whose input is {"parameters": {…}, "requestBody": …} as
// the flow's fields say. Its backend (kind KindAgentsJSON, URL the
// document's URL with the flow id as fragment, persisted with the Thing)
// runs the flow: its actions' operations in order, each request built
// from the flow's links (origin the flow's fields or an earlier action's
// response, target parameters.NAME in the operation's path, query,
// header or cookie, or requestBody[.PATH]); a flow without links passes
// parameters by name. The answer of the last operation is the output; an
// operation that answers other than 2xx fails the invocation with 502.
// After a restart the backend reads the document again at its first
// call. Security schemes of the imported APIs are not applied: the
// calls carry no credentials.
package agentsjson
