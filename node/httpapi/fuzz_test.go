package httpapi_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

// Whatever one event holds, the reader gives back what the writer sent
// (line breaks as LF), or the writer refuses it.
func FuzzEventRoundTrip(f *testing.F) {
	f.Add("thing_created", "m3x9k2-41", `{"id":"urn:ex:lamp"}`)
	f.Add("", "", "a\r\nb\rc\n")
	f.Add("completed", "", "")
	f.Add(" spaced", "1", " leading space\n\n")
	f.Fuzz(func(t *testing.T, typ, id, data string) {
		rec := httptest.NewRecorder()
		s, err := httpapi.StartStream(rec, httpapi.StreamConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		err = s.Send(httpapi.Event{Type: typ, ID: id, Data: data})
		if strings.ContainsAny(typ+id, "\r\n") {
			if err == nil {
				t.Fatalf("sent type %q id %q with a line break", typ, id)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var got []httpapi.Event
		for ev, err := range httpapi.ReadEvents(rec.Body, 0) {
			if err != nil {
				return // an event over the reader's bound
			}
			got = append(got, ev)
		}
		want := httpapi.Event{Type: typ, ID: id, Data: strings.ReplaceAll(strings.ReplaceAll(data, "\r\n", "\n"), "\r", "\n")}
		if strings.ContainsRune(id, 0) {
			want.ID = "" // an id with NUL is ignored, as the SSE spec says
		}
		if want.Type == "" && want.Data == "" {
			if len(got) != 0 {
				t.Fatalf("an event with nothing was read: %+v", got)
			}
			return
		}
		if len(got) != 1 || got[0] != want {
			t.Fatalf("read %+v, want %+v; stream %q", got, want, rec.Body.String())
		}
	})
}
