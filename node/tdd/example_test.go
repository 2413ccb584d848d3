package tdd_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	datastore "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/own"
	"github.com/lmosnode/lmosnode/node/tdd"
	"github.com/lmosnode/lmosnode/node/tdd/tddtest"
)

// Mounting the API: build the handler over the node's directory and
// publisher, mount it at "/" of the node's mux (its own routes stay more
// specific), and close it before the server shuts down so that event
// streams end.
func Example() {
	self := tddtest.NewIdentity(1)
	dir, err := directory.Open(directory.Deps{Datastore: dssync.MutexWrap(datastore.NewMapDatastore()), Self: self.ID}, directory.Config{})
	if err != nil {
		panic(err)
	}
	defer dir.Close()
	pub := &tddtest.Publisher{Dir: dir, Self: self, Now: tddtest.NewClock().Now}
	things, err := own.New(own.Deps{Directory: dir, Self: self.ID, Publisher: pub}, own.Config{})
	if err != nil {
		panic(err)
	}
	defer things.Close()

	h, err := tdd.New(tdd.Deps{Directory: dir, PeerID: self.ID, Resolver: things, Publisher: pub, BaseURL: "http://127.0.0.1:5080"}, tdd.Config{})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/node", func(http.ResponseWriter, *http.Request) {})
	mux.Handle("/", h)

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:5080/.well-known/wot", nil))
	var td struct {
		Type  string `json:"@type"`
		Title string `json:"title"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &td)
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"), td.Type)
	// Output: 200 application/td+json ThingDirectory
}
