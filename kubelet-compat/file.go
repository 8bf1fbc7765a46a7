package kubeletcompat

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/ioutil"
	"os"
	"path/filepath"
	"time"
)

const (
	// APIVersion and Kind identify the compat file's schema.
	APIVersion = "kubelet-compat.io/v1alpha1"
	Kind       = "UpgradeCompat"

	// DefaultFileName is the compat file's name inside the kubelet root dir.
	DefaultFileName = "upgrade-compat.json"
	// PathEnv overrides the compat file's path for the kubelet and the CLI.
	PathEnv = "KUBELET_COMPAT_FILE"

	// maxFileSize bounds what is read: a real file holds a few KiB.
	maxFileSize = 4 << 20
)

// File is the compat file: what the previous kubelet was and which UIDs its
// static pods ran under.
type File struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// PreviousVersion is the version of the kubelet that created the running
	// containers, e.g. v1.18.19.
	PreviousVersion string `json:"previousVersion"`
	// RecordedAt is when the file was written.
	RecordedAt time.Time `json:"recordedAt"`
	// OlderVersions lists, newest first, the kubelets that ran before
	// PreviousVersion and whose containers may still run: a container kept
	// through one upgrade still carries its creator's hash at the next one.
	OlderVersions []string `json:"olderVersions,omitempty"`
	// StaticPods lists the static pods that ran when the file was written.
	StaticPods []StaticPod `json:"staticPods,omitempty"`
}

// MaxOlderVersions bounds the upgrade history a file carries.
const MaxOlderVersions = 8

// StaticPod ties a manifest, as it was when recorded, to the UID its pod ran under.
type StaticPod struct {
	// ManifestPath is the absolute, clean path of the manifest file.
	ManifestPath string `json:"manifestPath"`
	// SHA256 is the lowercase hex sha256 of the manifest file's bytes.
	SHA256 string `json:"sha256"`
	// UID is the pod UID the previous kubelet ran the pod under.
	UID string `json:"uid"`
}

// DefaultPath returns the compat file path for a kubelet root dir, honouring PathEnv.
func DefaultPath(rootDir string) string {
	if p := os.Getenv(PathEnv); p != "" {
		return p
	}
	return filepath.Join(rootDir, DefaultFileName)
}

