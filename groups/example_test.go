package groups_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/proto"
)

func key(name string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte(name))
	return ed25519.NewKeyFromSeed(seed[:])
}

// A founder makes a group, invites a peer, and the peer's add, signed by the
// founder with the invitation, makes it a member everywhere the log goes.
func Example() {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	alice, bob := key("alice"), key("bob")
	bobID, _ := proto.PeerIDFromEd25519(bob.Public().(ed25519.PublicKey))

	genesis, err := groups.Genesis(alice, "diagnostics", nil, now)
	if err != nil {
		panic(err)
	}
	log, err := groups.NewLog(genesis)
	if err != nil {
		panic(err)
	}
	token, err := groups.NewInvitation(alice, groups.Invitation{
		Group: log.ID(), Name: "diagnostics", For: bobID, Uses: 1, Expires: now.Add(24 * time.Hour),
	}, now)
	if err != nil {
		panic(err)
	}

	// On alice's node, when bob asks to join with the token:
	inv, err := groups.ParseInvitation(token, now.Add(time.Minute))
	if err != nil {
		panic(err)
	}
	if err := log.CheckJoin(inv, bobID, now.Add(time.Minute)); err != nil {
		panic(err)
	}
	add, err := log.Sign(alice, groups.Draft{Kind: groups.KindAdd, Peer: bobID, Invitation: inv}, now.Add(time.Minute))
	if err != nil {
		panic(err)
	}
	if _, err := log.Add(add); err != nil {
		panic(err)
	}

	// Anyone can check the record form and fold it to the same state.
	copyOf, err := groups.ParseLog(log.ID(), log.Marshal())
	if err != nil {
		panic(err)
	}
	st := copyOf.State()
	fmt.Println(st.Name, len(st.Members), st.IsMember(bobID), st.IsAdmin(bobID))
	fmt.Println(log.CheckJoin(inv, bobID, now.Add(time.Minute)) != nil) // single use: spent
	// Output:
	// diagnostics 2 true false
	// true
}
