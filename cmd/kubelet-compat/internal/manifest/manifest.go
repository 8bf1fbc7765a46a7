// Package manifest reads pod manifests: the kubelet's static pod directory,
// and files or directories of YAML/JSON given to preflight.
package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/regularfile"
	v1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// maxManifestSize is the kubelet's limit for one static pod file.
const maxManifestSize = 10 << 20

// Static is one file of the kubelet's static pod directory.
type Static struct {
	// Path is the absolute, clean path, as the compat file records it.
	Path string
	// Data is the file's bytes, as hashed into the compat file.
	Data []byte
	// Pod is the decoded pod with the kubelet's defaults applied.
	Pod *v1.Pod
}

// StaticPodName is the name the kubelet gives a static pod on a node.
func StaticPodName(podName, nodeName string) string {
	return podName + "-" + strings.ToLower(nodeName)
}

// Namespace returns the pod's namespace, "default" when unset, as the kubelet does.
func Namespace(pod *v1.Pod) string {
	if pod.Namespace == "" {
		return "default"
	}
	return pod.Namespace
}

// ReadStaticDir reads the files the kubelet reads from its manifest
// directory: regular files whose names do not start with a dot, in name
// order; it does not recurse. A file that is not one valid Pod is an error:
// the kubelet would not run it either, and nothing should be recorded from a
// directory in that state.
func ReadStaticDir(dir string) ([]Static, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("reading manifest directory: %w", err)
	}
	var out []Static
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(abs, e.Name())
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			continue // the kubelet skips directories, sockets and dangling links
		}
		data, err := ReadFile(path)
		if err != nil {
			return nil, err
		}
		pod, err := DecodeStaticPod(data)
		if err != nil {
			return nil, fmt.Errorf("manifest %s: %w", path, err)
		}
		out = append(out, Static{Path: path, Data: data, Pod: pod})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// ReadFile reads a manifest without ever blocking: it opens non-blocking and
// reads only a regular file, so a FIFO swapped in after a check cannot stall
// a command that holds the compat file's lock.
func ReadFile(path string) ([]byte, error) {
	data, err := regularfile.Read(path, maxManifestSize, false)
	if err != nil {
		return nil, err
	}
	if len(data) > maxManifestSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxManifestSize)
	}
	return data, nil
}

// DecodeStaticPod decodes a static pod file as the kubelet does: one Pod
// (YAML or JSON), defaults applied.
func DecodeStaticPod(data []byte) (*v1.Pod, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	pod, kind, err := decodePod(js)
	if err != nil {
		return nil, err
	}
	if pod == nil {
		return nil, fmt.Errorf("want a v1 Pod, got %s", kind)
	}
	return pod, nil
}

// decodePod returns the pod, or nil and the document's kind when it is not a Pod.
func decodePod(js []byte) (*v1.Pod, string, error) {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(js, &meta); err != nil {
		return nil, "", fmt.Errorf("not an object: %w", err)
	}
	if meta.Kind == "" {
		return nil, "", errors.New("no kind")
	}
	if meta.Kind != "Pod" || meta.APIVersion != "v1" {
		if meta.APIVersion == "" {
			return nil, meta.Kind + " without apiVersion", nil
		}
		return nil, meta.APIVersion + " " + meta.Kind, nil
	}
	var pod v1.Pod
	if err := json.Unmarshal(js, &pod); err != nil {
		return nil, "", fmt.Errorf("invalid Pod: %w", err)
	}
	if pod.Name == "" {
		return nil, "", errors.New("invalid Pod: metadata.name is empty")
	}
	if len(pod.Spec.Containers) == 0 {
		return nil, "", fmt.Errorf("invalid Pod %s: no containers", pod.Name)
	}
	for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.Name == "" || c.Image == "" {
			return nil, "", fmt.Errorf("invalid Pod %s: every container needs a name and an image", pod.Name)
		}
	}
	SetDefaults(&pod)
	return &pod, "", nil
}

// Source is a pod read from a file given on the command line.
type Source struct {
	// File and Index locate the document (Index counts documents from 0).
	File  string
	Index int
	Pod   *v1.Pod
}

// Load reads pods from files and directories (non-hidden regular files,
// name order, no recursion). Files may hold several YAML documents or a
// JSON object. Documents of other kinds are skipped with a note; an
// unparsable document is an error.
func Load(paths []string) ([]Source, []string, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, nil, err
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") || e.IsDir() {
				continue
			}
			files = append(files, filepath.Join(p, e.Name()))
		}
	}
	var pods []Source
	var notes []string
	for _, file := range files {
		data, err := ReadFile(file)
		if err != nil {
			return nil, nil, err
		}
		docs, err := splitDocuments(data)
		if err != nil {
			return nil, nil, fmt.Errorf("manifest %s: %w", file, err)
		}
		for i, doc := range docs {
			js, err := yaml.YAMLToJSON(doc)
			if err != nil {
				return nil, nil, fmt.Errorf("manifest %s, document %d: %w", file, i+1, err)
			}
			if string(bytes.TrimSpace(js)) == "null" {
				continue // an empty document between separators
			}
			pod, kind, err := decodePod(js)
			if err != nil {
				return nil, nil, fmt.Errorf("manifest %s, document %d: %w", file, i+1, err)
			}
			if pod == nil {
				notes = append(notes, fmt.Sprintf("%s, document %d: skipped %s (only Pods are checked)", file, i+1, kind))
				continue
			}
			pods = append(pods, Source{File: file, Index: i, Pod: pod})
		}
	}
	return pods, notes, nil
}

func splitDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}