// Parse decodes and validates a compat file. Unknown fields are refused:
// a file this code does not fully understand must not steer the kubelet.
func Parse(data []byte) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("unparsable: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unparsable: trailing data after the JSON document")
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// Validate checks everything but the relation to the running kubelet.
func (f *File) Validate() error {
	if f.APIVersion != APIVersion || f.Kind != Kind {
		return fmt.Errorf("unknown apiVersion/kind %q/%q, want %q/%q", f.APIVersion, f.Kind, APIVersion, Kind)
	}
	prev, err := ParseVersion(f.PreviousVersion)
	if err != nil {
		return fmt.Errorf("previousVersion: %v", err)
	}
	if len(f.OlderVersions) > MaxOlderVersions {
		return fmt.Errorf("olderVersions lists %d versions, at most %d", len(f.OlderVersions), MaxOlderVersions)
	}
	newer := prev
	for i, s := range f.OlderVersions {
		v, err := ParseVersion(s)
		if err != nil {
			return fmt.Errorf("olderVersions[%d]: %v", i, err)
		}
		if !v.LessThan(newer) {
			return fmt.Errorf("olderVersions[%d]: %s is not older than %s (newest first)", i, v, newer)
		}
		newer = v
	}
	if f.RecordedAt.IsZero() {
		return errors.New("recordedAt is missing")
	}
	seen := make(map[string]bool, len(f.StaticPods))
	for i, sp := range f.StaticPods {
		switch {
		case !filepath.IsAbs(sp.ManifestPath) || filepath.Clean(sp.ManifestPath) != sp.ManifestPath:
			return fmt.Errorf("staticPods[%d]: manifestPath %q is not an absolute clean path", i, sp.ManifestPath)
		case seen[sp.ManifestPath]:
			return fmt.Errorf("staticPods[%d]: manifestPath %q listed twice", i, sp.ManifestPath)
		case !isSHA256Hex(sp.SHA256):
			return fmt.Errorf("staticPods[%d]: sha256 %q is not 64 lowercase hex digits", i, sp.SHA256)
		case sp.UID == "" || len(sp.UID) > 128:
			return fmt.Errorf("staticPods[%d]: uid must be 1 to 128 characters", i)
		}
		seen[sp.ManifestPath] = true
	}
	return nil
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// ManifestSHA256 returns the digest the compat file records for manifest bytes.
func ManifestSHA256(data []byte) string {
	sum := sha256Sum(data)
	return hex.EncodeToString(sum[:])
}

// Marshal renders the file as the CLI writes it: indented JSON with a final newline.
func (f *File) Marshal() ([]byte, error) {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// WriteFile validates f and replaces path atomically: a temporary file in the
// same directory, fsync, mode 0644, rename, fsync of the directory. Readers
// see either the old file or the complete new one, never a partial write.
func WriteFile(path string, f *File) (err error) {
	if err := f.Validate(); err != nil {
		return fmt.Errorf("refusing to write an invalid compat file: %v", err)
	}
	data, err := f.Marshal()
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := ioutil.TempFile(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("creating temporary file: %v", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %v", tmp.Name(), err)
	}
	if err = tmp.Chmod(0644); err != nil {
		return fmt.Errorf("chmod %s: %v", tmp.Name(), err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %v", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("closing %s: %v", tmp.Name(), err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("renaming into place: %v", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync() // best effort: the rename is durable once the directory is
		d.Close()
	}
	return nil
}

// FileProblem describes why a compat file on disk is not used.
type FileProblem struct{ msg string }

func (p *FileProblem) Error() string { return p.msg }

func problemf(format string, args ...interface{}) error {
	return &FileProblem{msg: fmt.Sprintf(format, args...)}
}

// ReadFile reads and validates the compat file at path as the kubelet does.
// It refuses anything but a regular file owned by ownerUID that neither
// group nor others may write. A missing file returns an error satisfying
// os.IsNotExist.
func ReadFile(path string, ownerUID int) (*File, os.FileInfo, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, nil, err
	}
	if err := checkFileInfo(fi, ownerUID); err != nil {
		return nil, fi, err
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, fi, err
	}
	defer fh.Close()
	// Check the opened file too: the path may have been swapped since Lstat.
	ofi, err := fh.Stat()
	if err != nil {
		return nil, fi, err
	}
	if !os.SameFile(fi, ofi) {
		return nil, fi, problemf("%s changed while being read", path)
	}
	data, err := ioutil.ReadAll(io.LimitReader(fh, maxFileSize+1))
	if err != nil {
		return nil, fi, err
	}
	if len(data) > maxFileSize {
		return nil, fi, problemf("%s is larger than %d bytes", path, maxFileSize)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fi, problemf("%s: %v", path, err)
	}
	return f, fi, nil
}

func checkFileInfo(fi os.FileInfo, ownerUID int) error {
	if !fi.Mode().IsRegular() {
		return problemf("%s is not a regular file (mode %s)", fi.Name(), fi.Mode())
	}
	if perm := fi.Mode().Perm(); perm&0022 != 0 {
		return problemf("%s is group- or world-writable (mode %#o)", fi.Name(), perm)
	}
	uid, ok := fileOwner(fi)
	if !ok {
		return problemf("%s: file ownership cannot be verified on this platform", fi.Name())
	}
	if uid != ownerUID {
		return problemf("%s is owned by uid %d, not %d", fi.Name(), uid, ownerUID)
	}
	return nil
}

// Versions returns the previous version and the older ones, newest first.
// The file must be valid.
func (f *File) Versions() []Version {
	out := make([]Version, 0, 1+len(f.OlderVersions))
	for _, s := range append([]string{f.PreviousVersion}, f.OlderVersions...) {
		if v, err := ParseVersion(s); err == nil {
			out = append(out, v)
		}
	}
	return out
}
