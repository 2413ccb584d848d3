// Package demo holds the example agents and tools that 'lmosnode demo'
// runs: Things written with the Go SDK (interact.NewThing) together with
// their Thing Descriptions. Every answer is canned and deterministic: no
// language model, no network.
//
//   - WeatherAgent (lmos:Agent, capability weather-forecast): property
//     modelConfiguration (read and write), property feedbackCount
//     (read-only), action getWeather (request-reply), action forecastWeek
//     (long-running, reports progress), action recordFeedback (meant to be
//     invoked one-way), event alert.
//   - ChatAgent (lmos:Agent, capability chat): streaming action chat that
//     echoes every input chunk back as tokens.
//   - Geocoder (lmos:Tool, capability geocode): action geocode.
//
// Register a Thing on a node with node.Node.Register(thing.TD, thing.Thing).
package demo

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Thing ids of the example Things.
const (
	WeatherID  = "urn:lmosnode:demo:weather-agent"
	ChatID     = "urn:lmosnode:demo:chat-agent"
	GeocoderID = "urn:lmosnode:demo:geocoder"
)

// Example is one example Thing: its TD and its Go handlers.
type Example struct {
	TD    *lmosproto.TD
	Thing *interact.Thing
}

const tdContext = `["https://www.w3.org/2019/wot/td/v1", "https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}]`

const nosec = `"securityDefinitions": {"nosec_sc": {"scheme": "nosec"}}, "security": "nosec_sc"`

var weatherTD = `{
  "@context": ` + tdContext + `,
  "@type": "lmos:Agent",
  "id": "` + WeatherID + `",
  "title": "WeatherAgent",
  "description": "Demo weather agent with canned answers.",
  "lmos:capabilities": [{"lmos:id": "weather-forecast", "lmos:version": "1.0.0",
    "lmos:description": "Forecast for a place, today or for the week."}],
  ` + nosec + `,
  "properties": {
    "modelConfiguration": {
      "description": "Configuration of the (pretend) model behind the agent.",
      "type": "object",
      "properties": {
        "modelName": {"type": "string"},
        "temperature": {"type": "number", "minimum": 0, "maximum": 1}
      },
      "required": ["modelName", "temperature"],
      "forms": [{"href": "urn:lmosnode:demo:weather-agent/properties/modelConfiguration"}]
    },
    "feedbackCount": {
      "description": "How many feedback messages the agent has received.",
      "type": "integer", "readOnly": true,
      "forms": [{"href": "urn:lmosnode:demo:weather-agent/properties/feedbackCount"}]
    }
  },
  "actions": {
    "getWeather": {
      "description": "Answers a question about today's weather.",
      "input": {"type": "object", "properties": {"place": {"type": "string", "minLength": 1}}, "required": ["place"]},
      "output": {"type": "string"},
      "forms": [{"href": "urn:lmosnode:demo:weather-agent/actions/getWeather"}]
    },
    "forecastWeek": {
      "description": "Computes a seven-day forecast, reporting progress day by day.",
      "input": {"type": "object", "properties": {"place": {"type": "string", "minLength": 1}}, "required": ["place"]},
      "output": {"type": "array", "items": {"type": "string"}},
      "synchronous": false,
      "forms": [{"href": "urn:lmosnode:demo:weather-agent/actions/forecastWeek"}]
    },
    "recordFeedback": {
      "description": "Records a user's rating; answers nothing (invoke it one-way).",
      "input": {"type": "object", "properties": {"rating": {"type": "integer", "minimum": 1, "maximum": 5}}, "required": ["rating"]},
      "forms": [{"href": "urn:lmosnode:demo:weather-agent/actions/recordFeedback"}]
    }
  },
  "events": {
    "alert": {
      "description": "A weather alert for a place.",
      "data": {"type": "object", "properties": {"seq": {"type": "integer"}, "place": {"type": "string"}, "text": {"type": "string"}}},
      "forms": [{"href": "urn:lmosnode:demo:weather-agent/events/alert"}]
    }
  }
}`

var chatTD = `{
  "@context": ` + tdContext + `,
  "@type": "lmos:Agent",
  "id": "` + ChatID + `",
  "title": "ChatAgent",
  "description": "Demo chat agent: a streaming session that echoes what it is told, token by token.",
  "lmos:capabilities": [{"lmos:id": "chat", "lmos:version": "1.0.0"}],
  ` + nosec + `,
  "actions": {
    "chat": {
      "description": "Streaming session: every input chunk (a string) comes back as one token per word.",
      "input": {"type": "string"},
      "output": {"type": "string"},
      "forms": [{"href": "urn:lmosnode:demo:chat-agent/actions/chat"}]
    }
  }
}`

var geocoderTD = `{
  "@context": ` + tdContext + `,
  "@type": "lmos:Tool",
  "id": "` + GeocoderID + `",
  "title": "Geocoder",
  "description": "Demo tool: turns a few known place names into coordinates.",
  "lmos:capabilities": [{"lmos:id": "geocode", "lmos:version": "1.0.0"}],
  ` + nosec + `,
  "actions": {
    "geocode": {
      "input": {"type": "object", "properties": {"place": {"type": "string", "minLength": 1}}, "required": ["place"]},
      "output": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}},
      "idempotent": true,
      "forms": [{"href": "urn:lmosnode:demo:geocoder/actions/geocode"}]
    }
  }
}`

