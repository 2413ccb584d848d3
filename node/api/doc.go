// Package api is the node's local HTTP API as one surface: the mux that
// mounts every route (the directory API, the WoT HTTP binding, groups,
// trust, MCP, A2A, WebSocket, the console), the access guards in front of
// it, the server's limits, and the node's own routes (node info, probes,
// metrics). The handlers of each surface live beside what they serve
// (node/tdd, node/gateway, node/groupsvc/groupapi, node/trust/trustapi,
// …); node/apiclient is the one client of all of them.
package api
