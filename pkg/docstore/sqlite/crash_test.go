//go:build unix

package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openir/platform/pkg/docstore"
)

// TestSQLiteCrashDurability runs a child process that inserts documents from several goroutines and prints
// each _id once its Insert returned, kills it with SIGKILL mid-stream, reopens the database and checks that
// every acknowledged document is there.
func TestSQLiteCrashDurability(t *testing.T) {
	if dir := os.Getenv("DOCSTORE_CRASH_CHILD"); dir != "" {
		crashChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSQLiteCrashDurability$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DOCSTORE_CRASH_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		acked = append(acked, sc.Text())
		if len(acked) == 2000 {
			// Kill while the writers are running: the lines already printed are acknowledged writes.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatal("the child did not finish in time")
	}
	if len(acked) < 2000 {
		t.Fatalf("the child acknowledged only %d writes", len(acked))
	}
	db, err := docstore.Open(context.Background(), docstore.Config{Name: "crash", Path: dir}, nil)
	if err != nil {
		t.Fatalf("reopen after kill -9: %v", err)
	}
	defer db.Close(context.Background())
	c, err := db.Collection(context.Background(), docstore.Spec{Name: "acks"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range acked {
		var d item
		if err := c.Get(context.Background(), id, &d); err != nil {
			t.Fatalf("acknowledged %s lost after kill -9: %v", id, err)
		}
	}
	n, _ := c.Count(context.Background(), docstore.All())
	t.Logf("%d acknowledged, %d stored", len(acked), n)
}

func crashChild(dir string) {
	ctx := context.Background()
	db, err := docstore.Open(ctx, docstore.Config{Name: "crash", Path: dir}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	c, err := db.Collection(ctx, docstore.Spec{Name: "acks", Indexes: []docstore.Index{{Name: "n", Keys: []docstore.Key{docstore.Asc("n")}}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("g%d-%d", g, i)
				if err := c.Insert(ctx, item{ID: id, N: int64(i)}); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Println(id) // unbuffered: the parent sees it only after the commit
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
