package store

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
)

// A queue written before the unique slot index (jobs without a slot) opens: each job gets its _id as slot.
func TestNewJobStore_BackfillsSlots(t *testing.T) {
	ctx := context.Background()
	db := docstoretest.New(t)
	old, err := db.Collection(ctx, docstore.Spec{Name: queueName})
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{`{"_id":"J1","status":"Waiting","organization":"a","createdAt":1}`,
		`{"_id":"J2","status":"InProgress","organization":"a","createdAt":2,"owner":"w","leaseUntil":5}`} {
		if err := old.Insert(ctx, json.RawMessage(doc)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := NewJobStore(ctx, db); err != nil {
		t.Fatalf("open a queue without slots: %v", err)
	}
	for _, id := range []string{"J1", "J2"} {
		var d jobDoc
		if err := old.Get(ctx, id, &d); err != nil || d.Slot != id {
			t.Fatalf("job %s: slot %q (%v)", id, d.Slot, err)
		}
	}
	if _, err := NewJobStore(ctx, db); err != nil { // a second start (another replica) is a no-op
		t.Fatal(err)
	}
}
