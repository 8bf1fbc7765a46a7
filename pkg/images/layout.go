// Package images builds the e2e's container images without a registry or
// a Docker engine (an OCI image layout in a tar, one uncompressed layer,
// package ocilayout) and imports them into containerd's k8s.io namespace
// with the containerd Go client.
package images

import "github.com/kubelet-compat/kubelet-compat/pkg/ocilayout"

// File is one entry of the image's only layer (ocilayout.File).
type File = ocilayout.File

// Image describes one image (ocilayout.Image).
type Image = ocilayout.Image

// Layout returns an OCI image layout tar holding imgs and the manifest
// digest of each (ocilayout.Layout).
func Layout(imgs ...Image) ([]byte, map[string]string, error) { return ocilayout.Layout(imgs...) }
