package events

// Message is an event as the APIs show it: the reference systems' v0 audit fields (TheHive's stream and
// audit, Cortex's stream), with base and summary when it is part of a stream answer.
type Message struct {
	ID           string                    `json:"_id"`
	IDv0         string                    `json:"id"`
	Type         string                    `json:"_type"`
	Operation    string                    `json:"operation"`
	Details      map[string]any            `json:"details"`
	ObjectType   string                    `json:"objectType"`
	ObjectID     string                    `json:"objectId"`
	RootID       string                    `json:"rootId"`
	RequestID    string                    `json:"requestId"`
	Object       map[string]any            `json:"object"`
	Organisation string                    `json:"organisation"`
	StartDate    int64                     `json:"startDate"`
	CreatedAt    int64                     `json:"createdAt"`
	CreatedBy    string                    `json:"createdBy"`
	Base         *bool                     `json:"base,omitempty"`
	Summary      map[string]map[string]int `json:"summary,omitempty"`
}

// MessageOf renders one event.
func MessageOf(e Event) Message {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	return Message{ID: e.ID, IDv0: e.ID, Type: "audit", Operation: e.Operation, Details: e.Details,
		ObjectType: e.ObjectType, ObjectID: e.ObjectID, RootID: e.RootID, RequestID: e.RequestID, Object: e.Object,
		Organisation: e.Org, StartDate: e.Date.UnixMilli(), CreatedAt: e.Date.UnixMilli(), CreatedBy: e.User}
}

// Messages renders a stream answer: the events grouped by request (Grouped), each with base and summary.
func Messages(evs []Event) []Message {
	gs := Grouped(evs)
	out := make([]Message, len(gs))
	for i, g := range gs {
		out[i] = MessageOf(g.Event)
		base := g.Base
		out[i].Base, out[i].Summary = &base, g.Summary
	}
	return out
}
