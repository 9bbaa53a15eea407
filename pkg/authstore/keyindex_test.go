package authstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
)

func newKeyIndex(t *testing.T) *KeyIndex {
	t.Helper()
	c, err := docstoretest.New(t).Collection(context.Background(), docstore.Spec{Name: "apikeys"})
	if err != nil {
		t.Fatal(err)
	}
	return NewKeyIndex(c)
}

// holder is the user document's side of the key: its login and current hash, as SetKey writes them.
type holder struct{ login, hash string }

var errNoUser = errors.New("no such user")

// authenticates is a store's UserByKeyHash over users: the login of the user KeyHolder finds, "" for none.
func authenticates(t *testing.T, k *KeyIndex, users map[string]*holder, hash string) string {
	t.Helper()
	u, err := KeyHolder(context.Background(), k, hash, func(_ context.Context, login string) (holder, error) {
		if users[login] == nil {
			return holder{}, errNoUser
		}
		return *users[login], nil
	}, func(h holder) string { return h.hash }, errNoUser)
	if errors.Is(err, errNoUser) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return u.login
}

func entryOf(t *testing.T, k *KeyIndex, hash string) (string, bool) {
	t.Helper()
	login, found, err := k.login(context.Background(), hash)
	if err != nil {
		t.Fatal(err)
	}
	return login, found
}

func TestKeyIndex_Rotate(t *testing.T) {
	ctx := context.Background()
	k := newKeyIndex(t)
	dan := &holder{login: "dan"}
	users := map[string]*holder{"dan": dan}
	set := func(h string) func(context.Context) error {
		return func(context.Context) error { dan.hash = h; return nil }
	}

	if err := k.Rotate(ctx, "dan", "", "h1", set("h1")); err != nil {
		t.Fatal(err)
	}
	if got := authenticates(t, k, users, "h1"); got != "dan" {
		t.Fatalf("h1 authenticates %q, want dan", got)
	}
	// Renewal: the old entry goes.
	if err := k.Rotate(ctx, "dan", "h1", "h2", set("h2")); err != nil {
		t.Fatal(err)
	}
	if _, found := entryOf(t, k, "h1"); found {
		t.Fatal("the old entry h1 is still there")
	}
	if got := authenticates(t, k, users, "h2"); got != "dan" {
		t.Fatalf("h2 authenticates %q, want dan", got)
	}
	// The same key again (a retried request): its entry exists already, which is no error.
	if err := k.Rotate(ctx, "dan", "h2", "h2", set("h2")); err != nil {
		t.Fatal(err)
	}
	if got := authenticates(t, k, users, "h2"); got != "dan" {
		t.Fatalf("h2 after a retry authenticates %q, want dan", got)
	}
	// Revocation: no new entry, the old one goes.
	if err := k.Rotate(ctx, "dan", "h2", "", set("")); err != nil {
		t.Fatal(err)
	}
	if _, found := entryOf(t, k, "h2"); found {
		t.Fatal("the revoked entry h2 is still there")
	}
	if _, found := entryOf(t, k, ""); found {
		t.Fatal("an entry for the empty hash")
	}
}

