package fanout

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func newPeerID(t *testing.T) peer.ID {
	t.Helper()
	_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func eventData(t *testing.T, thingID, name string, data any, ts time.Time, edit func(*lmosproto.Message)) []byte {
	t.Helper()
	m := lmosproto.NewMessage(thingID, lmosproto.MsgEvent)
	m.Name, m.CorrelationID = name, lmosproto.NewMessage("", "").MessageID
	v, err := lmosproto.ValueOf(data)
	if err != nil {
		t.Fatal(err)
	}
	m.Data, m.Timestamp = v, lmosproto.FormatTimestamp(ts)
	if edit != nil {
		edit(m)
	}
	b, err := lmosproto.JSON.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestValidator(t *testing.T) {
	owner, other := newPeerID(t), newPeerID(t)
	const thing = "urn:example:sensor"
	now := time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)
	cfg := Config{MaxEventSize: 1024}.withDefaults()
	good := eventData(t, thing, "tick", 1, now, nil)
	tests := []struct {
		name string
		from peer.ID
		data []byte
		want pubsub.ValidationResult
		err  error
	}{
		{"accepted", owner, good, pubsub.ValidationAccept, nil},
		{"slightly old", owner, eventData(t, thing, "tick", 1, now.Add(-4*time.Minute), nil), pubsub.ValidationAccept, nil},
		{"slightly ahead", owner, eventData(t, thing, "tick", 1, now.Add(20*time.Second), nil), pubsub.ValidationAccept, nil},
		{"forged by another peer", other, good, pubsub.ValidationReject, ErrNotOwner},
		{"too large", owner, eventData(t, thing, "tick", strings.Repeat("x", 2000), now, nil), pubsub.ValidationReject, ErrTooLarge},
		{"not JSON", owner, []byte("\xa1\x01\x02"), pubsub.ValidationReject, ErrBadEvent},
		{"not an event", owner, eventData(t, thing, "tick", 1, now, func(m *lmosproto.Message) {
			m.Type, m.Status, m.Data = lmosproto.MsgActionStatus, lmosproto.ActionRunning, lmosproto.Value{}
		}), pubsub.ValidationReject, ErrBadEvent},
		{"no timestamp", owner, eventData(t, thing, "tick", 1, now, func(m *lmosproto.Message) { m.Timestamp = "" }), pubsub.ValidationReject, ErrBadEvent},
		{"another thing", owner, eventData(t, "urn:example:other", "tick", 1, now, nil), pubsub.ValidationReject, ErrWrongThing},
		{"stale", owner, eventData(t, thing, "tick", 1, now.Add(-6*time.Minute), nil), pubsub.ValidationReject, ErrStale},
		{"future", owner, eventData(t, thing, "tick", 1, now.Add(time.Minute), nil), pubsub.ValidationReject, ErrFuture},
		{"replay", owner, good, pubsub.ValidationIgnore, ErrReplay},
	}
	v := newValidator(owner, thing, cfg, func() time.Time { return now })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, res, err := v.check(tt.from, tt.data)
			if res != tt.want || !errors.Is(err, tt.err) {
				t.Fatalf("got %v, %v; want %v, %v", res, err, tt.want, tt.err)
			}
			if err != nil && !strings.Contains(err.Error(), thing) {
				t.Errorf("error %q does not name the thing", err)
			}
			if (m != nil) != (res == pubsub.ValidationAccept) {
				t.Errorf("message %v with result %v", m, res)
			}
		})
	}
}

func TestTopicName(t *testing.T) {
	p := newPeerID(t)
	for id, want := range map[string]string{
		"urn:example:weather":   "urn:example:weather",
		"https://x.example/t 1": "https:%2F%2Fx.example%2Ft%201",
		"urn:a/b?c=d#e":         "urn:a%2Fb%3Fc%3Dd%23e",
		"urn:ünïcode~ok_-.":     "urn:%C3%BCn%C3%AFcode~ok_-.",
		"urn:percent%2Fliteral": "urn:percent%252Fliteral",
	} {
		topic := TopicName(p, id)
		if topic != lmosproto.TopicEventsPrefix+p.String()+"/"+want {
			t.Errorf("TopicName(%q) = %q, want suffix %q", id, topic, want)
		}
		pub, esc, err := ParseTopic(topic)
		if err != nil || pub != p || esc != want {
			t.Errorf("ParseTopic(%q) = %s, %q, %v", topic, pub, esc, err)
		}
	}
	for _, bad := range []string{"/lmos/1/announce", lmosproto.TopicEventsPrefix + "notapeer/x", lmosproto.TopicEventsPrefix + p.String(), lmosproto.TopicEventsPrefix + p.String() + "/"} {
		if _, _, err := ParseTopic(bad); err == nil {
			t.Errorf("ParseTopic(%q) succeeded", bad)
		}
	}
}

// FuzzValidator feeds arbitrary data to the validator: it never panics,
// and what it accepts is an event of its Thing.
func FuzzValidator(f *testing.F) {
	now := time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)
	owner := peer.ID("\x00\x04test") // identity multihash; never decoded here
	const thing = "urn:example:sensor"
	m := lmosproto.NewMessage(thing, lmosproto.MsgEvent)
	m.Name, m.CorrelationID, m.Data, m.Timestamp = "tick", m.MessageID, lmosproto.StringValue("x"), lmosproto.FormatTimestamp(now)
	seed, _ := lmosproto.JSON.Marshal(m)
	f.Add(seed)
	f.Add([]byte(`{"thingID":"urn:example:sensor","messageType":"event"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v := newValidator(owner, thing, Config{}.withDefaults(), func() time.Time { return now })
		got, res, err := v.check(owner, data)
		if res == pubsub.ValidationAccept {
			if err != nil || got == nil || got.Type != lmosproto.MsgEvent || got.ThingID != thing {
				t.Fatalf("accepted %v, %v", got, err)
			}
		} else if err == nil {
			t.Fatalf("result %v without an error", res)
		}
	})
}
