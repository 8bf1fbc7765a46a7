package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"syscall"
	"time"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
)

// compatFormat is one format of the compat file that kubelet-compat wrote.
type compatFormat struct {
	apiVersion string
	// read decodes and validates a file of this format as strictly as the
	// kubelets that read it did, and returns what it says about the past.
	read func(data []byte) (*compatHistory, error)
}

// compatFormats are all the formats this project ever wrote, oldest first;
// the last is the one record writes (kubeletcompat.APIVersion). record reads
// any of them and carries what it says forward into the newest, so that a
// format change migrates the history instead of dropping it. A new format
// appends its row; the rows before it stay.
var compatFormats = []compatFormat{
	// 3b2961f .. 6f73e23: the previous kubelet's version and, from
	// 06d0416, olderVersions (newest first, at most 8): the kubelets whose
	// hashes running containers may carry, but not which container
	// carries which.
	{apiVersion: "kubelet-compat.io/v1alpha1", read: readV1alpha1},
	// 6f73e23 on: every container that ran, with its hash version.
	{apiVersion: "kubelet-compat.io/v1alpha2", read: readV1alpha2},
}

// compatHistory is what a compat file record replaces says about the past.
type compatHistory struct {
	apiVersion string
	// previous is the kubelet that recorded the file.
	previous kubeletcompat.Version
	// containers is what the file says of each container it lists, by ID;
	// nil for a format that lists no containers.
	containers map[string]carried
	// versions are the kubelets whose hashes running containers may carry
	// by this file, newest first, previous included.
	versions []kubeletcompat.Version
	// recordedAt is when the file was written.
	recordedAt time.Time
}

// carried is what a replaced file says of a container: the kubelet whose
// hash it carries (older or newer than the running one) and its recorded
// spec.
type carried struct {
	hashVersion kubeletcompat.Version
	specHash    string
}

// parseAnyFormat reads a compat file of any format this project wrote.
func parseAnyFormat(data []byte) (*compatHistory, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if json.Unmarshal(data, &head) == nil && head.Kind == kubeletcompat.Kind {
		for _, f := range compatFormats {
			if head.APIVersion == f.apiVersion {
				return f.read(data)
			}
		}
	}
	// Not one of ours: the current format's parser says why.
	if _, err := kubeletcompat.Parse(data); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("unknown apiVersion/kind %q/%q", head.APIVersion, head.Kind)
}

func readV1alpha2(data []byte) (*compatHistory, error) {
	f, err := kubeletcompat.Parse(data)
	if err != nil {
		return nil, err
	}
	prev, _ := kubeletcompat.ParseVersion(f.PreviousVersion) // validated by Parse
	h := &compatHistory{apiVersion: f.APIVersion, previous: prev, recordedAt: f.RecordedAt, containers: make(map[string]carried, len(f.Containers))}
	versions := []kubeletcompat.Version{prev}
	for _, c := range f.Containers {
		v, _ := kubeletcompat.ParseVersion(c.HashVersion) // validated by Parse
		h.containers[c.ID] = carried{hashVersion: v, specHash: c.SpecHash}
		versions = append(versions, v)
	}
	h.versions = newestFirst(versions)
	return h, nil
}

// fileV1alpha1 is the v1alpha1 compat file.
type fileV1alpha1 struct {
	APIVersion      string                    `json:"apiVersion"`
	Kind            string                    `json:"kind"`
	PreviousVersion string                    `json:"previousVersion"`
	RecordedAt      time.Time                 `json:"recordedAt"`
	OlderVersions   []string                  `json:"olderVersions,omitempty"`
	StaticPods      []kubeletcompat.StaticPod `json:"staticPods,omitempty"`
}

// maxOlderVersions is what v1alpha1 allowed in olderVersions.
const maxOlderVersions = 8