// TestKeyIndex_RotateCrash stops a rotation at each of its steps, as a crash would, and checks that exactly
// one of the two keys authenticates at every point: the old one until the user is written, the new one after.
func TestKeyIndex_RotateCrash(t *testing.T) {
	ctx := context.Background()
	k := newKeyIndex(t)
	dan := &holder{login: "dan"}
	users := map[string]*holder{"dan": dan}
	if err := k.Rotate(ctx, "dan", "", "old", func(context.Context) error { dan.hash = "old"; return nil }); err != nil {
		t.Fatal(err)
	}

	// Crash after the new entry, before the user is written: the new entry is stale, the old key still works.
	crash := errors.New("crash before the user is written")
	if err := k.Rotate(ctx, "dan", "old", "new", func(context.Context) error { return crash }); !errors.Is(err, crash) {
		t.Fatalf("err = %v, want setUser's error as it is", err)
	}
	if login, found := entryOf(t, k, "new"); !found || login != "dan" {
		t.Fatalf("the new entry: %q %v, want dan's", login, found)
	}
	if got := authenticates(t, k, users, "new"); got != "" {
		t.Fatalf("the stale new entry authenticates %q", got)
	}
	if got := authenticates(t, k, users, "old"); got != "dan" {
		t.Fatalf("the old key authenticates %q, want dan", got)
	}

	// Crash after the user is written, before the old entry is removed: simulated by writing the user and
	// leaving the old entry; the old entry is stale, the new key works.
	dan.hash = "new"
	if got := authenticates(t, k, users, "old"); got != "" {
		t.Fatalf("the stale old entry authenticates %q", got)
	}
	if got := authenticates(t, k, users, "new"); got != "dan" {
		t.Fatalf("the new key authenticates %q, want dan", got)
	}

	// The retried rotation completes: the new entry exists already, the old one goes.
	if err := k.Rotate(ctx, "dan", "old", "new", func(context.Context) error { dan.hash = "new"; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, found := entryOf(t, k, "old"); found {
		t.Fatal("the old entry is still there after the retry")
	}
}

// TestKeyHolder_UserGone: an entry whose user is gone does not authenticate.
func TestKeyHolder_UserGone(t *testing.T) {
	ctx := context.Background()
	k := newKeyIndex(t)
	if err := k.Rotate(ctx, "gone", "", "h", func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := authenticates(t, k, map[string]*holder{}, "h"); got != "" {
		t.Fatalf("the entry of a deleted user authenticates %q", got)
	}
	if got := authenticates(t, k, map[string]*holder{}, "unknown"); got != "" {
		t.Fatalf("an unknown hash authenticates %q", got)
	}
}

func TestKeyIndex_Remove(t *testing.T) {
	ctx := context.Background()
	k := newKeyIndex(t)
	if err := k.Rotate(ctx, "dan", "", "h", func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := k.Remove(ctx, "dan", "h"); err != nil {
		t.Fatal(err)
	}
	if _, found := entryOf(t, k, "h"); found {
		t.Fatal("the removed entry is still there")
	}
	// No key, or an entry already gone: nothing to do.
	if err := k.Remove(ctx, "dan", ""); err != nil {
		t.Fatal(err)
	}
	if err := k.Remove(ctx, "dan", "h"); err != nil {
		t.Fatal(err)
	}
	if _, found := entryOf(t, k, "unknown"); found {
		t.Fatal("an unknown hash is found")
	}
}

// TestKeyHolder_Remembered: KeyHolder remembers an entry's login (a second lookup of the key does not read
// the index), and what it remembers never lets a key in that its user no longer holds: a key renewed by
// another replica (which this index did not see), or whose user is gone, is refused.
func TestKeyHolder_Remembered(t *testing.T) {
	ctx := context.Background()
	c, err := docstoretest.New(t).Collection(ctx, docstore.Spec{Name: "apikeys"})
	if err != nil {
		t.Fatal(err)
	}
	here, there := NewKeyIndex(c), NewKeyIndex(c) // two replicas sharing the collection
	dan := &holder{login: "dan"}
	users := map[string]*holder{"dan": dan}
	set := func(h string) func(context.Context) error {
		return func(context.Context) error { dan.hash = h; return nil }
	}
	if err := there.Rotate(ctx, "dan", "", "h1", set("h1")); err != nil {
		t.Fatal(err)
	}
	if got := authenticates(t, here, users, "h1"); got != "dan" {
		t.Fatalf("h1 authenticates %q, want dan", got)
	}
	// Remembered: with the entry gone from the collection behind its back, the key of a user who still holds
	// it authenticates here without reading the index.
	if _, err := c.DeleteOne(ctx, docstore.ID("h1")); err != nil {
		t.Fatal(err)
	}
	if got := authenticates(t, here, users, "h1"); got != "dan" {
		t.Fatalf("remembered h1 authenticates %q, want dan", got)
	}
	// Renewed on the other replica: the remembered h1 is stale and refused; h2 works here.
	if err := there.Rotate(ctx, "dan", "h1", "h2", set("h2")); err != nil {
		t.Fatal(err)
	}
	if got := authenticates(t, here, users, "h1"); got != "" {
		t.Fatalf("the renewed key h1 still authenticates %q", got)
	}
	if got := authenticates(t, here, users, "h2"); got != "dan" {
		t.Fatalf("h2 authenticates %q, want dan", got)
	}
	// The user gone: its remembered key is refused.
	delete(users, "dan")
	if got := authenticates(t, here, users, "h2"); got != "" {
		t.Fatalf("the key of a deleted user authenticates %q", got)
	}
	// The bound: past maxKnownKeys entries, the index still answers every key right.
	for i := range maxKnownKeys + 10 {
		h := fmt.Sprintf("k%d", i)
		users["u"+h] = &holder{login: "u" + h, hash: h}
		if err := here.Rotate(ctx, "u"+h, "", h, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if got := authenticates(t, here, users, h); got != "u"+h {
			t.Fatalf("%s authenticates %q", h, got)
		}
	}
	if n := len(here.known); n > maxKnownKeys {
		t.Fatalf("%d entries remembered, bound %d", n, maxKnownKeys)
	}
}
