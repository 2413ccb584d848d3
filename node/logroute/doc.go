// Package logroute routes the process-wide logs of the libraries under
// the node into the slog handler of the node. go-libp2p logs through
// gologshim (slog); kad-dht and go-ds-pebble through go-log/v2 (zap);
// zeroconf (mDNS, DNS-SD) through the standard library's log package, whose
// "[zeroconf] …" lines become records of logger zeroconf. All three
// are process-wide, so the package installs one router for them, once,
// and every node registers its handler with it while it is open (Register);
// records go to the most recently registered handler still registered (in
// a daemon there is exactly one). With none registered they go to
// slog.Default(), from warn up.
//
// Per-subsystem levels of go-log (GOLOG_LOG_LEVEL) still filter go-log's
// zap loggers before their records reach the router.
package logroute
