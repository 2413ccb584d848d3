// Package metrics defines every Prometheus metric of an lmosnode node, in
// one place, on one registry per node (not the process-global default, so
// that several nodes in one process keep their figures apart), and serves
// them (Handler). docs/operations.md lists them.
//
// Labels are low-cardinality by rule: transports, operations, statuses,
// reasons, route patterns; never a Thing id or a peer id.
//
// Components do not import this package: they expose small hooks (an
// observer function, a tracer) and the composition root, package node,
// connects them to a Metrics. What is cheaper to read than to count (peers,
// routing table, directory size) is read at scrape time through Sources.
package metrics
