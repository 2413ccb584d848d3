package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// namespace prefixes every metric of ours.
const namespace = "lmos"

// Sides of an interaction.
const (
	// SideConsumer counts interactions this node's consumers opened (on
	// any Thing, own or remote).
	SideConsumer = "consumer"
	// SideOwner counts interactions this node's own Things served (for
	// local or remote consumers).
	SideOwner = "owner"
)

// latencyBuckets spans a local call (sub-millisecond) to a slow backend
// behind a relay (tens of seconds).
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// Metrics is the registry of one node with the metrics the node's
// components update. It is safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	interactions       *prometheus.CounterVec
	interactionSeconds *prometheus.HistogramVec
	apiRequests        *prometheus.CounterVec
	apiSeconds         *prometheus.HistogramVec
	gossip             *prometheus.CounterVec
	gossipBytes        *prometheus.CounterVec
	dhtQueries         *prometheus.CounterVec
	groupOps           *prometheus.CounterVec
}

// New returns the metrics of one node on a fresh registry, with the Go
// runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		interactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "interactions_total",
			Help: "Interactions ended, by side (consumer: opened by this node's consumers; owner: served by this node's Things), transport, operation (the LMOS request type) and status (HTTP-style code of the terminal message; 200 for a normal end).",
		}, []string{"side", "transport", "operation", "status"}),
		interactionSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "interaction_duration_seconds",
			Help:    "Time from the request to the terminal message (or the consumer's close) of an interaction, by side, transport and operation.",
			Buckets: latencyBuckets,
		}, []string{"side", "transport", "operation"}),
		apiRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "api_requests_total",
			Help: "HTTP API requests answered, by method, route pattern and status code.",
		}, []string{"method", "route", "status"}),
		apiSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "api_request_duration_seconds",
			Help:    "HTTP API request duration (for event streams and WebSockets: their whole life), by method and route pattern.",
			Buckets: latencyBuckets,
		}, []string{"method", "route"}),
		gossip: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "gossip_messages_total",
			Help: "Gossipsub messages received, by topic kind (announce, group, events, other), outcome (delivered, duplicate, rejected) and, for a rejection, gossipsub's reason (validation_failed, validation_ignored, …).",
		}, []string{"topic", "outcome", "reason"}),
		gossipBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "gossip_received_bytes_total",
			Help: "Bytes of gossipsub message data received (delivered or duplicate, not rejected), by topic kind (announce, presence, shard, group, events, other): what a node hears, without the RPC framing and control messages.",
		}, []string{"topic", "outcome"}),
		dhtQueries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "dht_queries_total",
			Help: "DHT queries this node made, by operation (get, put, provide, find_providers, find_peer) and outcome (ok, not_found, error).",
		}, []string{"op", "outcome"}),
		groupOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "group_changes_total",
			Help: "Changes to groups this node holds (operations added to a group's log, a burst counted once), by whether this node is a member afterwards (member, not_member).",
		}, []string{"membership"}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.interactions, m.interactionSeconds, m.apiRequests, m.apiSeconds,
		m.gossip, m.gossipBytes, m.dhtQueries, m.groupOps,
	)
	return m
}

// Registry returns the node's registry: libraries that take a
// prometheus.Registerer (go-libp2p) register their metrics there.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text (or OpenMetrics)
// exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true})
}

// Interaction records one ended interaction.
func (m *Metrics) Interaction(side, transport, operation string, status int, d time.Duration) {
	m.interactions.WithLabelValues(side, transport, operation, strconv.Itoa(status)).Inc()
	m.interactionSeconds.WithLabelValues(side, transport, operation).Observe(d.Seconds())
}

// APIRequest records one answered API request; route is the pattern that
// matched ("" when none did: the request was refused before routing).
func (m *Metrics) APIRequest(method, route string, status int, d time.Duration) {
	if route == "" {
		route = "none"
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
	default:
		method = "other" // any string a client sends would be a label value
	}
	m.apiRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.apiSeconds.WithLabelValues(method, route).Observe(d.Seconds())
}

// DHTQuery records one DHT query this node made.
func (m *Metrics) DHTQuery(op, outcome string) {
	m.dhtQueries.WithLabelValues(op, outcome).Inc()
}

// GroupChange records a change to a group's log.
func (m *Metrics) GroupChange(member bool) {
	l := "not_member"
	if member {
		l = "member"
	}
	m.groupOps.WithLabelValues(l).Inc()
}
