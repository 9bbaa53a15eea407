package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
)

// A snapshot taken while another handle of the same file keeps writing opens as a database holding at least
// what was acknowledged before the snapshot began.
func TestBackupFile_WhileServing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := docstore.Config{Name: "svc", Path: dir}
	db, err := docstore.Open(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	c := docstoretest.Fill(t, db, 1500)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // writes go on during the snapshot
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := c.Insert(ctx, docstoretest.Doc{ID: fmt.Sprint("w", i), Org: "o9"}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	out := filepath.Join(t.TempDir(), "snap.db")
	err = docstore.BackupFile(ctx, cfg, out)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if err := docstore.BackupFile(ctx, cfg, out); err == nil {
		t.Fatal("a backup over an existing file was written")
	}
	snap, err := docstore.Open(ctx, docstore.Config{Name: "snap", Path: filepath.Dir(out)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close(ctx)
	sc, err := snap.Collection(ctx, docstoretest.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := sc.Count(ctx, docstore.Eq("org", "o1")); err != nil || n != 500 {
		t.Fatalf("snapshot holds %d documents of o1 (%v), want 500", n, err)
	}
	if err := docstore.BackupFile(ctx, docstore.Config{URI: "mongodb://x", Name: "n"}, out+"2"); err == nil {
		t.Fatal("backup of a MongoDB database did not refuse")
	}
}