// readV1alpha1 reads a v1alpha1 file with the checks the kubelets of that
// format made: unknown fields refused, olderVersions newest first and
// older than previousVersion, at most 8. Its static pods are not carried:
// record records the UIDs the static pods run under anyway.
func readV1alpha1(data []byte) (*compatHistory, error) {
	if len(data) > kubeletcompat.MaxFileSize {
		return nil, fmt.Errorf("larger than %d bytes", kubeletcompat.MaxFileSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f fileV1alpha1
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("unparsable: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unparsable: trailing data after the JSON document")
	}
	prev, err := fileVersion(f.PreviousVersion)
	if err != nil {
		return nil, fmt.Errorf("previousVersion: %v", err)
	}
	if f.RecordedAt.IsZero() {
		return nil, errors.New("recordedAt is missing")
	}
	if len(f.OlderVersions) > maxOlderVersions {
		return nil, fmt.Errorf("olderVersions lists %d versions, at most %d", len(f.OlderVersions), maxOlderVersions)
	}
	h := &compatHistory{apiVersion: f.APIVersion, previous: prev, recordedAt: f.RecordedAt, versions: []kubeletcompat.Version{prev}}
	for i, s := range f.OlderVersions {
		v, err := fileVersion(s)
		if err != nil {
			return nil, fmt.Errorf("olderVersions[%d]: %v", i, err)
		}
		if newer := h.versions[len(h.versions)-1]; !v.LessThan(newer) {
			return nil, fmt.Errorf("olderVersions[%d]: %s is not older than %s (newest first)", i, v, newer)
		}
		h.versions = append(h.versions, v)
	}
	return h, nil
}

func fileVersion(s string) (kubeletcompat.Version, error) {
	v, err := kubeletcompat.ParseVersion(s)
	if err == nil && v.Major != 1 {
		err = fmt.Errorf("%s: major version %d, want 1", v, v.Major)
	}
	return v, err
}

// newestFirst sorts versions newest first without duplicates.
func newestFirst(versions []kubeletcompat.Version) []kubeletcompat.Version {
	sort.SliceStable(versions, func(i, j int) bool { return versions[j].LessThan(versions[i]) })
	var out []kubeletcompat.Version
	for _, v := range versions {
		if len(out) == 0 || out[len(out)-1].Compare(v) != 0 {
			out = append(out, v)
		}
	}
	return out
}

// ignoredFile is an existing compat file the kubelet would not read.
type ignoredFile struct{ msg string }

func (e *ignoredFile) Error() string { return e.msg }

// readCompatBytes reads the file at path with the checks every kubelet of
// this project made before it read a compat file (kubeletcompat.ReadFile):
// a regular file, not a symlink, owned by ownerUID, writable by nobody else,
// at most kubeletcompat.MaxFileSize bytes; opened without following a link
// or blocking, and the opened descriptor is what is checked.
func readCompatBytes(path string, ownerUID int) ([]byte, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &ignoredFile{fmt.Sprintf("%s is a symbolic link, not a regular file", path)}
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return nil, &ignoredFile{fmt.Sprintf("%s is not a regular file (mode %s)", path, fi.Mode())}
	case fi.Mode().Perm()&0022 != 0:
		return nil, &ignoredFile{fmt.Sprintf("%s is group- or world-writable (mode %#o)", path, fi.Mode().Perm())}
	case !ok || int(st.Uid) != ownerUID:
		return nil, &ignoredFile{fmt.Sprintf("%s is not owned by uid %d", path, ownerUID)}
	case fi.Size() > kubeletcompat.MaxFileSize:
		return nil, &ignoredFile{fmt.Sprintf("%s is larger than %d bytes", path, kubeletcompat.MaxFileSize)}
	}
	data, err := io.ReadAll(io.LimitReader(fh, kubeletcompat.MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > kubeletcompat.MaxFileSize {
		return nil, &ignoredFile{fmt.Sprintf("%s is larger than %d bytes", path, kubeletcompat.MaxFileSize)}
	}
	return data, nil
}

// existingHistory reads the compat file record replaces, in any format, and
// refuses to replace one that records a newer kubelet, unless the running
// kubelet, older, started after that record: the node was rolled back to it
// (a newer kubelet recorded the file for the swap back). It returns nil when
// there is no history to carry: no file, a file the kubelet ignores (it
// protects nothing), or a file that is not a compat file (which --force
// replaces; refuseForeignFile said so).
func existingHistory(env Env, path string, running kubeletcompat.Version, rolledBack func(newer kubeletcompat.Version, recordedAt time.Time) bool) (*compatHistory, error) {
	data, err := readCompatBytes(path, env.OwnerUID)
	var ignored *ignoredFile
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case errors.As(err, &ignored):
		warnf(env, "the kubelet ignores the existing file (%v): replacing it, nothing of it is carried forward", err)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the existing %s: %w", path, err)
	}
	h, err := parseAnyFormat(data)
	if err != nil {
		return nil, nil
	}
	if running.LessThan(h.previous) && rolledBack != nil && rolledBack(h.previous, h.recordedAt) {
		return h, nil
	}
	if running.LessThan(h.previous) {
		return nil, fmt.Errorf("%s already records kubelet %s, newer than %s: refusing to overwrite it (delete it if that record is stale)", path, h.previous, running)
	}
	return h, nil
}
