package events

import (
	"encoding/json"
	"time"
)

// EndpointView is a webhook endpoint as both services answer it. It never holds the password, token or
// secret: only whether they are set. A service adds its own identity fields around it (case-svc: _id, _type).
type EndpointView struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	URL         string          `json:"url"`
	Auth        string          `json:"auth"`
	Username    string          `json:"username,omitempty"`
	HasPassword bool            `json:"hasPassword"`
	HasToken    bool            `json:"hasToken"`
	HasSecret   bool            `json:"hasSecret"`
	Filter      json.RawMessage `json:"filter"`
	Enabled     bool            `json:"enabled"`
	CreatedBy   string          `json:"createdBy"`
	CreatedAt   int64           `json:"createdAt"`
	UpdatedAt   *int64          `json:"updatedAt"`
}

// ViewEndpoint is e as the APIs answer it.
func ViewEndpoint(e Endpoint) EndpointView {
	f := json.RawMessage("null")
	if e.Filter != "" {
		f = json.RawMessage(e.Filter)
	}
	return EndpointView{ID: e.ID, Name: e.Name, URL: e.URL, Auth: e.Auth, Username: e.Username,
		HasPassword: e.Password != "", HasToken: e.Token != "", HasSecret: e.Secret != "", Filter: f, Enabled: e.Enabled,
		CreatedBy: e.CreatedBy, CreatedAt: millis(e.CreatedAt), UpdatedAt: optMillis(e.UpdatedAt)}
}

// DeliveryView is a delivery as both services answer it.
type DeliveryView struct {
	ID          string `json:"id"`
	EventID     string `json:"eventId"`
	Webhook     string `json:"webhook"`
	Status      string `json:"status"`
	Attempts    int    `json:"attempts"`
	NextAttempt *int64 `json:"nextAttempt"` // pending deliveries only
	LastStatus  int    `json:"lastStatus,omitempty"`
	LastError   string `json:"lastError,omitempty"`
	CreatedAt   int64  `json:"createdAt"`
	DeliveredAt *int64 `json:"deliveredAt"`
}

// ViewDelivery is d as the APIs answer it.
func ViewDelivery(d Delivery) DeliveryView {
	v := DeliveryView{ID: d.ID, EventID: d.EventID, Webhook: d.Endpoint, Status: d.Status, Attempts: d.Attempts,
		LastStatus: d.LastStatus, LastError: d.LastError, CreatedAt: millis(d.CreatedAt), DeliveredAt: optMillis(d.DeliveredAt)}
	if d.Status == Pending {
		v.NextAttempt = optMillis(d.NextAttempt)
	}
	return v
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func optMillis(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	v := t.UnixMilli()
	return &v
}
