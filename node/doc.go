// Package node assembles and runs an lmosnode. It is the composition root
// and nothing else: New builds every part from a config.Config and wires
// them, Start makes the node listen and serve, Close tears it down.
// Nothing below node/ imports it, and of the CLI only the commands that
// run a node (up, demo) do; docs/architecture.md follows a publish and a
// call through the packages, none of which climbs back into this one.
//
// What it builds, each from its own package: the home (node/homedir:
// identity key, API token, api file), the datastore (node/datastore), the
// libp2p host, the private LMOS DHT and gossipsub (node/p2p, the one
// translation of config.Config into their options), the directory of
// Things (node/directory), the federation that publishes and learns
// Things (node/federation), groups (node/groupsvc), the key records that
// retire node keys (node/rotation, keys.go), peer discovery
// (node/discovery), the node's own Things (node/own), the interaction
// engine and its router (node/interact), the transports and bridges
// (node/gateway, node/wsgateway, node/mqttgw, node/fanout,
// node/mcpbridge, node/a2abridge, node/agentsjson, node/aicatalog,
// node/agora, node/aitp, node/anp), and the local HTTP API (node/api,
// which mounts node/tdd, node/groupsvc/groupapi, node/trust/trustapi and
// the console). Programs talk to a running node's API with node/apiclient.
//
// # Lifecycle
//
// New validates the Config (filling the fallbacks of config.WithFallbacks),
// prepares the home and builds the parts in four stages: observability and
// identity; the network (datastore, host, directory, DHT); the services, in
// the order that breaks the loop between gossipsub, the group service and
// the federation (the intake first, then the group service, gossipsub with
// its filters, the federation, the own Things); and the surfaces over them.
// It binds no socket. Start makes the host listen, starts the federation,
// the group service, discovery, the event fan-out and the MQTT gateway,
// bootstraps the DHT, resumes MCP imports, serves the API and writes the
// api file. Close tears down in reverse order; it is idempotent and safe to
// call from any goroutine, and every goroutine the node starts is stopped
// by it.
//
// # Embedding a node
//
// A Go program that embeds a node uses: New and the options (WithLogger,
// WithTracerProvider, …), Start and Close; its names (PeerID, DIDKey,
// Addrs, APIAddr, APIToken, Info) and readiness (Ready); Register, to
// publish a Thing served by Go code, and Things for the node's own Things;
// Find, to look a capability up in the federation; Invoker, to call any
// Thing the node knows; Directory and Groups. Host, PubSub, MCP and
// MCPImports are there for programs that compose nodes in one process (the
// CLI's demo and its tests). See Example, ExampleNode_Find and
// ExampleNode_Register.
//
// # Logging
//
// The node logs through the *slog.Logger given with WithLogger. go-libp2p
// (gologshim), go-log/v2 users (kad-dht, go-ds-pebble) and users of the
// standard log package (zeroconf) log process-wide; their records are
// routed (package node/logroute) to the logger of the most recently opened
// Node that is still open, from WithLibp2pLogLevel (default warn) up.
//
// # Observability
//
// observe.go wires the node's metrics (package node/metrics, one registry
// per node), its tracing (WithTracerProvider, or OTLP when
// OTEL_EXPORTER_OTLP_ENDPOINT is set) and what /readyz reports (Ready);
// node/api serves /metrics, the probes and pprof; docs/operations.md
// describes them for operators.
package node
