// Package wandelay is the WAN lab's link emulator (scripts/lab.sh wan): a
// userspace stand-in for `tc netem` on kernels without sch_netem.
//
// The lab routes every packet between its namespaces through one router
// namespace, whose FORWARD chain hands each IPv4 packet to a netfilter
// queue (iptables -j NFQUEUE). A Shaper reads that queue and issues each
// packet's verdict:
//
//   - it drops a packet with probability Config.Loss;
//   - it accepts every other packet after the one-way delay of its
//     address pair, half of Config.PairRTT, which is a deterministic hash of
//     the two addresses spread uniformly over [RTTMin, RTTMax]: constant per
//     pair, the same both ways.
//
// Packets of one direction of one pair keep their order: each direction
// has its own FIFO lane, and with a constant delay FIFO order is due order.
// Only IPv4 headers are copied to userspace (the verdict refers to the
// packet the kernel holds). Nothing fails open: a packet the queue has no
// room for is dropped by the kernel and counted in
// /proc/net/netfilter/nfnetlink_queue, which the command reports.
//
// It is lab tooling, never linked into lmosnode. cmd/wandelay runs it.
package wandelay
