package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	ds "github.com/ipfs/go-datastore"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lmosnode/lmosnode/node/api"
	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/metrics"
	"github.com/lmosnode/lmosnode/node/p2p"
	"github.com/lmosnode/lmosnode/node/version"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Observability (docs/operations.md): the node's Prometheus metrics
// (package metrics, one registry per node), its OpenTelemetry tracing,
// the health and readiness probes and pprof. Components get hooks, not
// the metrics package: interact.Instrument for interactions,
// httpapi.Observe for API requests, a gossipsub tracer, a counting
// wrapper of the DHT, and Sources read at scrape time.

// instrumentation is what interact.Instrument reports to: the node's
// metrics and, with tracing on, its tracer.
func (n *Node) instrumentation() interact.Instrumentation {
	ins := interact.Instrumentation{Ended: n.metrics.Interaction}
	if n.tracing != nil {
		ins.Tracer = n.tracing.Tracer("github.com/lmosnode/lmosnode/node/interact")
	}
	return ins
}

// observeSources registers what the metrics read at scrape time.
func (n *Node) observeSources() {
	n.metrics.Observe(metrics.Sources{
		Peers: func() []metrics.Peer {
			var out []metrics.Peer
			for _, p := range n.host.Network().Peers() {
				conns := n.host.Network().ConnsToPeer(p)
				if len(conns) == 0 {
					continue
				}
				out = append(out, connKind(conns[0]))
			}
			return out
		},
		RoutingTable: func() int { return n.dht.RoutingTable().Size() },
		DHTQueue:     n.fed.DHTQueue,
		Directory: func() metrics.DirectoryCounts {
			c := n.dir.Counts(func(p peer.ID) bool { return n.host.Network().Connectedness(p) == network.Connected })
			return metrics.DirectoryCounts{Own: c.Own, OwnGroup: c.OwnScoped, Learned: c.Learned, LearnedGroup: c.LearnedScoped, LearnedOnline: c.LearnedOnline}
		},
		Groups: func() int {
			count := 0
			for _, g := range n.groups.List() {
				if n.groups.MemberOf(g.ID) {
					count++
				}
			}
			return count
		},
		Refusals: func() map[string]int64 {
			r := map[string]int64{"sync_requests": n.fed.Refused(), "group_requests": n.groups.Refused(), "api_connections": 0}
			n.mu.Lock()
			if n.apiLn != nil {
				r["api_connections"] = n.apiLn.Refused()
			}
			n.mu.Unlock()
			return r
		},
	})
}

// connKind is a connection as lmos_peers counts it.
func connKind(c network.Conn) metrics.Peer {
	a := c.RemoteMultiaddr()
	p := metrics.Peer{Transport: "other"}
	if _, err := a.ValueForProtocol(ma.P_CIRCUIT); err == nil {
		p.Relayed = true
	}
	switch {
	case hasProtocol(a, ma.P_WS), hasProtocol(a, ma.P_WSS):
		p.Transport = "websocket"
	case hasProtocol(a, ma.P_QUIC_V1):
		p.Transport = "quic"
	case hasProtocol(a, ma.P_TCP):
		p.Transport = "tcp"
	}
	return p
}

func hasProtocol(a ma.Multiaddr, code int) bool {
	_, err := a.ValueForProtocol(code)
	return err == nil
}

// topicKind names the kind of a gossipsub topic for lmos_gossip_messages_total
// and lmos_gossip_received_bytes_total.
func topicKind(topic string) string {
	switch {
	case topic == lmosproto.TopicAnnounce:
		return "announce"
	case topic == lmosproto.TopicPresence:
		return "presence"
	case strings.HasPrefix(topic, lmosproto.TopicShardPrefix):
		// Records, short announcements and presence beats of one shard.
		return "shard"
	case strings.HasPrefix(topic, lmosproto.TopicGroupPrefix):
		return "group"
	case strings.HasPrefix(topic, lmosproto.TopicEventsPrefix):
		return "events"
	}
	return "other"
}

// tracingFromEnv returns an OpenTelemetry tracer provider exporting spans
// over OTLP/HTTP when the standard variables ask for it
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, and
// OTEL_SDK_DISABLED not "true"; the exporter reads the other
// OTEL_EXPORTER_OTLP_* variables, the resource OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES, the sampler OTEL_TRACES_SAMPLER), nil
// otherwise.
func tracingFromEnv(ctx context.Context) (*sdktrace.TracerProvider, error) {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, nil
	}
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: otlp exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "lmosnode"), attribute.String("service.version", version.Version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("tracing: resource: %w", err), exp.Shutdown(ctx))
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// Ready reports whether the node is ready to serve: started and not
// closing, its datastore answering, its host listening, connected once to
// a bootstrap peer (when Config.Bootstrap names any) and its API serving.
func (n *Node) Ready() api.Readiness {
	checks := map[string]string{}
	n.mu.Lock()
	started, closed, serving := n.started, n.closed, n.apiServing
	n.mu.Unlock()
	switch {
	case closed:
		checks["node"] = "closed"
	case !started:
		checks["node"] = "not started"
	default:
		checks["node"] = "ok"
	}
	checks["datastore"] = "ok"
	if closed {
		checks["datastore"] = "closed"
	} else if _, err := n.store.Get(context.Background(), ds.NewKey("/lmos/readyz")); err != nil && !errors.Is(err, ds.ErrNotFound) {
		checks["datastore"] = err.Error()
	}
	checks["host"] = "ok"
	if closed || len(n.host.Network().ListenAddresses()) == 0 {
		checks["host"] = "not listening"
	}
	checks["bootstrap"] = n.bootstrapCheck()
	checks["api"] = "ok"
	if !serving || closed {
		checks["api"] = "not serving"
	}
	ready := true
	for _, v := range checks {
		ready = ready && v == "ok"
	}
	return api.Readiness{Ready: ready, Checks: checks}
}

// bootstrapCheck is "ok" once the node has been connected to one of its
// bootstrap peers (or has none).
func (n *Node) bootstrapCheck() string {
	if len(n.cfg.Bootstrap) == 0 || n.bootstrapped.Load() {
		return "ok"
	}
	peers, err := p2p.BootstrapPeers(n.cfg)
	if err != nil { // impossible: validated
		return err.Error()
	}
	for _, ai := range peers {
		if n.host.Network().Connectedness(ai.ID) == network.Connected {
			n.bootstrapped.Store(true)
			return "ok"
		}
	}
	return fmt.Sprintf("not yet connected to any of %d bootstrap peers", len(peers))
}
