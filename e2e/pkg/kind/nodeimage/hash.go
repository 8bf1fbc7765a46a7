package nodeimage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
)

// HashLabel is the image label holding the hash of the inputs an image was
// built from: an image whose label matches is up to date.
const HashLabel = "io.kubelet-compat.kind.inputs"

// contentHash hashes named parts in name order, each framed by its name
// and length, so that moving bytes from one part to another changes it.
func contentHash(parts map[string][]byte) string {
	names := make([]string, 0, len(parts))
	for n := range parts {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%d:%s\n%d:", len(n), n, len(parts[n]))
		h.Write(parts[n])
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fileSHA256 is the hex sha256 of a file's content.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// shortHash is the prefix used in tags and cache file names.
func shortHash(h string) string {
	if len(h) > 16 {
		return h[:16]
	}
	return h
}
