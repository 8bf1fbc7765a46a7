package nodeimage

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"text/template"
)

//go:embed files
var embedded embed.FS

// executables are the embedded files installed with mode 0755.
var executables = map[string]bool{
	"entrypoint": true, "crictl": true, "kind-iptables-mode": true, "kind-kubelet-cgroup": true, "kube-proxy-wrapper": true, "node-setup.sh": true,
}

// file returns an embedded file.
func file(name string) []byte {
	b, err := embedded.ReadFile("files/" + name)
	if err != nil {
		panic(fmt.Sprintf("embedded file %s: %v", name, err)) // a build error, not a runtime one
	}
	return b
}

// allFiles returns every embedded file by name, for hashing.
func allFiles() map[string][]byte {
	entries, err := embedded.ReadDir("files")
	if err != nil {
		panic(err)
	}
	m := map[string][]byte{}
	for _, e := range entries {
		m[e.Name()] = file(e.Name())
	}
	return m
}

// render fills an embedded text/template.
func render(name string, data any) ([]byte, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(string(file(name)))
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// writeContext writes a docker build context: name -> content, scripts
// executable.
func writeContext(dir string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		mode := os.FileMode(0o644)
		if executables[n] {
			mode = 0o755
		}
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[n], mode); err != nil {
			return err
		}
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
	}
	return nil
}

// containerdConfig is the node's containerd configuration with the
// sandbox image of its Kubernetes version.
func containerdConfig(sandboxImage string, systemdCgroup bool) ([]byte, error) {
	return render("containerd-config.toml.tmpl", struct {
		SandboxImage  string
		SystemdCgroup bool
	}{sandboxImage, systemdCgroup})
}

// systemdCgroupFrom is the first minor kind configures with the systemd
// cgroup driver (kind writes cgroupDriver: systemd into kubeadm's
// KubeletConfiguration from 1.24, cgroupfs before); containerd must use
// the same driver. kubeadm carries the cluster's KubeletConfiguration over
// on upgrade, so a cluster keeps the driver of the version it was created
// with, and so does its node image's containerd.
const systemdCgroupFrom = 24

// systemdCgroup says whether node images of version v (1.30.14) use the
// systemd cgroup driver.
func systemdCgroup(v string) bool {
	var major, minor int
	fmt.Sscanf(v, "%d.%d", &major, &minor)
	return major > 1 || minor >= systemdCgroupFrom
}
