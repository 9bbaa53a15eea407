package docstore

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"

	"github.com/openir/platform/pkg/apperr"
)

// ChunkSize is the size of one stored chunk.
const ChunkSize = 255 * 1024

// ErrFileNotFound is returned for an unknown attachment id.
var ErrFileNotFound = apperr.New(apperr.NotFound, "attachment not found")

// FileInfo describes a stored file. Its ID is its SHA-256; names and content types belong to whoever refers
// to the file, since the same content is stored once.
type FileInfo struct {
	ID     string `json:"_id"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	SHA1   string `json:"sha1"`
	MD5    string `json:"md5"`
	Chunks int    `json:"chunks"`
}

// Attachments is the content-addressed file store of DECISIONS.md: a `files` document per content
// (_id = SHA-256) and its chunks with _id "<sha256>:<n>", every read by _id (GridFS reads chunks by files_id,
// which the embedded engine scans).
type Attachments struct {
	files  *Collection
	chunks *Collection
}

// chunkDoc is one chunk of a file (encoding/json writes Data as base64).
type chunkDoc struct {
	ID   string `json:"_id"`
	Data []byte `json:"data"`
}

// NewAttachments returns the store kept in the collections files and chunks of db.
func NewAttachments(ctx context.Context, db *DB) (*Attachments, error) {
	files, err := db.Collection(ctx, Spec{Name: "files"})
	if err != nil {
		return nil, err
	}
	chunks, err := db.Collection(ctx, Spec{Name: "chunks"})
	if err != nil {
		return nil, err
	}
	return &Attachments{files: files, chunks: chunks}, nil
}

// Put stores the content of r (at most max bytes; 0 = no limit) and returns its description. The content is
// spooled to a temporary file to learn its hash first; chunks are written before the files document, so a
// file that Info finds is always complete, and storing the same content twice writes it once.
func (a *Attachments) Put(ctx context.Context, r io.Reader, max int64) (FileInfo, error) {
	tmp, err := os.CreateTemp("", "attachment-")
	if err != nil {
		return FileInfo{}, fmt.Errorf("spool attachment: %w", err)
	}
	defer func() { tmp.Close(); os.Remove(tmp.Name()) }()
	s256, s1, m5 := sha256.New(), sha1.New(), md5.New()
	src := r
	if max > 0 {
		src = io.LimitReader(r, max+1)
	}
	n, err := io.Copy(io.MultiWriter(tmp, s256, s1, m5), src)
	if err != nil {
		if apperr.As(err) != nil { // a reader's own verdict (a body over its limit…)
			return FileInfo{}, err
		}
		// Uploads reach here spooled to disk by the server, or downloaded from a remote server: a failure is
		// not the client's (500, logged with its cause).
		return FileInfo{}, fmt.Errorf("spool attachment: %w", err)
	}
	if max > 0 && n > max {
		return FileInfo{}, apperr.Errorf(apperr.TooLarge, "file larger than %d bytes", max)
	}
	info := FileInfo{ID: hexsum(s256), Size: n, SHA256: hexsum(s256), SHA1: hexsum(s1), MD5: hexsum(m5),
		Chunks: int((n + ChunkSize - 1) / ChunkSize)}
	if existing, err := a.Info(ctx, info.ID); err == nil {
		return existing, nil
	} else if !errors.Is(err, ErrFileNotFound) {
		return FileInfo{}, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return FileInfo{}, err
	}
	buf := make([]byte, ChunkSize)
	for i := 0; ; i++ {
		k, err := io.ReadFull(tmp, buf)
		if k > 0 {
			id := fmt.Sprintf("%s:%d", info.ID, i)
			ierr := a.chunks.Insert(ctx, chunkDoc{ID: id, Data: buf[:k]})
			if ierr != nil && !IsDuplicate(ierr) { // a chunk left by an interrupted Put is the same bytes
				return FileInfo{}, fmt.Errorf("store chunk %s: %w", id, ierr)
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return FileInfo{}, fmt.Errorf("read spooled attachment: %w", err)
		}
	}
	if err := a.files.Insert(ctx, info); err != nil && !IsDuplicate(err) {
		return FileInfo{}, fmt.Errorf("store file %s: %w", info.ID, err)
	}
	return info, nil
}

func hexsum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// Info returns the description of a stored file.
func (a *Attachments) Info(ctx context.Context, id string) (FileInfo, error) {
	var info FileInfo
	err := a.files.Get(ctx, id, &info)
	if errors.Is(err, ErrNotFound) {
		return FileInfo{}, ErrFileNotFound
	}
	if err != nil {
		return FileInfo{}, fmt.Errorf("find file %s: %w", id, err)
	}
	return info, nil
}

// Open returns a reader of the file's content, fetching one chunk at a time.
func (a *Attachments) Open(ctx context.Context, id string) (io.ReadCloser, FileInfo, error) {
	info, err := a.Info(ctx, id)
	if err != nil {
		return nil, FileInfo{}, err
	}
	return &chunkReader{ctx: ctx, a: a, info: info}, info, nil
}

type chunkReader struct {
	ctx  context.Context
	a    *Attachments
	info FileInfo
	next int
	buf  []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.next >= r.info.Chunks {
			return 0, io.EOF
		}
		var c chunkDoc
		id := fmt.Sprintf("%s:%d", r.info.ID, r.next)
		if err := r.a.chunks.Get(r.ctx, id, &c); err != nil {
			return 0, fmt.Errorf("read chunk %s: %w", id, err)
		}
		r.buf, r.next = c.Data, r.next+1
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *chunkReader) Close() error { return nil }
