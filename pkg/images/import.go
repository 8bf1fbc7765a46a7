package images

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
)

// CRINamespace is the containerd namespace the CRI plugin uses.
const CRINamespace = "k8s.io"

// Import loads an OCI layout tar into containerd's k8s.io namespace and
// unpacks each image into the snapshotter, as `ctr -n k8s.io images
// import` does. It returns the imported image names.
func Import(ctx context.Context, address string, layout []byte, snapshotter string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	client, err := containerd.New(address, containerd.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("containerd client at %s: %w", address, err)
	}
	defer client.Close()
	ctx = namespaces.WithNamespace(ctx, CRINamespace)
	imgs, err := client.Import(ctx, bytes.NewReader(layout))
	if err != nil {
		return nil, fmt.Errorf("importing images: %w", err)
	}
	var names []string
	for _, img := range imgs {
		if err := containerd.NewImage(client, img).Unpack(ctx, snapshotter); err != nil {
			return nil, fmt.Errorf("unpacking %s: %w", img.Name, err)
		}
		names = append(names, img.Name)
	}
	return names, nil
}
