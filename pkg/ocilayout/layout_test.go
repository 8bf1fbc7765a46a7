package ocilayout

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"gotest.tools/v3/assert"
)

func TestLayout(t *testing.T) {
	img := Image{Ref: "kubelet-compat.local/e2e/x:1", Cmd: []string{"sh"}, Files: []File{
		{Path: "bin", Dir: true}, {Path: "bin/busybox", Mode: 0o755, Data: []byte("ELF")}, {Path: "bin/sh", Link: "busybox"}}}
	data, digests, err := Layout(img)
	assert.NilError(t, err)
	again, _, err := Layout(img)
	assert.NilError(t, err)
	assert.Assert(t, bytes.Equal(data, again), "the layout is not reproducible")

	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		assert.NilError(t, err)
		b, _ := io.ReadAll(tr)
		files[h.Name] = b
	}
	assert.Assert(t, files["oci-layout"] != nil)
	var index struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
		}
	}
	assert.NilError(t, json.Unmarshal(files["index.json"], &index))
	assert.Equal(t, len(index.Manifests), 1)
	assert.Equal(t, index.Manifests[0].Annotations["io.containerd.image.name"], img.Ref)
	assert.Equal(t, index.Manifests[0].Digest, digests[img.Ref])
	manifest := files["blobs/sha256/"+digests[img.Ref][len("sha256:"):]]
	var m struct {
		Config struct{ Digest string }
		Layers []struct{ Digest string }
	}
	assert.NilError(t, json.Unmarshal(manifest, &m))
	assert.Assert(t, files["blobs/sha256/"+m.Config.Digest[len("sha256:"):]] != nil)
	layer := files["blobs/sha256/"+m.Layers[0].Digest[len("sha256:"):]]
	lr := tar.NewReader(bytes.NewReader(layer))
	var names []string
	for {
		h, err := lr.Next()
		if err == io.EOF {
			break
		}
		assert.NilError(t, err)
		names = append(names, h.Name)
	}
	assert.DeepEqual(t, names, []string{"bin/", "bin/busybox", "bin/sh"})
}
