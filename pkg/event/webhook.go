package event

import (
	"encoding/json"
	"time"
)

// Endpoint is a webhook of an organisation. Password, Token and Secret are kept sealed (pkg/events.Sealer) and never
// shown after creation.
type Endpoint struct {
	ID        string
	Org       string
	Name      string
	URL       string
	Auth      string // none, basic, bearer
	Username  string
	Password  string // sealed
	Token     string // sealed
	Secret    string // sealed; signs each body with HMAC-SHA-256
	Filter    string // JSON text: a query filter over the event's fields; "" = every event
	Enabled   bool
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Delivery statuses.
const (
	Pending   = "Pending"
	Delivered = "Delivered"
	Dead      = "Dead"
)

// Delivery is one event to send to one endpoint: a row of the durable outbox.
type Delivery struct {
	ID          string // event id + ":" + endpoint id
	EventID     string
	Endpoint    string
	Org         string
	Seq         string // the event id: deliveries of an endpoint go out in this order
	Payload     string // the JSON body
	Status      string
	Attempts    int
	NextAttempt time.Time
	LeaseUntil  time.Time
	LastStatus  int
	LastError   string
	CreatedAt   time.Time
	DeliveredAt time.Time
}

// EndpointInput is a webhook endpoint as a request writes it; nil fields are left as they are on update.
type EndpointInput struct {
	Name     *string         `json:"name"`
	URL      *string         `json:"url"`
	Auth     *string         `json:"auth"`
	Username *string         `json:"username"`
	Password *string         `json:"password"`
	Token    *string         `json:"token"`
	Secret   *string         `json:"secret"`
	Filter   json.RawMessage `json:"filter"` // nil: unchanged
	Enabled  *bool           `json:"enabled"`
}
