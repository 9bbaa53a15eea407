package jobdir

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// The job folder travels as a tar stream when the worker runs elsewhere (the kubernetes runner's pods):
// PackInput → UnpackInput carries input/ to the worker's folder, PackOutput → UnpackOutput carries output/
// back. Only regular files and folders travel; on the way back only regular files directly inside output/
// (what ReadOutput may read), so ReadOutput's checks stay the only reading of a worker's output.

// ErrUploadRefused wraps the reasons UnpackOutput refuses an upload (a size or count limit, a malformed
// stream); the files it wrote are removed.
var ErrUploadRefused = errors.New("upload refused")

// PackInput writes <dir>/input (as Prepare wrote it: input.json, the attachment, cacerts) to w as a tar
// stream.
func PackInput(w io.Writer, dir string) error {
	root, err := os.OpenRoot(filepath.Join(dir, InputDir))
	if err != nil {
		return err
	}
	defer root.Close()
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: InputDir + "/", Mode: 0o755}); err != nil {
		return err
	}
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue // Prepare writes only regular files
		}
		if err := addFile(tw, root, e.Name(), InputDir+"/"+e.Name()); err != nil {
			return err
		}
	}
	return tw.Close()
}

// UnpackInput extracts a PackInput stream into dir, the worker's job folder: input/ and the regular files
// directly inside it, nothing else (no links, no other paths). It then creates output/ open to every user,
// as the worker's user is the image's. Folders are 0755 and files 0644: dir is private to the worker's pod.
func UnpackInput(r io.Reader, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.Mkdir(InputDir, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read the input: %w", err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		switch {
		case h.Typeflag == tar.TypeDir && name == InputDir:
			continue
		case h.Typeflag != tar.TypeReg:
			return fmt.Errorf("input entry %q is not a regular file", h.Name)
		}
		d, base := path.Split(name)
		if d != InputDir+"/" || !plainName(base) {
			return fmt.Errorf("input entry %q is not a file directly inside %s/", h.Name, InputDir)
		}
		if err := writeEntry(root, InputDir+"/"+base, tr, 0o644); err != nil {
			return err
		}
	}
	if err := root.Mkdir(OutputDir, 0o777); err != nil {
		return err
	}
	return root.Chmod(OutputDir, 0o777) // the umask may have removed bits
}

// PackOutput writes the regular files directly inside <dir>/output to w as a tar stream. Other entries (folders,
// links, files this process cannot read) are left out and returned by name, for the log.
func PackOutput(w io.Writer, dir string) (skipped []string, err error) {
	root, err := os.OpenRoot(filepath.Join(dir, OutputDir))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	tw := tar.NewWriter(w)
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			skipped = append(skipped, e.Name())
			continue
		}
		if err := addFile(tw, root, e.Name(), e.Name()); err != nil {
			if errors.Is(err, fs.ErrPermission) {
				skipped = append(skipped, e.Name())
				continue
			}
			return skipped, err
		}
	}
	return skipped, tw.Close()
}

// OutputLimits bound what UnpackOutput accepts.
type OutputLimits struct {
	MaxOutput int64 // output.json; 0 = DefaultMaxOutput
	MaxFile   int64 // each other file; 0 = no limit
	MaxFiles  int   // number of files; 0 = 1000
	MaxTotal  int64 // all files together; 0 = no limit beyond the others
}

// UnpackOutput extracts a PackOutput stream into <dir>/output, which must exist and be empty: regular files
// directly inside output/ only (an entry with a folder, "..", a link or a device refuses the whole upload), each
// written once, within lim. A refused upload (ErrUploadRefused) or a broken stream leaves output/ empty. Files
// get access's file mode (0600 by default), as Prepare's do.
func UnpackOutput(r io.Reader, dir string, lim OutputLimits, access FolderAccess) (err error) {
	if lim.MaxOutput <= 0 {
		lim.MaxOutput = DefaultMaxOutput
	}
	if lim.MaxFiles <= 0 {
		lim.MaxFiles = 1000
	}
	root, err := openOutputRoot(filepath.Join(dir, OutputDir))
	if err != nil {
		return err
	}
	defer root.Close()
	var written []string
	defer func() {
		if err != nil {
			for _, name := range written {
				root.Remove(name)
			}
		}
	}()
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrUploadRefused, fmt.Sprintf(format, args...))
	}
	var total int64
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			// The rest of the stream (the end-of-archive blocks): a read error there is a cut upload.
			if _, err := io.Copy(io.Discard, r); err != nil {
				return fmt.Errorf("%w: malformed stream: %w", ErrUploadRefused, err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: malformed stream: %w", ErrUploadRefused, err)
		}
		if h.Typeflag != tar.TypeReg {
			return refuse("entry %q is not a regular file", h.Name)
		}
		if !plainName(h.Name) {
			return refuse("entry %q is not a name directly inside output/", h.Name)
		}
		if len(written) == lim.MaxFiles {
			return refuse("more than %d files", lim.MaxFiles)
		}
		max := lim.MaxFile
		if h.Name == OutputFile {
			max = lim.MaxOutput
		}
		if max > 0 && h.Size > max {
			return refuse("%s is over %d bytes", h.Name, max)
		}
		if total += h.Size; lim.MaxTotal > 0 && total > lim.MaxTotal {
			return refuse("the files are over %d bytes together", lim.MaxTotal)
		}
		if err := writeEntry(root, h.Name, tr, access.FileMode()); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return refuse("entry %q appears twice", h.Name)
			}
			root.Remove(h.Name) // written in part
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%w: malformed stream: %w", ErrUploadRefused, err)
			}
			return err
		}
		written = append(written, h.Name)
		if err := access.Apply(filepath.Join(dir, OutputDir, h.Name), false); err != nil {
			return err
		}
	}
}

// addFile adds the regular file name of root to tw as entry.
func addFile(tw *tar.Writer, root *os.Root, name, entry string) error {
	f, err := root.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", name)
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: entry, Mode: 0o644, Size: st.Size()}); err != nil {
		return err
	}
	// A file that grows while it is read is cut at its size when opened; one that shrinks fails the copy.
	_, err = io.CopyN(tw, f, st.Size())
	return err
}

// writeEntry creates name in root (it must not exist) with the bytes of r and mode.
func writeEntry(root *os.Root, name string, r io.Reader, mode os.FileMode) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return root.Chmod(name, mode) // the umask may have removed bits
}
