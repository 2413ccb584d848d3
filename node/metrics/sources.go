package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Sources are the figures read at scrape time rather than counted: each
// function is called once per scrape and must be cheap and safe for
// concurrent use. A nil function leaves its metric out.
type Sources struct {
	// Peers returns the connected peers, each once, by the transport of
	// its first connection ("tcp", "quic", "websocket", "other") and
	// whether that connection is relayed.
	Peers func() []Peer
	// RoutingTable returns the number of peers in the DHT routing table.
	RoutingTable func() int
	// DHTQueue returns the number of own records waiting to be put into
	// the DHT (with their provider records), failed ones included.
	DHTQueue func() int
	// Directory returns the number of live Things held, by origin.
	Directory func() DirectoryCounts
	// Groups returns the number of groups this node is a member of.
	Groups func() int
	// Refusals returns, by quota, how many requests or connections were
	// refused so far for being over it (a counter: it never decreases).
	Refusals func() map[string]int64
}

// Peer is one connected peer as lmos_peers counts it.
type Peer struct {
	Transport string
	Relayed   bool
}

// DirectoryCounts are the live Things of a directory by origin: the
// node's own and learned ones, each public or restricted to groups.
type DirectoryCounts struct {
	Own, OwnGroup, Learned, LearnedGroup int
	// LearnedOnline are the learned Things whose publisher is connected.
	LearnedOnline int
}

// Observe registers the collector reading s. Call it once per node.
func (m *Metrics) Observe(s Sources) {
	m.reg.MustRegister(sourceCollector{s})
}

var (
	peersDesc = prometheus.NewDesc(namespace+"_peers", "Connected peers, by the transport of the first connection and its path (direct, relayed).",
		[]string{"transport", "path"}, nil)
	routingDesc  = prometheus.NewDesc(namespace+"_dht_routing_table_peers", "Peers in the DHT routing table.", nil, nil)
	dhtQueueDesc = prometheus.NewDesc(namespace+"_dht_queue_records", "Own records waiting to be put into the DHT with their provider records, failed ones included.", nil, nil)
	dirDesc      = prometheus.NewDesc(namespace+"_directory_things", "Live Things in the directory, by origin (own, learned) and scope (public, group).",
		[]string{"origin", "scope"}, nil)
	onlineDesc = prometheus.NewDesc(namespace+"_directory_things_online", "Learned Things whose publisher is connected to this node now.", nil, nil)
	groupsDesc = prometheus.NewDesc(namespace+"_groups", "Groups this node is a member of.", nil, nil)
	quotaDesc  = prometheus.NewDesc(namespace+"_quota_refusals_total", "Requests or connections refused for being over a quota, by quota (api_connections, sync_requests, group_requests).",
		[]string{"quota"}, nil)
)

type sourceCollector struct{ s Sources }

func (c sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- peersDesc
	ch <- routingDesc
	ch <- dhtQueueDesc
	ch <- dirDesc
	ch <- onlineDesc
	ch <- groupsDesc
	ch <- quotaDesc
}

func (c sourceCollector) Collect(ch chan<- prometheus.Metric) {
	if c.s.Peers != nil {
		type key struct {
			transport string
			relayed   bool
		}
		counts := map[key]int{}
		// Every combination is reported, zeros included, so that a
		// dashboard's series exist before the first peer.
		for _, tr := range []string{"tcp", "quic", "websocket"} {
			counts[key{tr, false}] = 0
			counts[key{tr, true}] = 0
		}
		for _, p := range c.s.Peers() {
			counts[key{p.Transport, p.Relayed}]++
		}
		for k, n := range counts {
			path := "direct"
			if k.relayed {
				path = "relayed"
			}
			ch <- prometheus.MustNewConstMetric(peersDesc, prometheus.GaugeValue, float64(n), k.transport, path)
		}
	}
	if c.s.RoutingTable != nil {
		ch <- prometheus.MustNewConstMetric(routingDesc, prometheus.GaugeValue, float64(c.s.RoutingTable()))
	}
	if c.s.DHTQueue != nil {
		ch <- prometheus.MustNewConstMetric(dhtQueueDesc, prometheus.GaugeValue, float64(c.s.DHTQueue()))
	}
	if c.s.Directory != nil {
		d := c.s.Directory()
		for _, v := range []struct {
			origin, scope string
			n             int
		}{{"own", "public", d.Own}, {"own", "group", d.OwnGroup}, {"learned", "public", d.Learned}, {"learned", "group", d.LearnedGroup}} {
			ch <- prometheus.MustNewConstMetric(dirDesc, prometheus.GaugeValue, float64(v.n), v.origin, v.scope)
		}
		ch <- prometheus.MustNewConstMetric(onlineDesc, prometheus.GaugeValue, float64(d.LearnedOnline))
	}
	if c.s.Groups != nil {
		ch <- prometheus.MustNewConstMetric(groupsDesc, prometheus.GaugeValue, float64(c.s.Groups()))
	}
	if c.s.Refusals != nil {
		for quota, n := range c.s.Refusals() {
			ch <- prometheus.MustNewConstMetric(quotaDesc, prometheus.CounterValue, float64(n), quota)
		}
	}
}
