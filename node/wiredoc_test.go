package node

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	pubsubpb "github.com/libp2p/go-libp2p-pubsub/pb"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/fanout"
	"github.com/lmosnode/lmosnode/node/federation"
	"github.com/lmosnode/lmosnode/node/groupsvc"
	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/p2p"
	"github.com/lmosnode/lmosnode/node/rotation"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// wireDoc is the wire specification another implementation follows.
const wireDoc = "../docs/wire.md"

// wireLimits maps the Code cell of each row of docs/wire.md's limits table
// that names a constant to the constant: an int (bytes or a count) or a
// time.Duration.
var wireLimits = map[string]any{
	"proto.MaxTDSize":                     lmosproto.MaxTDSize,
	"proto.MaxTDDepth":                    lmosproto.MaxTDDepth,
	"proto.MaxIDLength":                   lmosproto.MaxIDLength,
	"proto.MaxRecordSize":                 lmosproto.MaxRecordSize,
	"p2p.MaxMessageSize":                  p2p.MaxMessageSize,
	"proto.MaxMessageSize":                lmosproto.MaxMessageSize,
	"proto.MaxDepth":                      lmosproto.MaxDepth,
	"dht.MaxRecordAge":                    lmosdht.MaxRecordAge,
	"dht.MaxClockSkew":                    lmosdht.MaxClockSkew,
	"dht.RepublishInterval":               lmosdht.RepublishInterval,
	"directory.DefaultTTL":                directory.DefaultTTL,
	"directory.DefaultOfflineAfter":       directory.DefaultOfflineAfter,
	"config.DefaultOfflineTTL":            config.DefaultOfflineTTL,
	"config.DefaultMaxThingsPerPublisher": config.DefaultMaxThingsPerPublisher,
	"config.DefaultMaxBytesPerPublisher":  config.DefaultMaxBytesPerPublisher,
	"federation.DefaultPresenceInterval":  federation.DefaultPresenceInterval,
	"federation.MaxPresenceSize":          federation.MaxPresenceSize,
	"federation.MaxPresenceAge":           federation.MaxPresenceAge,
	"directory.DefaultTombstoneTTL":       directory.DefaultTombstoneTTL,
	"federation.MaxSyncRecords":           federation.MaxSyncRecords,
	"federation.MaxSyncBytes":             federation.MaxSyncBytes,
	"federation.SyncTimeout":              federation.SyncTimeout,
	"federation.SyncEvery":                federation.SyncEvery,
	"federation.SyncBurst":                federation.SyncBurst,
	"federation.MaxProviders":             federation.MaxProviders,
	"federation.LookupFresh":              federation.LookupFresh,
	"federation.MaxFindCapability":        federation.MaxFindCapability,
	"federation.MaxFindRecords":           federation.MaxFindRecords,
	"federation.MaxFindBytes":             federation.MaxFindBytes,
	"federation.FindTimeout":              federation.FindTimeout,
	"proto.ShardCount":                    lmosproto.ShardCount,
	"federation.DefaultShortBudget":       federation.DefaultShortBudget,
	"federation.MaxShortSize":             federation.MaxShortSize,
	"federation.ShardIdle":                federation.ShardIdle,
	"federation.FetchTimeout":             federation.FetchTimeout,
	"federation.FetchEvery":               federation.FetchEvery,
	"federation.FetchBurst":               federation.FetchBurst,
	"groups.MaxMessageSize":               groups.MaxMessageSize,
	"groups.MaxOpSize":                    groups.MaxOpSize,
	"groups.MaxLogOps":                    groups.MaxLogOps,
	"groups.MaxLogSize":                   groups.MaxLogSize,
	"groups.MaxPending":                   groups.MaxPending,
	"groups.MaxPostSize":                  groups.MaxPostSize,
	"groups.MaxInvitationSize":            groups.MaxInvitationSize,
	"groups.MaxTokenSize":                 groups.MaxTokenSize,
	"groups.MaxRoleLen":                   groups.MaxRoleLen,
	"groups.MaxNameLen":                   groups.MaxNameLen,
	"groupsvc.ServeBurst":                 groupsvc.ServeBurst,
	"groupsvc.ServeEvery":                 groupsvc.ServeEvery,
	"groupsvc.JoinTimeout":                groupsvc.JoinTimeout,
	"groupsvc.SyncTimeout":                groupsvc.SyncTimeout,
	"groupsvc.ResubscribeEvery":           groupsvc.ResubscribeEvery,
	"groupsvc.AntiEntropyEvery":           groupsvc.AntiEntropyEvery,
	"groupsvc.RepublishInterval":          groupsvc.RepublishInterval,
	"groupsvc.DefaultInviteTTL":           groupsvc.DefaultInviteTTL,
	"fanout.DefaultMaxEventSize":          fanout.DefaultMaxEventSize,
	"fanout.DefaultMaxAge":                fanout.DefaultMaxAge,
	"fanout.DefaultMaxSkew":               fanout.DefaultMaxSkew,
	"interact.DefaultFirstFrameTimeout":   interact.DefaultFirstFrameTimeout,
	"interact.DefaultWriteTimeout":        interact.DefaultWriteTimeout,
	"interact.DefaultDialTimeout":         interact.DefaultDialTimeout,
	"interact.DefaultActionTimeout":       interact.DefaultActionTimeout,
	"interact.SessionIdleTimeout":         interact.SessionIdleTimeout,
	"interact.DefaultIdleTimeout":         interact.DefaultIdleTimeout,
	"interact.DefaultMaxIdleStreams":      interact.DefaultMaxIdleStreams,
	"interact.DefaultMaxPeerInteractions": interact.DefaultMaxPeerInteractions,
	"proto.MaxKeyRecordSize":              lmosproto.MaxKeyRecordSize,
	"proto.MaxRevocationReason":           lmosproto.MaxRevocationReason,
	"rotation.MaxRecords":                 rotation.MaxRecords,
	"rotation.MaxAnswerSize":              rotation.MaxAnswerSize,
	"rotation.SyncTimeout":                rotation.SyncTimeout,
}

