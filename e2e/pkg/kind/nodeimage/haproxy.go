package nodeimage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"text/template"
)

// HAProxyRepository is the load balancer image's repository as Cluster
// API's Docker provider (CAPD) names it: DockerCluster's
// spec.loadBalancer.imageRepository, to which CAPD adds "/haproxy" and
// spec.loadBalancer.imageTag (HAProxyTag).
const HAProxyRepository = "kubelet-compat"

// haproxyPackages is what the load balancer runs: Debian's haproxy (2.6 on
// bookworm), which takes CAPD's configuration and its reload on SIGHUP
// (master-worker mode, -W).
var haproxyPackages = []string{"haproxy"}

// haproxyConfig is the configuration the image starts with, before CAPD
// writes the control-plane nodes into it (kind's haproxy image starts
// alike): the frontend and an empty backend.
const haproxyConfig = `# kubelet-compat's haproxy image: CAPD replaces this file.
global
  maxconn 1000

defaults
  mode tcp
  timeout connect 5s
  timeout client 50s
  timeout server 50s
  default-server init-addr none

frontend control-plane
  bind *:6443
  default_backend kube-apiservers

backend kube-apiservers
  option httpchk GET /healthz
`

const haproxyDockerfile = `FROM {{.Rootfs}}
RUN mkdir -p /usr/local/etc/haproxy
COPY haproxy.cfg /usr/local/etc/haproxy/haproxy.cfg
LABEL {{.HashLabel}}="{{.Hash}}"
ENTRYPOINT ["haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]
`

// HAProxyTag is the load balancer image's tag: its inputs' hash.
func HAProxyTag() string {
	return shortHash(haproxyHash())
}

func haproxyHash() string {
	return contentHash(map[string][]byte{
		"rootfs":     []byte(rootfsKey(haproxyPackages)),
		"config":     []byte(haproxyConfig),
		"dockerfile": []byte(haproxyDockerfile),
	})
}

// HAProxyRef is the load balancer image.
func HAProxyRef() string { return HAProxyRepository + "/haproxy:" + HAProxyTag() }

// BuildHAProxy makes the load balancer image CAPD runs in front of a
// workload cluster's control plane (HAProxyRef; no registry: CAPD's
// default, kindest/haproxy, is pulled) from a debootstrap of Debian's
// haproxy, unless it exists. Of opts it reads DockerEnv, OutputDir,
// CacheDir and Log; it installs debootstrap and the docker CLI when
// missing (hostdeps.Kind).
func BuildHAProxy(ctx context.Context, opts Options) (string, error) {
	b, done, err := newBuilder(ctx, opts)
	if err != nil {
		return "", err
	}
	defer done()
	ref, hash := HAProxyRef(), haproxyHash()
	if h, ok := b.docker.imageHash(ctx, ref); ok && h == hash {
		b.logf("load balancer image %s is up to date", ref)
		return ref, nil
	}
	stepDone := b.step("load balancer image " + ref)
	rootfs, err := b.importRootfs(ctx, HAProxyRepository+"/haproxy-rootfs", haproxyPackages)
	if err != nil {
		return "", err
	}
	ctxDir, err := b.tempDir("haproxy-context")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(ctxDir)
	var dockerfile bytes.Buffer
	t := template.Must(template.New("Dockerfile").Option("missingkey=error").Parse(haproxyDockerfile))
	if err := t.Execute(&dockerfile, map[string]string{"Rootfs": rootfs, "HashLabel": HashLabel, "Hash": hash}); err != nil {
		return "", err
	}
	if err := writeContext(ctxDir, map[string][]byte{"Dockerfile": dockerfile.Bytes(), "haproxy.cfg": []byte(haproxyConfig)}); err != nil {
		return "", err
	}
	if err := b.docker.run(ctx, "build", "--network", "none", "-t", ref, ctxDir); err != nil {
		return "", fmt.Errorf("building the load balancer image: %w", err)
	}
	stepDone()
	return ref, nil
}