// places are the coordinates the geocoder and the weather agent know.
var places = map[string][2]float64{
	"Bonn":   {50.7374, 7.0982},
	"Berlin": {52.5200, 13.4050},
	"Paris":  {48.8566, 2.3522},
}

var days = []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

var skies = []string{"sunny", "cloudy", "light rain", "sunny", "windy", "showers", "sunny"}

func parse(s string) *lmosproto.TD {
	td, err := lmosproto.ParseTD([]byte(s))
	if err != nil {
		panic(fmt.Sprintf("demo: example TD does not parse: %v", err)) // a bug in this file
	}
	return td
}

func placeOf(in lmosproto.Value) (string, error) {
	var v struct {
		Place string `json:"place"`
	}
	if err := in.Decode(&v); err != nil {
		return "", err
	}
	return v.Place, nil
}

func value(x any) lmosproto.Value {
	v, err := lmosproto.ValueOf(x)
	if err != nil {
		panic(fmt.Sprintf("demo: %v", err)) // only JSON-encodable values are passed
	}
	return v
}

// Weather is the weather agent: Example plus the owner-side calls of the
// demo.
type Weather struct {
	Example
	// Step is the pause between two progress reports of forecastWeek.
	Step time.Duration

	mu       sync.Mutex
	config   lmosproto.Value
	feedback int
}

// NewWeather returns the weather agent.
func NewWeather() *Weather {
	w := &Weather{Step: 100 * time.Millisecond, config: value(map[string]any{"modelName": "canned-1", "temperature": 0.2})}
	w.TD = parse(weatherTD)
	w.Thing = interact.NewThing().
		OnProperty("modelConfiguration", func(context.Context) (lmosproto.Value, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.config, nil
		}, func(_ context.Context, v lmosproto.Value) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.config = v
			return nil
		}).
		OnProperty("feedbackCount", func(context.Context) (lmosproto.Value, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			return value(w.feedback), nil
		}, nil).
		OnAction("getWeather", func(_ context.Context, in lmosproto.Value, _ func(lmosproto.Value)) (lmosproto.Value, error) {
			place, err := placeOf(in)
			if err != nil {
				return lmosproto.Value{}, err
			}
			if _, ok := places[place]; !ok {
				return lmosproto.Value{}, &lmosproto.Problem{Status: http.StatusNotFound, Title: "Unknown place", Detail: place}
			}
			return lmosproto.StringValue(fmt.Sprintf("%s today: sunny, 21 °C, light wind from the west.", place)), nil
		}).
		OnAction("forecastWeek", func(ctx context.Context, in lmosproto.Value, progress func(lmosproto.Value)) (lmosproto.Value, error) {
			place, err := placeOf(in)
			if err != nil {
				return lmosproto.Value{}, err
			}
			// queued: the consumer that queries now sees "pending"
			if err := sleep(ctx, w.Step); err != nil {
				return lmosproto.Value{}, err
			}
			out := make([]string, 0, len(days))
			for i, d := range days {
				out = append(out, fmt.Sprintf("%s %s: %s, %d °C", place, d, skies[i], 17+i%4))
				progress(value(map[string]any{"day": i + 1, "of": len(days)}))
				if err := sleep(ctx, w.Step); err != nil {
					return lmosproto.Value{}, err
				}
			}
			return value(out), nil
		}).
		OnAction("recordFeedback", func(_ context.Context, _ lmosproto.Value, _ func(lmosproto.Value)) (lmosproto.Value, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.feedback++
			return lmosproto.Value{}, nil
		})
	return w
}

// Alert emits the alert event with a sequence number and returns how many
// feeds took it (0: nobody subscribes yet).
func (w *Weather) Alert(seq int, place, text string) int {
	return w.Thing.Emit("alert", value(map[string]any{"seq": seq, "place": place, "text": text}))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// NewChat returns the chat agent: its streaming action chat answers every
// input chunk with its words, one output chunk each, written as a language
// model streams tokens (every word after the first with its leading space),
// so that a consumer that joins the chunks reads the sentence. The end of
// the answer is the session's completion, not a marker token.
func NewChat() Example {
	t := interact.NewThing().OnStream("chat", func(ctx context.Context, in <-chan lmosproto.Value, out func(lmosproto.Value) error) error {
		sep := ""
		for v := range in {
			var s string
			if err := v.Decode(&s); err != nil {
				return err
			}
			for _, word := range strings.Fields(s) {
				if err := out(lmosproto.StringValue(sep + word)); err != nil {
					return err
				}
				sep = " "
			}
		}
		return ctx.Err()
	})
	return Example{TD: parse(chatTD), Thing: t}
}

// NewGeocoder returns the geocoder tool.
func NewGeocoder() Example {
	t := interact.NewThing().OnAction("geocode", func(_ context.Context, in lmosproto.Value, _ func(lmosproto.Value)) (lmosproto.Value, error) {
		place, err := placeOf(in)
		if err != nil {
			return lmosproto.Value{}, err
		}
		c, ok := places[place]
		if !ok {
			return lmosproto.Value{}, &lmosproto.Problem{Status: http.StatusNotFound, Title: "Unknown place", Detail: place}
		}
		return value(map[string]float64{"lat": c[0], "lon": c[1]}), nil
	})
	return Example{TD: parse(geocoderTD), Thing: t}
}
