// Package apiclient is the one client of a running node's local HTTP API
// (docs/api.md): the directory's admin routes and listing (node/tdd), the
// groups (node/groupsvc/groupapi), the trust list (node/trust/trustapi),
// the MCP and A2A imports (node/mcpbridge, node/a2abridge) and the node's
// info (node/api). The CLI and the tests talk to a node through it.
//
// Each route has a typed method; all of them go through one request
// function, so every call encodes, bounds and decodes alike: a body is
// sent as JSON (a json.RawMessage as it is), a success's JSON answer is
// decoded into the method's result, and any other answer is returned as
// the RFC 9457 problem it carries, a *proto.Problem (errors.As finds it;
// an answer that is not a problem gives one with its status). The wire
// types are those the handlers declare, so both ends speak one shape.
//
// The node-info and trust methods name the request's method and URL before
// every error ("GET http://127.0.0.1:5080/api/v1/node: …"), as the CLI
// has always printed their failures; the others return the problem alone
// (a failure of the client itself names method and path).
//
// A Client needs the API's base URL, as the node's api file records it,
// and an *http.Client that carries the API token if the node has one
// (httpapi.BearerClient).
package apiclient
