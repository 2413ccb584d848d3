package mqttgw

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Config configures a Gateway. The zero value of every field but BrokerURL
// means its default (DefaultConfig).
type Config struct {
	// BrokerURL is the broker, e.g. "mqtt://127.0.0.1:1883". Schemes:
	// mqtt, tcp (plain), mqtts, ssl, tls (TLS), ws, wss (WebSocket).
	BrokerURL string `json:"brokerURL"`
	// ClientID is the MQTT client identifier. Default: "lmosnode-" and a
	// random UUID, so that two gateways never take over each other's
	// connection.
	ClientID string `json:"clientID,omitempty"`
	// Prefix, when set, is prepended (as its own topic levels) to every
	// topic, e.g. "lmos" gives "lmos/{thingID}/events/{name}". Default: none,
	// the DESIGN's topics "{thingID}/…".
	Prefix string `json:"prefix,omitempty"`
	// QoS of the gateway's publications and subscriptions. Default 1: an
	// action reply must not be lost on a flaky link, and 2 costs a round
	// trip more for little gain (replies carry correlation IDs).
	QoS byte `json:"qos,omitempty"`
	// MaxInFlight bounds the requests served at once; beyond it a request
	// is answered with a 503 error. Default 64.
	MaxInFlight int `json:"maxInFlight,omitempty"`
	// KeepAlive is the MQTT keep-alive. Default 30 s: notices a dead broker
	// within a minute without chatter.
	KeepAlive time.Duration `json:"keepAlive,omitempty"`
	// ConnectTimeout bounds one connection attempt. Default 10 s.
	ConnectTimeout time.Duration `json:"connectTimeout,omitempty"`
	// ReconnectMin and ReconnectMax bound the exponential back-off, with
	// jitter (node/backoff), between connection attempts. Defaults 250 ms
	// and 30 s.
	ReconnectMin time.Duration `json:"reconnectMin,omitempty"`
	ReconnectMax time.Duration `json:"reconnectMax,omitempty"`
	// ResubscribeDelay is the wait before an event or observation session
	// that ended is opened again. Default 1 s.
	ResubscribeDelay time.Duration `json:"resubscribeDelay,omitempty"`
	// SyncInterval is how often the gateway re-reads its ThingLister (see
	// Gateway.Sync). Default 30 s; the node also calls Sync on changes.
	SyncInterval time.Duration `json:"syncInterval,omitempty"`
	// PublishTimeout bounds one publication (the broker's acknowledgement
	// at QoS 1). Default 10 s.
	PublishTimeout time.Duration `json:"publishTimeout,omitempty"`
}

// DefaultConfig returns the defaults for a broker URL.
func DefaultConfig(brokerURL string) Config {
	return Config{BrokerURL: brokerURL}.withDefaults()
}

func (c Config) withDefaults() Config {
	if c.ClientID == "" {
		c.ClientID = "lmosnode-" + uuid.NewString()
	}
	if c.QoS == 0 {
		c.QoS = 1
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 64
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = 30 * time.Second
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.ReconnectMin == 0 {
		c.ReconnectMin = 250 * time.Millisecond
	}
	if c.ReconnectMax == 0 {
		c.ReconnectMax = 30 * time.Second
	}
	if c.ResubscribeDelay == 0 {
		c.ResubscribeDelay = time.Second
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = 30 * time.Second
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = 10 * time.Second
	}
	return c
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	u, err := url.Parse(c.BrokerURL)
	if err != nil {
		return fmt.Errorf("mqttgw: brokerURL %q: %w", c.BrokerURL, err)
	}
	switch u.Scheme {
	case "mqtt", "tcp", "mqtts", "ssl", "tls", "ws", "wss":
	default:
		return fmt.Errorf("mqttgw: brokerURL %q: scheme must be mqtt, tcp, mqtts, ssl, tls, ws or wss", c.BrokerURL)
	}
	if u.Host == "" {
		return fmt.Errorf("mqttgw: brokerURL %q: no host", c.BrokerURL)
	}
	if c.ClientID == "" || len(c.ClientID) > 65535 {
		return fmt.Errorf("mqttgw: clientID %q: must be 1–65535 bytes", c.ClientID)
	}
	if strings.ContainsAny(c.Prefix, "+#\x00") || strings.HasPrefix(c.Prefix, "$") {
		return fmt.Errorf("mqttgw: prefix %q: must not contain '+', '#', U+0000 or start with '$'", c.Prefix)
	}
	if c.QoS > 2 {
		return fmt.Errorf("mqttgw: qos %d: must be 0, 1 or 2", c.QoS)
	}
	if c.MaxInFlight < 1 {
		return fmt.Errorf("mqttgw: maxInFlight %d: must be at least 1", c.MaxInFlight)
	}
	if c.KeepAlive < time.Second || c.KeepAlive > 65535*time.Second {
		return fmt.Errorf("mqttgw: keepAlive %s: must be 1 s – 65535 s", c.KeepAlive)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"connectTimeout", c.ConnectTimeout}, {"reconnectMin", c.ReconnectMin}, {"reconnectMax", c.ReconnectMax},
		{"resubscribeDelay", c.ResubscribeDelay}, {"syncInterval", c.SyncInterval}, {"publishTimeout", c.PublishTimeout},
	} {
		if d.v <= 0 {
			return fmt.Errorf("mqttgw: %s %s: must be positive", d.name, d.v)
		}
	}
	if c.ReconnectMax < c.ReconnectMin {
		return fmt.Errorf("mqttgw: reconnectMax %s must not be below reconnectMin %s", c.ReconnectMax, c.ReconnectMin)
	}
	return nil
}

// Option sets what a Config cannot carry.
type Option func(*options) error

type options struct {
	log      *slog.Logger
	callerID string
}

// WithLogger sets the logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("mqttgw: WithLogger: nil logger")
		}
		o.log = l
		return nil
	}
}

// CallerID is the caller identity (interact.WithCaller) of requests that
// arrive over MQTT, unless WithCallerID sets another.
const CallerID = "mqtt"

// WithCallerID sets the caller identity under which MQTT requests reach the
// Invoker.
func WithCallerID(id string) Option {
	return func(o *options) error {
		if id == "" {
			return errors.New("mqttgw: WithCallerID: empty id")
		}
		o.callerID = id
		return nil
	}
}
