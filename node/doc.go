// Package node assembles and runs an lmosnode: configuration, the home
// directory (identity key, config file, datastore), the libp2p host and the
// local HTTP API.
//
// A Node is built by New, started by Start and stopped by Close. Close is
// idempotent and safe to call from any goroutine; every goroutine the node
// starts is owned by it and stopped by Close.
package node
