package mongox_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/mongox"
	"github.com/openir/platform/pkg/mongox/mongotest"
)

func TestAttachments_PutOpen(t *testing.T) {
	db := mongotest.New(t)
	a := mongox.NewAttachments(db)
	ctx := context.Background()
	for _, size := range []int{0, 1, mongox.ChunkSize, mongox.ChunkSize + 1, 3*mongox.ChunkSize + 17} {
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
	if _, err := a.Put(ctx, bytes.NewReader(data), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(ctx, bytes.NewReader(data), 0); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	n, _ := db.Collection("files").CountDocuments(ctx, bson.D{{Key: "_id", Value: hex.EncodeToString(sum[:])}})
	if n != 1 {
		t.Fatalf("files documents = %d, want 1", n)
	}
	if _, _, err := a.Open(ctx, "nope"); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("open unknown: %v", err)
	}
	if _, err := a.Put(ctx, bytes.NewReader(make([]byte, 100)), 10); !apperr.Is(err, apperr.TooLarge) {
		t.Fatalf("over max: %v", err)
	}
}
