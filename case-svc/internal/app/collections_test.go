package app

import (
	"context"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/openir/platform/pkg/docstore/docstoretest"
)

// case-svc/README.md's Storage section names every collection a started case-svc has, and no other.
func TestREADMEListsTheCollections(t *testing.T) {
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth.Secret = "app-test-secret-0123456789"
	ctx := context.Background()
	db := docstoretest.New(t)
	a, err := New(ctx, cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)), Options{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(ctx) })
	got, err := db.Collections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(b), "Collections:")
	if !ok {
		t.Fatal(`case-svc/README.md has no "Collections:" list`)
	}
	text, _, _ = strings.Cut(text, "The engine is")
	var listed []string
	for _, m := range regexp.MustCompile("`([a-z][a-z_A-Z]*)`").FindAllStringSubmatch(text, -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(got)
	slices.Sort(listed)
	if !slices.Equal(got, listed) {
		t.Errorf("collections of a started case-svc: %v\ncase-svc/README.md lists: %v", got, listed)
	}
}
