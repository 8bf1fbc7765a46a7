// Package ocilayout builds container images without a registry or a Docker
// engine: an OCI image layout in a tar, one uncompressed layer per image.
// It imports nothing of containerd, so that a module whose gRPC clashes
// with containerd v1.6's genproto (deploy/cluster-api) can use it; package
// images re-exports it and imports the layouts into containerd.
package ocilayout

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"
)

// File is one entry of the image's only layer.
type File struct {
	Path string // without leading slash
	Mode int64  // permission bits
	Data []byte
	// Link makes a symlink to this target instead of a regular file.
	Link string
	Dir  bool
}

// Image describes one image.
type Image struct {
	Ref        string // full name, e.g. kubelet-compat.local/e2e/busybox:1
	Entrypoint []string
	Cmd        []string
	Env        []string
	Files      []File
}

// epoch is the fixed timestamp of every layer entry: the same inputs give
// the same image digest.
var epoch = time.Unix(0, 0).UTC()

// Layout returns an OCI image layout (oci-layout, index.json, blobs) as a
// tar stream holding the images, each named with the
// io.containerd.image.name and org.opencontainers.image.ref.name
// annotations, and the manifest digest of each image.
func Layout(imgs ...Image) ([]byte, map[string]string, error) {
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	blobs := map[string][]byte{}
	add := func(data []byte) (string, int64) {
		d := fmt.Sprintf("sha256:%x", sha256.Sum256(data))
		blobs[d] = data
		return d, int64(len(data))
	}
	type desc struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int64             `json:"size"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	var index struct {
		SchemaVersion int    `json:"schemaVersion"`
		MediaType     string `json:"mediaType"`
		Manifests     []desc `json:"manifests"`
	}
	index.SchemaVersion, index.MediaType = 2, "application/vnd.oci.image.index.v1+json"
	digests := map[string]string{}
	for _, img := range imgs {
		layer, err := layerTar(img.Files)
		if err != nil {
			return nil, nil, fmt.Errorf("layer of %s: %w", img.Ref, err)
		}
		layerDigest, layerSize := add(layer)
		config := map[string]interface{}{
			"architecture": "amd64",
			"os":           "linux",
			"created":      epoch.Format(time.RFC3339),
			"config":       map[string]interface{}{"Entrypoint": img.Entrypoint, "Cmd": img.Cmd, "Env": img.Env},
			"rootfs":       map[string]interface{}{"type": "layers", "diff_ids": []string{layerDigest}},
		}
		cj, err := json.Marshal(config)
		if err != nil {
			return nil, nil, err
		}
		configDigest, configSize := add(cj)
		manifest := map[string]interface{}{
			"schemaVersion": 2,
			"mediaType":     "application/vnd.oci.image.manifest.v1+json",
			"config":        desc{MediaType: "application/vnd.oci.image.config.v1+json", Digest: configDigest, Size: configSize},
			"layers":        []desc{{MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: layerDigest, Size: layerSize}},
		}
		mj, err := json.Marshal(manifest)
		if err != nil {
			return nil, nil, err
		}
		md, ms := add(mj)
		digests[img.Ref] = md
		index.Manifests = append(index.Manifests, desc{MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: md, Size: ms,
			Annotations: map[string]string{"io.containerd.image.name": img.Ref, "org.opencontainers.image.ref.name": img.Ref}})
	}
	ij, err := json.Marshal(index)
	if err != nil {
		return nil, nil, err
	}
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return nil, nil, err
	}
	if err := put("index.json", ij); err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(blobs))
	for d := range blobs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		if err := put("blobs/sha256/"+d[len("sha256:"):], blobs[d]); err != nil {
			return nil, nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, nil, err
	}
	return out.Bytes(), digests, nil
}

func layerTar(files []File) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.Path, Mode: f.Mode, ModTime: epoch, Uname: "root", Gname: "root"}
		switch {
		case f.Dir:
			h.Typeflag, h.Name = tar.TypeDir, f.Path+"/"
			if h.Mode == 0 {
				h.Mode = 0o755
			}
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.Link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.Copy(tw, bytes.NewReader(f.Data)); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
