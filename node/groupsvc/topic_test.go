package groupsvc

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pubsubpb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/federation"
	"github.com/lmosnode/lmosnode/node/topicval"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

var update = flag.Bool("update", false, "rewrite testdata/topic/*.golden from the current code")

// topicT0 is the time of the fixture group's genesis.
var topicT0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// actorNames are the peers of the fixture group: alice founded it (its
// admin), bob is the node under test and erin are members, dave was a
// member and was removed, carol is an outsider.
var actorNames = []string{"alice", "bob", "carol", "dave", "erin"}

// topicActor is a peer with a deterministic key.
type topicActor struct {
	key ed25519.PrivateKey
	id  peer.ID
}

// topicFixture is a group whose log is the same at every run (fixed keys,
// times and genesis nonce), and the Service of bob's node that checks
// messages on its topic.
type topicFixture struct {
	actors map[string]topicActor
	// ops are the fixture's operations by name: genesis, add-bob,
	// add-erin, add-dave, remove-dave (the log, in this order), and
	// unsent, a rename alice signed on that log that bob never got.
	ops     map[string]*groups.Op
	groupID string
	svc     *Service
	hook    *recordHook
	held    *lmosproto.Record // the record the hook holds at the start
}

var fixtureLog = []string{"genesis", "add-bob", "add-erin", "add-dave", "remove-dave"}

