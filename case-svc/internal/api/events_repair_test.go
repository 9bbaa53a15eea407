package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/audit"
	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/pkg/docstore"
)

// TestWebhook_RepairHeldEvent: an audit record written, then the process dies before its webhook delivery is
// queued (the record is left held, with no outbox row). After a restart on the same database the repair
// sweep queues the delivery: the receiver gets the event once, and the record is released.
func TestWebhook_RepairHeldEvent(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	open := func() *docstore.DB {
		db, err := docstore.Open(ctx, docstore.Config{Name: "cases", Path: dir}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	rcv := newReceiver(t, "")
	db1 := open()
	e1 := newEnv(t, withDB(db1))
	e1.createOrg(t, "soc")
	ana := e1.user(t, "ana", "soc", "org-admin")
	wh := ana.Call(t, http.MethodPost, "/api/webhook", map[string]any{"url": rcv.srv.URL}).Want(t, 201).Object(t)
	// The state a kill between the two writes leaves: the record, held, and no delivery.
	trail, err := store.NewAuditStore(ctx, db1)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-2 * time.Minute).UTC().Truncate(time.Millisecond)
	ev := audit.Event{ID: "0000000000000000000000001", Operation: audit.Creation, ObjectType: "case", ObjectID: "~crashed",
		RootID: "~crashed", Details: map[string]any{"title": "made before the crash"}, Object: map[string]any{"title": "made before the crash"},
		User: "ana", RequestID: "req-1", Org: "soc", Date: at}
	if err := trail.InsertEvents(ctx, []audit.Event{ev}, true); err != nil {
		t.Fatal(err)
	}
	e1.srv.Close()
	e1.stopEvents()
	if err := db1.Close(ctx); err != nil {
		t.Fatal(err)
	}

	db2 := open()
	e2 := newEnv(t, withDB(db2))
	v := rcv.wait(t, object("~crashed"))
	if v["id"] != ev.ID || v["operation"] != "Creation" || v["organisation"] != "soc" {
		t.Errorf("repaired delivery %v", v)
	}
	ana2 := e2.keyClient("ana", e2.renewKey(t, e2.admin, "ana"))
	var ds []obj
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if ds = ana2.Call(t, http.MethodGet, "/api/webhook/"+wh.Str(t, "id")+"/delivery", nil).Want(t, 200).List(t); len(ds) == 1 && ds[0]["status"] == "Delivered" {
			break
		}
	}
	if len(ds) != 1 || ds[0]["status"] != "Delivered" {
		t.Errorf("deliveries %v, want one Delivered", ds)
	}
	trail2, err := store.NewAuditStore(ctx, db2)
	if err != nil {
		t.Fatal(err)
	}
	if held, err := trail2.Held(ctx, time.Now(), 10); err != nil || len(held) != 0 {
		t.Errorf("held after the repair: %v %v", held, err)
	}
	if n := rcv.count(object("~crashed")); n != 1 {
		t.Errorf("delivered %d times", n)
	}
}
