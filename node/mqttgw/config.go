package mqttgw

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/interact"
)

// Defaults of Config.
const (
	// DefaultQoS is the QoS of the gateway's publications and
	// subscriptions: an action reply must not be lost on a flaky link, and
	// QoS 2 costs a round trip more for little gain (replies carry
	// correlation IDs).
	DefaultQoS = 1
	// DefaultMaxInFlight bounds the requests served at once: enough for a
	// busy broker's bursts, small enough that a flood cannot pin the node.
	DefaultMaxInFlight = 64
	// DefaultKeepAlive is the MQTT keep-alive: notices a dead broker
	// within a minute without chatter.
	DefaultKeepAlive = 30 * time.Second
	// DefaultConnectTimeout bounds one connection attempt: a broker that
	// has not answered in 10 s is tried again after a back-off.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultReconnectMin and DefaultReconnectMax bound the back-off
	// between connection attempts: quick after a blip, at most one attempt
	// every 30 s while the broker stays away.
	DefaultReconnectMin = 250 * time.Millisecond
	DefaultReconnectMax = 30 * time.Second
	// DefaultResubscribeDelay is the wait before an event or observation
	// session that ended is opened again, so that a failing Thing is not
	// hammered.
	DefaultResubscribeDelay = time.Second
	// DefaultSyncInterval is how often the gateway re-reads its
	// ThingLister; the node also calls Sync on changes, so this only
	// catches what a missed change left behind.
	DefaultSyncInterval = 30 * time.Second
	// DefaultPublishTimeout bounds one publication (the broker's
	// acknowledgement at QoS 1), so that a stuck broker cannot pin a
	// request.
	DefaultPublishTimeout = 10 * time.Second
	// DefaultCallerID is the caller identity (interact.WithCaller) of
	// every request that arrives over MQTT: the broker authenticates no
	// one the node knows, so all its consumers are one caller.
	DefaultCallerID = "mqtt"
)

// Deps are what a Gateway works with; both are required.
type Deps struct {
	// Invoker serves the requests that arrive on the broker: the node's
	// router.
	Invoker interact.Invoker
	// Things lists the Things to expose.
	Things ThingLister
	// Exposes, if set, says whether a directory entry is one of the
	// Things the gateway exposes (the rule of Things), for the forms
	// the consumer view gives it (Gateway.MQTT). Nil: none.
	Exposes func(directory.Entry) bool
}

// Config configures a Gateway. BrokerURL is required; the zero value of
// every other field selects its default.
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
	// QoS of the gateway's publications and subscriptions, 1 or 2.
	// Default DefaultQoS.
	QoS byte `json:"qos,omitempty"`
	// MaxInFlight bounds the requests served at once; beyond it a request
	// is answered with a 503 error. Default DefaultMaxInFlight.
	MaxInFlight int `json:"maxInFlight,omitempty"`
	// KeepAlive is the MQTT keep-alive, 1 s to 65535 s. Default
	// DefaultKeepAlive.
	KeepAlive time.Duration `json:"keepAlive,omitempty"`
	// ConnectTimeout bounds one connection attempt. Default
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration `json:"connectTimeout,omitempty"`
	// ReconnectMin and ReconnectMax bound the exponential back-off, with
	// jitter (node/backoff), between connection attempts. Defaults
	// DefaultReconnectMin and DefaultReconnectMax.
	ReconnectMin time.Duration `json:"reconnectMin,omitempty"`
	ReconnectMax time.Duration `json:"reconnectMax,omitempty"`
	// ResubscribeDelay is the wait before an event or observation session
	// that ended is opened again. Default DefaultResubscribeDelay.
	ResubscribeDelay time.Duration `json:"resubscribeDelay,omitempty"`
	// SyncInterval is how often the gateway re-reads its ThingLister (see
	// Gateway.Sync). Default DefaultSyncInterval.
	SyncInterval time.Duration `json:"syncInterval,omitempty"`
	// PublishTimeout bounds one publication. Default DefaultPublishTimeout.
	PublishTimeout time.Duration `json:"publishTimeout,omitempty"`
	// CallerID is the caller identity under which MQTT requests reach the
	// Invoker. Default DefaultCallerID.
	CallerID string `json:"callerID,omitempty"`
}

func (c Config) withDefaults() Config {
	if c.ClientID == "" {
		c.ClientID = "lmosnode-" + uuid.NewString()
	}
	if c.QoS == 0 {
		c.QoS = DefaultQoS
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = DefaultKeepAlive
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.ReconnectMin == 0 {
		c.ReconnectMin = DefaultReconnectMin
	}
	if c.ReconnectMax == 0 {
		c.ReconnectMax = DefaultReconnectMax
	}
	if c.ResubscribeDelay == 0 {
		c.ResubscribeDelay = DefaultResubscribeDelay
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = DefaultSyncInterval
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.CallerID == "" {
		c.CallerID = DefaultCallerID
	}
	return c
}

// Validate reports every field out of range.
func (c Config) Validate() error {
	var errs []error
	if err := validateBrokerURL(c.BrokerURL); err != nil {
		errs = append(errs, err)
	}
	if len(c.ClientID) > 65535 {
		errs = append(errs, fmt.Errorf("mqttgw: clientID: %d bytes, at most 65535", len(c.ClientID)))
	}
	if strings.ContainsAny(c.Prefix, "+#\x00") || strings.HasPrefix(c.Prefix, "$") {
		errs = append(errs, fmt.Errorf("mqttgw: prefix %q: must not contain '+', '#', U+0000 or start with '$'", c.Prefix))
	}
	if c.QoS > 2 {
		errs = append(errs, fmt.Errorf("mqttgw: qos %d: must be 1 or 2", c.QoS))
	}
	if c.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("mqttgw: maxInFlight %d: must not be negative", c.MaxInFlight))
	}
	if c.KeepAlive != 0 && (c.KeepAlive < time.Second || c.KeepAlive > 65535*time.Second) {
		errs = append(errs, fmt.Errorf("mqttgw: keepAlive %s: must be 1 s – 65535 s", c.KeepAlive))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"connectTimeout", c.ConnectTimeout}, {"reconnectMin", c.ReconnectMin}, {"reconnectMax", c.ReconnectMax},
		{"resubscribeDelay", c.ResubscribeDelay}, {"syncInterval", c.SyncInterval}, {"publishTimeout", c.PublishTimeout},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("mqttgw: %s %s: must not be negative", d.name, d.v))
		}
	}
	lo, hi := cmp.Or(c.ReconnectMin, DefaultReconnectMin), cmp.Or(c.ReconnectMax, DefaultReconnectMax)
	if lo > 0 && hi > 0 && hi < lo {
		errs = append(errs, fmt.Errorf("mqttgw: reconnectMax %s must not be below reconnectMin %s", hi, lo))
	}
	return errors.Join(errs...)
}

func validateBrokerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("mqttgw: brokerURL %q: %w", s, err)
	}
	switch u.Scheme {
	case "mqtt", "tcp", "mqtts", "ssl", "tls", "ws", "wss":
	default:
		return fmt.Errorf("mqttgw: brokerURL %q: scheme must be mqtt, tcp, mqtts, ssl, tls, ws or wss", s)
	}
	if u.Host == "" {
		return fmt.Errorf("mqttgw: brokerURL %q: no host", s)
	}
	return nil
}

// Option sets what a Config cannot carry.
type Option func(*options) error

type options struct {
	log *slog.Logger
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
