package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// names returns the names of the lmos_ metric families m's registry
// describes.
func names(t *testing.T, m *Metrics) []string {
	t.Helper()
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		m.reg.Describe(ch)
		close(ch)
	}()
	re := regexp.MustCompile(`fqName: "(lmos_[a-z_]+)"`)
	var out []string
	for d := range ch {
		if s := re.FindStringSubmatch(d.String()); s != nil {
			out = append(out, s[1])
		}
	}
	slices.Sort(out)
	return out
}

func newWithSources() *Metrics {
	m := New()
	m.Observe(Sources{
		Peers:        func() []Peer { return []Peer{{Transport: "tcp"}, {Transport: "quic", Relayed: true}} },
		RoutingTable: func() int { return 3 },
		DHTQueue:     func() int { return 7 },
		Directory:    func() DirectoryCounts { return DirectoryCounts{Own: 1, Learned: 2, LearnedOnline: 2} },
		Groups:       func() int { return 1 },
		Refusals:     func() map[string]int64 { return map[string]int64{"sync_requests": 4} },
	})
	return m
}

// TestDocumented checks that docs/operations.md has a table row for every
// lmos_ metric and no row for a metric that does not exist, and that the
// Grafana dashboard queries only existing lmos_ metrics.
func TestDocumented(t *testing.T) {
	have := names(t, newWithSources())
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, s := range regexp.MustCompile("(?m)^\\| `(lmos_[a-z_]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		documented = append(documented, s[1])
	}
	slices.Sort(documented)
	if !slices.Equal(have, documented) {
		t.Errorf("docs/operations.md documents %v;\nthe registry has %v", documented, have)
	}

	raw, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	used := map[string]bool{}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range regexp.MustCompile(`lmos_[a-z_]+`).FindAllString(tg.Expr, -1) {
				name = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
				used[name] = true
				if !slices.Contains(have, name) {
					t.Errorf("dashboard panel %q queries %s, which does not exist", p.Title, name)
				}
			}
		}
	}
	for _, name := range have {
		if !used[name] {
			t.Errorf("the dashboard has no panel for %s", name)
		}
	}
}

// TestLabels checks the label values the recording methods produce: the
// method folded to a fixed set, the unrouted route named, the gossip
// reason with underscores.
func TestLabels(t *testing.T) {
	m := newWithSources()
	m.APIRequest("BREW", "", 401, time.Millisecond)
	m.APIRequest("GET", "/things/{id}", 200, time.Millisecond)
	m.Interaction(SideOwner, "libp2p", "readProperty", 200, time.Millisecond)
	m.GroupChange(true)
	m.DHTQuery("get", "not_found")
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "lmos_") || strings.HasSuffix(f.GetName(), "_seconds") {
			continue
		}
		for _, s := range f.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := s.GetGauge().GetValue() + s.GetCounter().GetValue()
			got = append(got, f.GetName()+"{"+strings.Join(labels, ",")+"} "+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	for _, want := range []string{
		"lmos_api_requests_total{method=other,route=none,status=401} 1",
		"lmos_api_requests_total{method=GET,route=/things/{id},status=200} 1",
		"lmos_interactions_total{operation=readProperty,side=owner,status=200,transport=libp2p} 1",
		"lmos_group_changes_total{membership=member} 1",
		"lmos_dht_queries_total{op=get,outcome=not_found} 1",
		"lmos_peers{path=direct,transport=tcp} 1",
		"lmos_peers{path=relayed,transport=quic} 1",
		"lmos_peers{path=direct,transport=websocket} 0",
		"lmos_dht_routing_table_peers{} 3",
		"lmos_dht_queue_records{} 7",
		"lmos_directory_things{origin=learned,scope=public} 2",
		"lmos_groups{} 1",
		"lmos_directory_things_online{} 2",
		"lmos_quota_refusals_total{quota=sync_requests} 4",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no sample %s in\n%s", want, strings.Join(got, "\n"))
		}
	}
}
