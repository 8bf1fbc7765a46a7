package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

// The picture file: what `kubelet-compat picture` writes before a swap and
// `kubelet-compat gate` judges the node against.
const (
	PictureAPIVersion = "kubelet-compat.io/v1alpha1"
	PictureKind       = "NodePicture"
	// MaxPictureSize bounds the picture file a gate reads.
	MaxPictureSize = 64 << 20
)

// Picture is the node before a swap: the runtime's view of every pod and
// the kubelet that ran.
type Picture struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Node       string `json:"node"`
	// Kubelet is the kubelet that ran at the picture, from /proc;
	// KubeletFoundBy says how it was identified.
	Kubelet        Kubelet `json:"kubelet"`
	KubeletFoundBy string  `json:"kubeletFoundBy"`
	// CRIAPIVersion is the CRI API the runtime answered.
	CRIAPIVersion string `json:"criAPIVersion"`
	// Runtime is the runtime's view of every pod; its taken is the
	// picture's time.
	Runtime snapshot.Snapshot `json:"runtime"`
}

// MarshalPicture renders the picture as it is written: indented JSON with a
// final newline.
func MarshalPicture(p *Picture) ([]byte, error) {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// ParsePicture decodes a picture, refusing unknown fields, another schema,
// and a picture without a time, a kubelet or pod UIDs.
func ParsePicture(data []byte) (*Picture, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	p := &Picture{}
	if err := dec.Decode(p); err != nil {
		return nil, fmt.Errorf("not a picture: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("not a picture: data after the object")
	}
	switch {
	case p.APIVersion != PictureAPIVersion || p.Kind != PictureKind:
		return nil, fmt.Errorf("not a picture: apiVersion %.40q, kind %.40q (want %s, %s)", p.APIVersion, p.Kind, PictureAPIVersion, PictureKind)
	case p.Runtime.Taken.IsZero():
		return nil, fmt.Errorf("the picture has no time (runtime.taken)")
	case p.Kubelet.PID <= 0 || p.Kubelet.StartedAt.IsZero():
		return nil, fmt.Errorf("the picture names no kubelet (kubelet.pid, kubelet.startedAt)")
	}
	for _, sb := range p.Runtime.Sandboxes {
		if sb.ID == "" || sb.UID == "" || sb.Pod == "" {
			return nil, fmt.Errorf("the picture has a sandbox without an ID, a pod UID or a pod name (%.40q)", sb.ID)
		}
	}
	for _, c := range p.Runtime.Containers {
		if c.ID == "" || c.SandboxID == "" || c.Name == "" {
			return nil, fmt.Errorf("the picture has a container without an ID, a sandbox or a name (%.40q)", c.ID)
		}
	}
	return p, nil
}
