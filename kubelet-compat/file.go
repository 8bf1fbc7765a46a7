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
	"strings"
	"time"
)

const (
	// APIVersion and Kind identify the compat file's schema. v1alpha2 lists
	// the containers that ran when the file was recorded; v1alpha1 (a bare
	// version history) is refused.
	APIVersion = "kubelet-compat.io/v1alpha2"
	Kind       = "UpgradeCompat"

	// DefaultFileName is the compat file's name inside the kubelet root dir.
	DefaultFileName = "upgrade-compat.json"
	// PathEnv overrides the compat file's path for the kubelet and the CLI.
	PathEnv = "KUBELET_COMPAT_FILE"

	// MaxFileSize bounds what is read and written: a node of a thousand
	// containers needs about 120 KiB.
	MaxFileSize = 4 << 20
	// MaxContainers bounds the containers a file lists.
	MaxContainers = 30000
	// maxPodContainers bounds the containers a static pod lists.
	maxPodContainers = 256
	// maxNesting bounds how deep the JSON may nest (the schema needs 5:
	// staticPods[].containers[]).
	maxNesting = 8
)

// File is the compat file: what the previous kubelet was, which containers
// ran when it was recorded and which UIDs its static pods ran under.
type File struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// PreviousVersion is the version of the kubelet that ran when the file
	// was recorded, e.g. v1.18.19.
	PreviousVersion string `json:"previousVersion"`
	// RecordedAt is when the file was written.
	RecordedAt time.Time `json:"recordedAt"`
	// Containers lists the containers that ran when the file was recorded.
	// Only these can be kept by the compat path: a container created later,
	// by whatever kubelet, is judged as upstream judges it.
	Containers []Container `json:"containers,omitempty"`
	// StaticPods lists the static pods that ran when the file was written.
	StaticPods []StaticPod `json:"staticPods,omitempty"`
}

// Container is a container that ran when the file was recorded.
type Container struct {
	// ID is the runtime's container ID.
	ID string `json:"id"`
	// HashVersion is the kubelet whose container hash the container carries:
	// PreviousVersion for a container that kubelet created (or accepted as
	// its own), an older version for one kept through earlier upgrades, a
	// newer one for a container a newer kubelet created before a rollback.
	HashVersion string `json:"hashVersion"`
	// SpecHash is the container's spec as record found it: SpecHash of
	// HashVersion, 16 lowercase hex digits; empty when record found no
	// spec. Only a rollback reads it: a kubelet older than HashVersion,
	// whose hash does not cover the spec ({name, image} from 1.31), keeps
	// the container only when its own reading of the spec hashes the same,
	// so a container that sets a field the older kubelet does not know
	// restarts.
	SpecHash string `json:"specHash,omitempty"`
}

// StaticPod ties a manifest, as it was when recorded, to the UID its pod ran under.
type StaticPod struct {
	// ManifestPath is the absolute, clean path of the manifest file.
	ManifestPath string `json:"manifestPath"`
	// SHA256 is the lowercase hex sha256 of the manifest file's bytes.
	SHA256 string `json:"sha256"`
	// UID is the pod UID the previous kubelet ran the pod under.
	UID string `json:"uid"`
	// Ready is the pod's Ready condition as the previous kubelet last
	// reported it (its mirror pod's status when the file was recorded).
	Ready bool `json:"ready,omitempty"`
	// Containers are the pod's running containers as the previous kubelet
	// last reported them; empty when record had no mirror pod status.
	Containers []StaticPodContainer `json:"containers,omitempty"`
}

// StaticPodContainer is a static pod's container as the previous kubelet
// last reported it: a restarted kubelet keeps the very container (same ID,
// running since before it started) Ready or started until its first probe
// result, as it does for API pods, whose status the API server holds.
type StaticPodContainer struct {
	// Name is the container's name in the pod.
	Name string `json:"name"`
	// ContainerID is the status' container ID, <runtime>://<id>.
	ContainerID string `json:"containerID"`
	Ready       bool   `json:"ready,omitempty"`
	Started     bool   `json:"started,omitempty"`
}

// DefaultPath returns the compat file path for a kubelet root dir, honouring PathEnv.
func DefaultPath(rootDir string) string {
	if p := os.Getenv(PathEnv); p != "" {
		return p
	}
	return filepath.Join(rootDir, DefaultFileName)
}

// Parse decodes and validates a compat file. Unknown fields, keys given
// twice and keys in another case than the field's are refused: a file this
// code does not read exactly as written must not steer the kubelet.
func Parse(data []byte) (*File, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("larger than %d bytes", MaxFileSize)
	}
	if err := checkKeys(data); err != nil {
		return nil, fmt.Errorf("unparsable: %v", err)
	}
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
	if _, err := parseFileVersion(f.PreviousVersion); err != nil {
		return fmt.Errorf("previousVersion: %v", err)
	}
	if f.RecordedAt.IsZero() {
		return errors.New("recordedAt is missing")
	}
	if err := validateContainers(f.Containers); err != nil {
		return err
	}
	return validateStaticPods(f.StaticPods)
}

// parseFileVersion parses a version the file records: Kubernetes 1.x only.
func parseFileVersion(s string) (Version, error) {
	v, err := ParseVersion(s)
	if err != nil {
		return Version{}, err
	}
	if v.Major != 1 {
		return Version{}, fmt.Errorf("%s: major version %d, want 1", v, v.Major)
	}
	return v, nil
}