func newTopicFixture(t testing.TB) *topicFixture {
	t.Helper()
	f := &topicFixture{actors: map[string]topicActor{}, ops: map[string]*groups.Op{}}
	for _, name := range actorNames {
		seed := sha256.Sum256([]byte("groupsvc topic test " + name))
		key := ed25519.NewKeyFromSeed(seed[:])
		id, err := lmosproto.PeerIDFromEd25519(key.Public().(ed25519.PublicKey))
		if err != nil {
			t.Fatal(err)
		}
		f.actors[name] = topicActor{key, id}
	}
	// groups.Genesis draws a random nonce; the fixture's is fixed.
	alice := f.actors["alice"]
	signed, err := lmosproto.SignDocument([]byte(`{"type":"lmos:GroupOp","kind":"genesis","name":"pumps","nonce":"groupsvc-topic-fixture"}`), alice.key, topicT0)
	if err != nil {
		t.Fatal(err)
	}
	if f.ops["genesis"], err = groups.ParseOp(signed); err != nil {
		t.Fatal(err)
	}
	l, err := groups.NewLog(f.ops["genesis"])
	if err != nil {
		t.Fatal(err)
	}
	f.groupID = l.ID()
	step := func(name string, d groups.Draft, minute int, add bool) {
		op, err := l.Sign(alice.key, d, topicT0.Add(time.Duration(minute)*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if add {
			if _, err := l.Add(op); err != nil {
				t.Fatal(err)
			}
		}
		f.ops[name] = op
	}
	step("add-bob", groups.Draft{Kind: groups.KindAdd, Peer: f.actors["bob"].id}, 1, true)
	step("add-erin", groups.Draft{Kind: groups.KindAdd, Peer: f.actors["erin"].id}, 2, true)
	step("add-dave", groups.Draft{Kind: groups.KindAdd, Peer: f.actors["dave"].id}, 3, true)
	step("remove-dave", groups.Draft{Kind: groups.KindRemove, Peer: f.actors["dave"].id}, 4, true)
	step("unsent", groups.Draft{Kind: groups.KindRename, Name: "pumps (unsent)"}, 5, false)

	bob := f.actors["bob"]
	priv, err := crypto.UnmarshalEd25519PrivateKey(bob.key)
	if err != nil {
		t.Fatal(err)
	}
	// No listen addresses: the host dials only when a held operation
	// makes the Service ask its forwarder for the log, and it knows no
	// address of any peer.
	h, err := libp2p.New(libp2p.Identity(priv), libp2p.NoListenAddrs, libp2p.DisableRelay(), libp2p.DisableMetrics())
	if err != nil {
		t.Fatal(err)
	}
	// The Thing hook holds erin's record of urn:example:pump at lmos:seq 2.
	held, err := lmosproto.SignDocument(f.resolveDoc(t, []byte(`{
		"@context": ["https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
		"id": "urn:example:pump", "title": "Pump", "lmos:groups": ["$GROUP"], "lmos:seq": 2,
		"securityDefinitions": {"nosec": {"scheme": "nosec"}}, "security": "nosec"}`)), f.actors["erin"].key, topicT0)
	if err != nil {
		t.Fatal(err)
	}
	if f.held, err = lmosproto.ParseRecord(held); err != nil {
		t.Fatal(err)
	}
	f.hook = &recordHook{self: bob.id, now: func() time.Time { return topicT0.Add(time.Hour) }}
	f.svc, err = New(Deps{
		Host: h, Key: bob.key, Datastore: dssync.MutexWrap(ds.NewMapDatastore()),
		Things: f.hook,
	}, Config{}, WithClock(func() time.Time { return topicT0.Add(time.Hour) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.svc.Close(); err != nil {
			t.Error(err)
		}
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// group returns a fresh copy of the fixture group as bob's node holds it,
// and resets the Thing hook to hold f.held only.
func (f *topicFixture) group(t testing.TB) *group {
	t.Helper()
	l, err := groups.NewLog(f.ops["genesis"])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range fixtureLog[1:] {
		if _, err := l.Add(f.ops[name]); err != nil {
			t.Fatal(err)
		}
	}
	g := &group{id: l.ID(), log: l, subs: map[*postSub]struct{}{}}
	g.refresh()
	f.hook.reset(t, f.held)
	return g
}

// recordHook is the node's Thing hook: the federation's Intake
// (AcceptScoped) over a fresh in-memory directory of bob's node that holds
// the fixture's record, as node.New wires it; it notes what it took.
type recordHook struct {
	self peer.ID
	now  func() time.Time

	mu     sync.Mutex
	intake *federation.Intake
	took   []string
}

func (h *recordHook) reset(t testing.TB, held *lmosproto.Record) {
	t.Helper()
	dir, err := directory.Open(directory.Deps{Datastore: dssync.MutexWrap(ds.NewMapDatastore()), Self: h.self}, directory.Config{}, directory.WithClock(h.now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dir.Close() })
	if _, err := dir.Put(held, nil); err != nil {
		t.Fatal(err)
	}
	intake, err := federation.NewIntake(federation.IntakeDeps{Directory: dir, Self: h.self, Validator: lmosdht.ThingValidator{Now: h.now}})
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.intake, h.took = intake, nil
}

func (h *recordHook) ValidateScoped(ctx context.Context, from peer.ID, group string, raw []byte) (pubsub.ValidationResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	res, err := h.intake.ValidateScoped(ctx, from, group, raw)
	if res != pubsub.ValidationAccept {
		return res, err
	}
	rec, err := lmosproto.ParseRecord(raw)
	if err != nil {
		return pubsub.ValidationReject, err
	}
	h.took = append(h.took, fmt.Sprintf("%s from %s, lmos:seq %d, tombstone %v", rec.ThingID, from, rec.Seq, rec.Tombstone()))
	return pubsub.ValidationAccept, nil
}

func (h *recordHook) taken() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.took)
}

// topicInput is one golden input: a message on the fixture group's topic.
//
// Strings in data and in the documents to sign are placeholders: "$GROUP"
// (the group ID), "$HEAD" (the ID of the log's head, remove-dave),
// "$UNSENT" (the ID of the unsent op), "$alice"… (peer IDs), "$op:NAME"
// (the signed fixture op NAME, as an object) and "$signed:NAME" (the
// document NAME of sign, signed, as an object).
type topicInput struct {
	// About says what the case shows.
	About string `json:"about"`
	// From is the author (gossipsub StrictSign "from"): an actor's name,
	// or "" for a message without a valid author.
	From string `json:"from"`
	// Local marks the node's own message (received from itself).
	Local bool `json:"local,omitempty"`
	// Data is the message; Text, if set, is the message bytes verbatim.
	Data json.RawMessage `json:"data,omitempty"`
	Text *string         `json:"text,omitempty"`
	// Sign are documents to sign for "$signed:NAME".
	Sign map[string]signSpec `json:"sign,omitempty"`
}

// signSpec is a document that an actor signs at topicT0 + Minute minutes;
// Tamper's members then replace the signed document's (the proof no longer
// verifies).
type signSpec struct {
	Signer   string          `json:"signer"`
	Minute   int             `json:"minute"`
	Document json.RawMessage `json:"document"`
	Tamper   map[string]any  `json:"tamper,omitempty"`
}

// topicVerdict is the golden output: what the topic validator made of
// the message.
type topicVerdict struct {
	Verdict string `json:"verdict"`
	Error   string `json:"error,omitempty"`
	// Delivered is the post that local subscribers get.
	Delivered *Received `json:"delivered,omitempty"`
	// Op says what became of an operation: "added", "held" or "".
	Op string `json:"op,omitempty"`
	// Thing is what the Thing hook took.
	Thing []string `json:"thing,omitempty"`
	// State is the group's state after the message, when it changed.
	State *stateSummary `json:"state,omitempty"`
}

type stateSummary struct {
	Name      string            `json:"name"`
	Dissolved bool              `json:"dissolved,omitempty"`
	Members   map[string]string `json:"members"` // name → role
}

func (f *topicFixture) summary(st groups.State) stateSummary {
	s := stateSummary{Name: st.Name, Dissolved: st.Dissolved, Members: map[string]string{}}
	for _, name := range actorNames {
		if m, ok := st.Members[f.actors[name].id]; ok {
			s.Members[name] = m.Role
		}
	}
	return s
}

// resolve replaces the placeholders of in's data and returns the message
// bytes.
func (f *topicFixture) resolve(t testing.TB, in *topicInput) []byte {
	t.Helper()
	if in.Text != nil {
		return []byte(*in.Text)
	}
	signed := map[string]json.RawMessage{}
	for name, sp := range in.Sign {
		a, ok := f.actors[sp.Signer]
		if !ok {
			t.Fatalf("sign %s: unknown signer %q", name, sp.Signer)
		}
		doc, err := lmosproto.SignDocument(f.resolveDoc(t, sp.Document), a.key, topicT0.Add(time.Duration(sp.Minute)*time.Minute))
		if err != nil {
			t.Fatalf("sign %s: %v", name, err)
		}
		if len(sp.Tamper) > 0 {
			var m map[string]any
			if err := json.Unmarshal(doc, &m); err != nil {
				t.Fatal(err)
			}
			maps.Copy(m, sp.Tamper)
			if doc, err = json.Marshal(m); err != nil {
				t.Fatal(err)
			}
		}
		signed[name] = doc
	}
	return f.substitute(t, in.Data, signed)
}

// resolveDoc replaces the placeholders of a document to sign.
func (f *topicFixture) resolveDoc(t testing.TB, doc []byte) []byte {
	return f.substitute(t, doc, nil)
}

func (f *topicFixture) substitute(t testing.TB, data []byte, signed map[string]json.RawMessage) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("input: %v", err)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case string:
			switch {
			case x == "$GROUP":
				return f.groupID
			case x == "$HEAD":
				return f.ops[fixtureLog[len(fixtureLog)-1]].ID
			case x == "$UNSENT":
				return f.ops["unsent"].ID
			case strings.HasPrefix(x, "$op:"):
				op, ok := f.ops[x[len("$op:"):]]
				if !ok {
					t.Fatalf("input: unknown fixture op %q", x)
				}
				return json.RawMessage(op.Raw)
			case strings.HasPrefix(x, "$signed:"):
				doc, ok := signed[x[len("$signed:"):]]
				if !ok {
					t.Fatalf("input: no document %q to sign", x)
				}
				return doc
			case strings.HasPrefix(x, "$"):
				a, ok := f.actors[x[1:]]
				if !ok {
					t.Fatalf("input: unknown placeholder %q", x)
				}
				return a.id.String()
			}
		}
		return v
	}
	out, err := json.Marshal(walk(v))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// message wraps data as gossipsub hands it to the validator: authored by
// from, received from the author (or from the node itself when local).
func (f *topicFixture) message(data []byte, from peer.ID, local bool) *pubsub.Message {
	rf := from
	if local || rf == "" {
		rf = f.svc.self
	}
	return &pubsub.Message{Message: &pubsubpb.Message{Data: data, From: []byte(from)}, ReceivedFrom: rf}
}

// check runs the topic validator on one message against a fresh copy of
// the fixture group and reports what it did.
func (f *topicFixture) check(t testing.TB, data []byte, from peer.ID, local bool) topicVerdict {
	t.Helper()
	g := f.group(t)
	before := f.summary(g.state())
	pending := g.log.Pending()
	msg := f.message(data, from, local)
	res, err := f.svc.check(context.Background(), g, msg)
	v := topicVerdict{Verdict: topicval.ResultName(res)}
	if err != nil {
		v.Error = err.Error()
	}
	if r, ok := msg.ValidatorData.(*Received); ok {
		v.Delivered = r
	}
	if m, err := groups.ParseMessage(data); err == nil && m.Op != nil {
		if op, err := groups.ParseOp(m.Op); err == nil {
			switch {
			case g.log.Pending() > pending:
				v.Op = "held"
			case g.log.Has(op.ID) && !slices.ContainsFunc(fixtureLog, func(n string) bool { return f.ops[n].ID == op.ID }):
				v.Op = "added"
			}
		}
	}
	v.Thing = f.hook.taken()
	if after := f.summary(g.state()); !stateEqual(before, after) {
		v.State = &after
	}
	return v
}

func stateEqual(a, b stateSummary) bool {
	return a.Name == b.Name && a.Dissolved == b.Dissolved && maps.Equal(a.Members, b.Members)
}

// names replaces the fixture's peer IDs, group ID and op IDs in s by their
// placeholders, so that the golden files read like the inputs.
func (f *topicFixture) names(s string) string {
	var pairs []string
	for _, name := range actorNames {
		pairs = append(pairs, f.actors[name].id.String(), "$"+name)
	}
	pairs = append(pairs, f.groupID, "$GROUP", f.ops["unsent"].ID, "$UNSENT")
	for _, name := range fixtureLog[1:] {
		pairs = append(pairs, f.ops[name].ID, "$op:"+name)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

const topicGoldenDir = "testdata/topic"

// readTopicInputs returns the golden inputs by name.
func readTopicInputs(t testing.TB) map[string]*topicInput {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(topicGoldenDir, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden inputs in %s: %v", topicGoldenDir, err)
	}
	out := map[string]*topicInput{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var in topicInput
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[strings.TrimSuffix(filepath.Base(p), ".json")] = &in
	}
	return out
}

func (f *topicFixture) author(t testing.TB, name string) peer.ID {
	t.Helper()
	if name == "" {
		return ""
	}
	a, ok := f.actors[name]
	if !ok {
		t.Fatalf("unknown author %q", name)
	}
	return a.id
}

// TestGoldenTopic runs the topic validator of a group on every message in
// testdata/topic/*.json (posts, operations, Thing records, malformed
// envelopes; accepted and refused) and compares what it did with the
// .golden file beside the input. `go test -run TestGoldenTopic -update`
// rewrites the golden files.
func TestGoldenTopic(t *testing.T) {
	f := newTopicFixture(t)
	inputs := readTopicInputs(t)
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		in := inputs[name]
		t.Run(name, func(t *testing.T) {
			if in.About == "" {
				t.Error("the input says not what it is about")
			}
			data := f.resolve(t, in)
			got, err := json.MarshalIndent(f.check(t, data, f.author(t, in.From), in.Local), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append([]byte(f.names(string(got))), '\n')
			golden := filepath.Join(topicGoldenDir, name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestGoldenTopic -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: %s\n--- got\n%s--- want\n%s", name, in.About, got, want)
			}
		})
	}
}
