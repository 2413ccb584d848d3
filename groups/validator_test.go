package groups

import (
	"bytes"
	"errors"
	"testing"
)

func TestTopicAndKey(t *testing.T) {
	alice := newActor(t, "alice")
	l := newGroup(t, alice, "g")
	if Topic(l.ID()) != "/lmos/1/group/"+l.ID() || Key(l.ID()) != "/lmos-group/"+l.ID() {
		t.Fatal(Topic(l.ID()), Key(l.ID()))
	}
	id, err := ParseKey(Key(l.ID()))
	if err != nil || id != l.ID() {
		t.Fatal(id, err)
	}
	for _, bad := range []string{"", "/lmos-group/", "/lmos-td/" + l.ID(), "/lmos-group/" + l.ID() + "x", "/lmos-group/QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG"} {
		if _, err := ParseKey(bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("ParseKey(%q): %v", bad, err)
		}
	}
}

func TestValidator(t *testing.T) {
	alice, bob, carol := newActor(t, "alice"), newActor(t, "bob"), newActor(t, "carol")
	l := newGroup(t, alice, "g")
	short := l.Marshal()
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: bob.id}, 1)
	a := clone(t, l)
	mustAdd(t, l, alice, Draft{Kind: KindAdd, Peer: carol.id}, 2)
	mustAdd(t, a, alice, Draft{Kind: KindRename, Name: "h"}, 2)
	long, tieA, tieB := l.Marshal(), l.Marshal(), a.Marshal()
	key := Key(l.ID())
	var v Validator
	for name, value := range map[string][]byte{"genesis only": short, "three ops": long, "other three": tieB} {
		if err := v.Validate(key, value); err != nil {
			t.Errorf("Validate %s: %v", name, err)
		}
	}
	other := newGroup(t, alice, "g")
	badValues := map[string][]byte{
		"garbage":      []byte("x"),
		"other group":  other.Marshal(),
		"reordered":    []byte("[" + string(l.Ops()[1].Raw) + "," + string(l.Ops()[0].Raw) + "]"),
		"forged":       bytes.Replace(long, []byte(`"name":"g"`), []byte(`"name":"G"`), 1),
		"empty record": nil,
	}
	for name, value := range badValues {
		if err := v.Validate(key, value); err == nil {
			t.Errorf("Validate %s: accepted", name)
		}
	}
	if err := v.Validate("/lmos-group/nope", long); !errors.Is(err, ErrBadKey) {
		t.Errorf("bad key: %v", err)
	}
	if err := v.Validate(Key(other.ID()), long); !errors.Is(err, ErrWrongGroup) {
		t.Errorf("key of another group: %v", err)
	}

	i, err := v.Select(key, [][]byte{short, badValues["forged"], long})
	if err != nil || i != 2 {
		t.Errorf("Select most ops: %d, %v", i, err)
	}
	want := 0
	if bytes.Compare(tieB, tieA) < 0 {
		want = 1
	}
	if i, err := v.Select(key, [][]byte{tieA, tieB}); err != nil || i != want {
		t.Errorf("Select tie: %d, %v; want %d", i, err, want)
	}
	if i, err := v.Select(key, [][]byte{tieB, tieA}); err != nil || i != 1-want {
		t.Errorf("Select tie reversed: %d, %v; want %d", i, err, 1-want)
	}
	if _, err := v.Select(key, [][]byte{badValues["garbage"], badValues["other group"]}); err == nil {
		t.Error("Select with no valid value succeeded")
	}
	if _, err := v.Select(key, nil); err == nil {
		t.Error("Select with no values succeeded")
	}
}
