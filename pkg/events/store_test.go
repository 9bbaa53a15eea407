package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/events"
)

// A held event (its change or its webhook rows not yet written) is not tailed by the streams until it is
// released; a dropped one never is.
func TestEventLog_EventsSinceSkipsHeld(t *testing.T) {
	ctx := context.Background()
	l, err := events.NewEventLog(ctx, docstoretest.New(t), events.LogSpec("audit"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1_700_000_000_000).UTC()
	ev := func(id string) events.Event {
		return events.Event{ID: id, Operation: events.Creation, ObjectType: "case", ObjectID: id, Org: "soc", Date: now}
	}
	if err := l.InsertEvents(ctx, []events.Event{ev("a")}, false); err != nil {
		t.Fatal(err)
	}
	if err := l.InsertEvents(ctx, []events.Event{ev("b"), ev("c")}, true); err != nil {
		t.Fatal(err)
	}
	ids := func() []string {
		evs, err := l.EventsSince(ctx, now.Add(-time.Second), 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range evs {
			out = append(out, e.ID)
		}
		return out
	}
	if got := ids(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("with b and c held: %v, want [a]", got)
	}
	if err := l.Release(ctx, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteEvents(ctx, []string{"c"}); err != nil {
		t.Fatal(err)
	}
	if got := ids(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("b released, c dropped: %v, want [a b]", got)
	}
}
