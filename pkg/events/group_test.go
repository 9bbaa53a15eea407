package events_test

import (
	"testing"
	"time"

	"github.com/openir/platform/pkg/events"
)

// TestGrouped: events come out in the order of their dates (ids break ties), whatever their ids say (a job's
// JobFinished has the id of the job, older than its start's); the first event of a request is its base and
// every event of the request carries the request's summary.
func TestGrouped(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	evs := []events.Event{
		{ID: "0a-job", Operation: events.Update, ObjectType: "job", Date: t0.Add(2 * time.Millisecond)}, // ended
		{ID: "0b", Operation: events.Creation, ObjectType: "job", Date: t0},                             // created
		{ID: "0d", Operation: events.Update, ObjectType: "job", Date: t0.Add(time.Millisecond)},         // started
		{ID: "0c", Operation: events.Creation, ObjectType: "case", RequestID: "r1", Date: t0.Add(3 * time.Millisecond)},
		{ID: "0e", Operation: events.Creation, ObjectType: "case_task", RequestID: "r1", Date: t0.Add(3 * time.Millisecond)},
		{ID: "0f", Operation: events.Creation, ObjectType: "case_task", RequestID: "r1", Date: t0.Add(3 * time.Millisecond)},
	}
	gs := events.Grouped(evs)
	want := []struct {
		id   string
		base bool
	}{{"0b", true}, {"0d", true}, {"0a-job", true}, {"0c", true}, {"0e", false}, {"0f", false}}
	if len(gs) != len(want) {
		t.Fatalf("%d groups, want %d", len(gs), len(want))
	}
	for i, w := range want {
		if gs[i].Event.ID != w.id || gs[i].Base != w.base {
			t.Errorf("message %d: %s base %v, want %s base %v", i, gs[i].Event.ID, gs[i].Base, w.id, w.base)
		}
	}
	if s := gs[4].Summary; s["case"][events.Creation] != 1 || s["case_task"][events.Creation] != 2 {
		t.Errorf("summary of r1 %v", s)
	}
	if s := gs[0].Summary; len(s) != 1 || s["job"][events.Creation] != 1 {
		t.Errorf("summary of a lone event %v", s)
	}
}
