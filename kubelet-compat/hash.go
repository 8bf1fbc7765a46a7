package kubeletcompat

import (
	"crypto/sha256"
	"encoding/json"
	"hash"
	"hash/fnv"

	"github.com/davecgh/go-spew/spew"
	v1 "k8s.io/api/core/v1"
)

func sha256Sum(data []byte) [32]byte { return sha256.Sum256(data) }

// deepHashObject is k8s.io/kubernetes/pkg/util/hash.DeepHashObject: every
// kubelet hashes through this exact go-spew configuration.
func deepHashObject(hasher hash.Hash, objectToWrite interface{}) {
	hasher.Reset()
	printer := spew.ConfigState{
		Indent:         " ",
		SortKeys:       true,
		DisableMethods: true,
		SpewKeys:       true,
	}
	printer.Fprintf(hasher, "%#v", objectToWrite)
}

// hashJSON hashes a container's JSON bytes as kubelets 1.16 to 1.30 do.
func hashJSON(containerJSON []byte) uint64 {
	hasher := fnv.New32a()
	deepHashObject(hasher, containerJSON)
	return uint64(hasher.Sum32())
}

// hashNameImage is the hash of kubelets 1.31 and later: name and image only.
func hashNameImage(container *v1.Container) uint64 {
	// json.Marshal sorts map keys, exactly as upstream's map[string]string does.
	containerJSON, _ := json.Marshal(map[string]string{
		"name":  container.Name,
		"image": container.Image,
	})
	return hashJSON(containerJSON)
}