var (
	// limitRow is a row of the limits table: | what | value | code |.
	limitRow = regexp.MustCompile(`^\| ([^|]+) \| ([^|]+) \| (.+) \|$`)
	// constCell is a Code cell that names one constant: `pkg.Name`.
	constCell = regexp.MustCompile("^`([a-z0-9]+\\.[A-Za-z]+)`$")
)

// TestWireDoc keeps docs/wire.md in step with the code: every limit its
// table gives for a constant equals the constant, every constant of
// wireLimits is in the table, and the examples (message IDs, DHT keys,
// provider CIDs) are what the code computes.
func TestWireDoc(t *testing.T) {
	doc, err := os.ReadFile(wireDoc)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("limits", func(t *testing.T) {
		rows := limitsTable(t, doc)
		seen := map[string]bool{}
		for _, r := range rows {
			m := constCell.FindStringSubmatch(r.code)
			if m == nil {
				continue // a constant not exported to this test; named by file
			}
			want, ok := wireLimits[m[1]]
			if !ok {
				t.Errorf("%s: %s is not in wireLimits; add it so the row is checked", r.what, m[1])
				continue
			}
			seen[m[1]] = true
			got, err := parseLimit(r.value)
			if err != nil {
				t.Errorf("%s: %v", r.what, err)
				continue
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: docs/wire.md says %s (%v), %s is %v", r.what, r.value, got, m[1], want)
			}
		}
		for name := range wireLimits {
			if !seen[name] {
				t.Errorf("%s is missing from docs/wire.md's limits table", name)
			}
		}
	})
	t.Run("examples", func(t *testing.T) {
		raw, err := os.ReadFile("../proto/testdata/golden/proof/td-agent.secured.json")
		if err != nil {
			t.Fatal(err)
		}
		raw = bytes.TrimSpace(raw)
		rec, err := lmosproto.ParseRecord(raw)
		if err != nil {
			t.Fatal(err)
		}
		announce := p2p.MessageID(&pubsubpb.Message{Topic: ptr(lmosproto.TopicAnnounce), Data: raw})
		groupTopic := groups.Topic("bafkreiexample")
		post := p2p.MessageID(&pubsubpb.Message{Topic: &groupTopic, Data: []byte(`{"post":{"body":"hi","sent":"2026-11-21T10:00:00Z"}}`)})
		capCID := lmosdht.CapabilityCID("weather-forecast")
		want := []string{
			hex.EncodeToString([]byte(announce)),
			fmt.Sprintf("(%d bytes,", len(raw)),
			hex.EncodeToString([]byte(post)),
			rec.Publisher().String(),
			lmosdht.ThingKey(rec.Publisher(), rec.ThingID),
			lmosdht.ThingKey(rec.Publisher(), "https://x.example/a b"),
			capCID.String(),
			hex.EncodeToString(capCID.Hash()),
			lmosdht.TypeCID("lmos:Agent").String(),
			"(normalised `" + lmosdht.NormalizeVendor(rec.TD.Vendor()) + "`)",
			lmosdht.VendorCID(rec.TD.Vendor()).String(),
			"`" + lmosproto.MDNSServiceName + "`",
			fmt.Sprintf("`lmos:capability:weather-forecast`\n  is shard %d", lmosproto.ShardOf("lmos:capability:weather-forecast")),
			fmt.Sprintf("`lmos:type:lmos:Agent` shard %d", lmosproto.ShardOf("lmos:type:lmos:Agent")),
			"`" + fanout.TopicName(rec.Publisher(), "https://x.example/t 1")[len(lmosproto.TopicEventsPrefix)+len(rec.Publisher().String())+1:] + "`",
		}
		for _, w := range want {
			if !bytes.Contains(doc, []byte(w)) {
				t.Errorf("docs/wire.md does not contain %q, which the code computes for its example", w)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

type limit struct{ what, value, code string }

// limitsTable returns the rows of the table under "## Limits".
func limitsTable(t *testing.T, doc []byte) []limit {
	t.Helper()
	var rows []limit
	in := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Limits"
			continue
		}
		m := limitRow.FindStringSubmatch(line)
		if !in || m == nil || m[1] == "limit" || strings.HasPrefix(m[1], "---") {
			continue
		}
		rows = append(rows, limit{what: m[1], value: m[2], code: m[3]})
	}
	if len(rows) < len(wireLimits) {
		t.Fatalf("docs/wire.md: %d rows in the limits table, want at least %d", len(rows), len(wireLimits))
	}
	return rows
}

// parseLimit reads "1048576 B" or "64" as an int and "12 h", "5 min",
// "30 s", "250 ms" as a time.Duration.
func parseLimit(s string) (any, error) {
	num, unit, _ := strings.Cut(s, " ")
	n, err := strconv.Atoi(num)
	if err != nil {
		return nil, fmt.Errorf("value %q: %w", s, err)
	}
	switch unit {
	case "", "B":
		return n, nil
	case "ms":
		return time.Duration(n) * time.Millisecond, nil
	case "s":
		return time.Duration(n) * time.Second, nil
	case "min":
		return time.Duration(n) * time.Minute, nil
	case "h":
		return time.Duration(n) * time.Hour, nil
	}
	return nil, fmt.Errorf("value %q: unknown unit %q", s, unit)
}
