package nodeimage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/kubelet-compat/kubelet-compat/pkg/filehash"
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
var fileSHA256 = filehash.SHA256

// shortHash is the prefix used in tags and cache file names.
func shortHash(h string) string {
	if len(h) > 16 {
		return h[:16]
	}
	return h
}
