package record

import (
	"context"
	"io"

	"github.com/openir/platform/pkg/apperr"
)

// Attachment describes a file attached to a record (an observable, a log). ID is the content's SHA-256 in the
// attachment store.
type Attachment struct {
	ID          string
	Name        string
	ContentType string
	Size        int64
	Hashes      []string // sha256, sha1, md5
}

// Upload is a file a client sends.
type Upload struct {
	Name        string
	ContentType string
	Body        io.Reader
}

// File is a stored file's content description.
type File struct {
	ID     string
	Size   int64
	SHA256 string
	SHA1   string
	MD5    string
}

// FileStore keeps file contents, stored once per content.
type FileStore interface {
	Put(ctx context.Context, r io.Reader) (File, error)
	// Open fails with ErrAttachmentNotFound.
	Open(ctx context.Context, id string) (io.ReadCloser, File, error)
}

// ErrAttachmentNotFound is a file no record of the caller's organisation holds, or no stored content.
var ErrAttachmentNotFound = apperr.New(apperr.NotFound, "Attachment not found")
