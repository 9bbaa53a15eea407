package mongostore

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/mongox"
)

// FileStore is the attachment store plus, per organization, which files it may read: the store is
// content-addressed and shared, so one organization's upload must not let another read it.
type FileStore struct {
	files  *mongox.Attachments
	grants *mongo.Collection
}

var _ analysis.FileStore = (*FileStore)(nil)

// NewFileStore returns the store.
func NewFileStore(db *mongox.DB) *FileStore {
	return &FileStore{files: mongox.NewAttachments(db), grants: db.Collection("filegrants")}
}

func info(i mongox.FileInfo) analysis.FileInfo {
	return analysis.FileInfo{ID: i.ID, Size: i.Size, SHA256: i.SHA256, SHA1: i.SHA1, MD5: i.MD5}
}

// Put stores a file.
func (s *FileStore) Put(ctx context.Context, r io.Reader, max int64) (analysis.FileInfo, error) {
	i, err := s.files.Put(ctx, r, max)
	return info(i), err
}

// Open reads a file.
func (s *FileStore) Open(ctx context.Context, id string) (io.ReadCloser, analysis.FileInfo, error) {
	r, i, err := s.files.Open(ctx, id)
	if errors.Is(err, mongox.ErrFileNotFound) {
		return nil, analysis.FileInfo{}, apperr.New(apperr.NotFound, "file not found")
	}
	return r, info(i), err
}

// Grant lets org read the file.
func (s *FileStore) Grant(ctx context.Context, org, id string) error {
	_, err := s.grants.InsertOne(ctx, bson.D{{Key: "_id", Value: org + ":" + id}})
	if err != nil && !mongox.IsDuplicate(err) {
		return fmt.Errorf("grant file: %w", err)
	}
	return nil
}

// Granted reports whether org may read the file.
func (s *FileStore) Granted(ctx context.Context, org, id string) (bool, error) {
	err := s.grants.FindOne(ctx, byID(org+":"+id)).Err()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check file grant: %w", err)
	}
	return true, nil
}
