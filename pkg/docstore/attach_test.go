package docstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"testing"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/docstore"
)

func TestAttachments_PutOpen(t *testing.T) {
	forEngines(t, func(t *testing.T, _ confEngine, db *docstore.DB) {
		ctx := context.Background()
		a, err := docstore.NewAttachments(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{0, 1, docstore.ChunkSize, docstore.ChunkSize + 1, 3*docstore.ChunkSize + 17} {
			data := make([]byte, size)
			_, _ = rand.Read(data)
			info, err := a.Put(ctx, bytes.NewReader(data), 0)
			if err != nil {
				t.Fatalf("put %d: %v", size, err)
			}
			sum := sha256.Sum256(data)
			if info.ID != hex.EncodeToString(sum[:]) || info.Size != int64(size) || info.MD5 == "" || info.SHA1 == "" {
				t.Fatalf("info %+v", info)
			}
			r, _, err := a.Open(ctx, info.ID)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("size %d: read back %d bytes, err %v", size, len(got), err)
			}
		}
		// The same content twice is stored once.
		data := []byte("same content")
		for range 2 {
			if _, err := a.Put(ctx, bytes.NewReader(data), 0); err != nil {
				t.Fatal(err)
			}
		}
		files, err := db.Collection(ctx, docstore.Spec{Name: "files"})
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if n, err := files.Count(ctx, docstore.ID(hex.EncodeToString(sum[:]))); err != nil || n != 1 {
			t.Fatalf("files documents = %d (%v), want 1", n, err)
		}
		if _, _, err := a.Open(ctx, "nope"); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("open unknown: %v", err)
		}
		if _, err := a.Put(ctx, bytes.NewReader(make([]byte, 100)), 10); !apperr.Is(err, apperr.TooLarge) {
			t.Fatalf("over max: %v", err)
		}
	})
}