func validateContainers(containers []Container) error {
	if len(containers) > MaxContainers {
		return fmt.Errorf("containers lists %d containers, at most %d", len(containers), MaxContainers)
	}
	seen := make(map[string]bool, len(containers))
	for i, c := range containers {
		if !isContainerID(c.ID) {
			return fmt.Errorf("containers[%d]: id %q is not 1 to 128 letters, digits, '-', '_' or '.'", i, truncate(c.ID))
		}
		if seen[c.ID] {
			return fmt.Errorf("containers[%d]: id %s listed twice", i, c.ID)
		}
		seen[c.ID] = true
		// A hashVersion newer than previousVersion is a container a newer
		// kubelet created, recorded again after a rollback.
		if _, err := parseFileVersion(c.HashVersion); err != nil {
			return fmt.Errorf("containers[%d]: hashVersion: %v", i, err)
		}
		if c.SpecHash != "" && !isHex(c.SpecHash, 16) {
			return fmt.Errorf("containers[%d]: specHash %q is not 16 lowercase hex digits", i, truncate(c.SpecHash))
		}
	}
	return nil
}

func validateStaticPods(pods []StaticPod) error {
	paths := make(map[string]bool, len(pods))
	uids := make(map[string]bool, len(pods))
	for i, sp := range pods {
		switch {
		case !filepath.IsAbs(sp.ManifestPath) || filepath.Clean(sp.ManifestPath) != sp.ManifestPath:
			return fmt.Errorf("staticPods[%d]: manifestPath %q is not an absolute clean path", i, truncate(sp.ManifestPath))
		case paths[sp.ManifestPath]:
			return fmt.Errorf("staticPods[%d]: manifestPath %q listed twice", i, sp.ManifestPath)
		case !isSHA256Hex(sp.SHA256):
			return fmt.Errorf("staticPods[%d]: sha256 %q is not 64 lowercase hex digits", i, truncate(sp.SHA256))
		case !isPodUID(sp.UID):
			// The kubelet makes directories named after pod UIDs.
			return fmt.Errorf("staticPods[%d]: uid %q is not 1 to 128 letters, digits, '-', '_' or '.'", i, truncate(sp.UID))
		case uids[sp.UID]:
			return fmt.Errorf("staticPods[%d]: uid %s listed twice", i, sp.UID)
		}
		paths[sp.ManifestPath] = true
		uids[sp.UID] = true
		if err := validateStaticPodContainers(sp.Containers); err != nil {
			return fmt.Errorf("staticPods[%d]: %v", i, err)
		}
	}
	return nil
}

func validateStaticPodContainers(containers []StaticPodContainer) error {
	if len(containers) > maxPodContainers {
		return fmt.Errorf("containers lists %d containers, at most %d", len(containers), maxPodContainers)
	}
	names := make(map[string]bool, len(containers))
	for i, c := range containers {
		switch {
		case !isContainerName(c.Name):
			return fmt.Errorf("containers[%d]: name %q is not a DNS label", i, truncate(c.Name))
		case names[c.Name]:
			return fmt.Errorf("containers[%d]: name %s listed twice", i, c.Name)
		case !isStatusContainerID(c.ContainerID):
			return fmt.Errorf("containers[%d]: containerID %q is not <runtime>://<id>", i, truncate(c.ContainerID))
		}
		names[c.Name] = true
	}
	return nil
}

// isContainerName accepts a DNS label (RFC 1123), as the API validates
// container names.
func isContainerName(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-') {
			return false
		}
	}
	return true
}

// isStatusContainerID accepts a container ID as pod status carries it:
// <runtime>://<id>, the runtime in lowercase letters, digits and '-'
// (cri-o://).
func isStatusContainerID(s string) bool {
	sep := strings.Index(s, "://")
	if sep < 1 || sep > 32 || !isContainerID(s[sep+3:]) {
		return false
	}
	for i := 0; i < sep; i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-') {
			return false
		}
	}
	return true
}

// isPodUID accepts what can safely name a directory: no separators, no
// "." or "..", no control characters.
func isPodUID(s string) bool {
	return isContainerID(s) && s != "." && s != ".."
}

func isContainerID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// truncate shortens what an error message echoes.
func truncate(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

func isSHA256Hex(s string) bool { return isHex(s, 64) }

// isHex reports whether s is n lowercase hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
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
	if len(data) > MaxFileSize {
		return fmt.Errorf("refusing to write %d bytes: the kubelet reads compat files of at most %d bytes", len(data), MaxFileSize)
	}
	return writeAtomic(path, data, true)
}

// writeAtomic replaces path with data: a temporary file in the same
// directory, mode 0644, rename. Readers see the old file or the whole new
// one. durable adds an fsync of the file before the rename and of the
// directory after it.
func writeAtomic(path string, data []byte, durable bool) (err error) {
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
	if durable {
		if err = tmp.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %v", tmp.Name(), err)
		}
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("closing %s: %v", tmp.Name(), err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("renaming into place: %v", err)
	}
	if !durable {
		return nil
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
// group nor others may write. It never follows a symbolic link and never
// blocks: the file is opened non-blocking without following links, and the
// opened descriptor is checked, so nothing swapped in between a check and
// the open is read. A missing file returns an error satisfying os.IsNotExist;
// a file that is there but not usable returns a *FileProblem; every other
// error (EMFILE, EIO) is transient.
func ReadFile(path string, ownerUID int) (*File, os.FileInfo, error) {
	fh, err := openFile(path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	if err := checkFileInfo(fi, ownerUID); err != nil {
		return nil, fi, err
	}
	if fi.Size() > MaxFileSize {
		return nil, fi, problemf("%s is larger than %d bytes", path, MaxFileSize)
	}
	data, err := ioutil.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, fi, err
	}
	if len(data) > MaxFileSize {
		return nil, fi, problemf("%s is larger than %d bytes", path, MaxFileSize)
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
