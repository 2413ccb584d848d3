// Package node assembles and runs an lmosnode. It is the composition
// root: configuration, the home directory (identity key, config file,
// datastore: node/datastore), the libp2p host, and the wiring of the
// components below it — the directory of Things (node/directory), the
// private LMOS DHT (kad-dht, see package dht), gossipsub, the federation
// that publishes and learns Things through them (node/federation), groups
// (node/groupsvc), peer discovery (node/discovery), the node's own Things
// (node/own), the interaction engine and its transports (node/interact,
// node/fanout, node/gateway, node/wsgateway, node/mqttgw), and the local
// HTTP API (node/tdd, node/groupsvc/groupapi and the bindings, on
// node/httpapi). Nothing below node/ imports it; docs/architecture.md
// follows a publish and a call through the packages.
//
// # Lifecycle
//
// A Node is built by New, started by Start and stopped by Close. New
// validates the Config, loads or creates the identity key, opens the
// datastore and the directory, and builds the libp2p host, the DHT, the
// federation's Intake, the group service, gossipsub (Config.Gossip, with
// the group service's filters), the federation, the own Things, discovery,
// the interaction client, server and router and the gateways, binding no
// socket. The order breaks the loop between gossipsub, the group service
// and the federation: each part is complete when the next is built. Start
// makes the host listen, starts the federation, the group service,
// discovery (which dials the bootstrap peers), the event fan-out and the
// MQTT gateway (both following the own Things through the directory's
// events), bootstraps the DHT, serves the API and writes the api file.
// Close tears down in reverse order.
//
// The translation of Config into options of go-libp2p, kad-dht and
// go-libp2p-pubsub lives in one file, libp2p.go: the gossipsub message ID
// (SHA-256 of the data), StrictSign, the peer score parameters that
// penalise invalid announcements, the maximum message size. Close is idempotent
// and safe to call from any goroutine; every goroutine the node starts is
// owned by it and stopped by Close.
//
// # Home directory
//
//	config.json   Config (merged over DefaultConfig), mode 0600
//	identity.key  Ed25519 libp2p private key, mode 0600; the node refuses
//	              to start if group or others may read it
//	datastore/    pebble database (go-datastore interface, package
//	              node/datastore); every write but the soft state the
//	              network gives back is synced before it is acknowledged
//	api           URL of the running daemon's HTTP API (ReadAPIFile);
//	              removed on clean shutdown
//
// LoadConfig applies the environment over config.json: every leaf of
// Config is a Setting with its LMOS_… variable (settings.go; EnvName is
// the naming rule), listed in docs/config.md, which TestConfigReference
// keeps in sync. ExportIdentity and ImportIdentity back up and restore
// identity.key (keybackup.go).
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
// observe.go wires the node's metrics (package node/metrics, one
// registry per node, served at /metrics), its tracing (WithTracerProvider,
// or OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set), the /healthz and
// /readyz probes (Ready), and pprof (Config.Pprof); docs/operations.md
// describes them for operators.
//
// # HTTP API
//
// GET /api/v1/node returns NodeInfo; /healthz and /readyz answer without
// credentials. Errors are RFC 9457 problem details
// (application/problem+json, type proto.Problem, written by package
// httpapi); node/apiclient returns them as errors. Without Config.APIToken the
// API listens on a loopback address only and takes no credentials; with
// it, every request must carry "Authorization: Bearer <token>" and the API
// may listen on any address (httpapi.RequireBearer,
// httpapi.LoopbackHostOnly; docs/api.md#access).
package node
