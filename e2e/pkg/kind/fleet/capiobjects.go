package fleet

// A workload cluster of Cluster API (CAPI v1.13, v1beta2) on CAPD: the
// objects the e2e applies in the management cluster, and the version
// bumps it makes.

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"
)

// capiCluster describes one workload cluster.
type capiCluster struct {
	// Name is the CAPI Cluster (and the prefix of its containers: CAPD
	// labels them io.x-k8s.kind.cluster=Name, as kind does).
	Name, Namespace string
	// Version is the Kubernetes version it is born at (1.30.14); Image
	// the node image of that version.
	Version, Image string
	// HAProxyImageRepository and HAProxyImageTag are the load balancer's
	// image (nodeimage.HAProxyRef): CAPD's default is pulled.
	HAProxyImageRepository, HAProxyImageTag string
	// SyncFrequency is the kubelets' syncFrequency (the fleet's, as kind
	// clusters get it).
	SyncFrequency string
	// ControlPlanes is the KubeadmControlPlane's replicas.
	ControlPlanes int
	// MachineDeployments are the workers' sets: each name's replicas.
	MachineDeployments []capiMD
	// InPlace: rollouts that update a Machine in place (no surge: KCP and
	// a MachineDeployment create a new Machine first whenever they may,
	// and try in place only on a Machine they would otherwise delete;
	// KCP v1.13 takes maxSurge 0 from 3 replicas only); else CAPI's
	// defaults (a surge Machine, then the old one deleted).
	InPlace bool
}

type capiMD struct {
	Name     string
	Replicas int
}

// capiTemplateName is the DockerMachineTemplate of a role for the node
// image of version: a replacement roll moves to another template, as
// CAPD's users do for a new image.
func capiTemplateName(cluster, role, version string) string {
	return cluster + "-" + role + "-v" + strings.ReplaceAll(version, ".", "-")
}

// capiObjectsTemplate is the cluster: no ClusterClass (the rolls bump the
// KubeadmControlPlane and each MachineDeployment themselves, in CAPI's
// order); the pod and service networks of the e2e's kind clusters (its
// own CNI, kind.InstallCNI, needs each node's podCIDR); the kubelets'
// sync and file check periods through kubeadm's patches, as the kind
// clusters get them from their kubeadmConfigPatches. CAPD adds what a
// kubelet in a container needs (its eviction thresholds at 0%, the cgroup
// root, kubeadm's ignored preflight errors).
const capiObjectsTemplate = `apiVersion: v1
kind: Namespace
metadata:
  name: {{.Namespace}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: {{.Name}}
  namespace: {{.Namespace}}
spec:
  clusterNetwork:
    pods:
      cidrBlocks: [10.244.0.0/16]
    services:
      cidrBlocks: [10.96.0.0/16]
    serviceDomain: cluster.local
  infrastructureRef:
    apiGroup: infrastructure.cluster.x-k8s.io
    kind: DockerCluster
    name: {{.Name}}
  controlPlaneRef:
    apiGroup: controlplane.cluster.x-k8s.io
    kind: KubeadmControlPlane
    name: {{.Name}}-control-plane
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{.Name}}-haproxy
  namespace: {{.Namespace}}
data:
  value: |
{{haproxyTemplate}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DockerCluster
metadata:
  name: {{.Name}}
  namespace: {{.Namespace}}
spec:
  loadBalancer:
    imageRepository: {{.HAProxyImageRepository}}
    imageTag: {{.HAProxyImageTag}}
    customHAProxyConfigTemplateRef:
      name: {{.Name}}-haproxy
---
{{template "machineTemplate" (args . "control-plane")}}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta2
kind: KubeadmControlPlane
metadata:
  name: {{.Name}}-control-plane
  namespace: {{.Namespace}}
spec:
  replicas: {{.ControlPlanes}}
  version: v{{.Version}}
{{- if .InPlace}}
  rollout:
    strategy:
      type: RollingUpdate
      rollingUpdate:
        maxSurge: 0
{{- end}}
  machineTemplate:
    spec:
      infrastructureRef:
        apiGroup: infrastructure.cluster.x-k8s.io
        kind: DockerMachineTemplate
        name: {{templateName .Name "control-plane" .Version}}
  kubeadmConfigSpec:
    clusterConfiguration:
      apiServer:
        certSANs: [localhost, 127.0.0.1]
{{template "kubeadm" .}}
{{- range .MachineDeployments}}
---
{{template "machineTemplate" (args $ .Name)}}
---
apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KubeadmConfigTemplate
metadata:
  name: {{$.Name}}-{{.Name}}
  namespace: {{$.Namespace}}
spec:
  template:
    spec:
{{template "kubeadmJoin" $}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata:
  name: {{$.Name}}-{{.Name}}
  namespace: {{$.Namespace}}
spec:
  clusterName: {{$.Name}}
  replicas: {{.Replicas}}
{{- if $.InPlace}}
  rollout:
    strategy:
      type: RollingUpdate
      rollingUpdate:
        maxSurge: 0
        maxUnavailable: 1
{{- end}}
  selector:
    matchLabels: {}
  template:
    spec:
      clusterName: {{$.Name}}
      version: v{{$.Version}}
      bootstrap:
        configRef:
          apiGroup: bootstrap.cluster.x-k8s.io
          kind: KubeadmConfigTemplate
          name: {{$.Name}}-{{.Name}}
      infrastructureRef:
        apiGroup: infrastructure.cluster.x-k8s.io
        kind: DockerMachineTemplate
        name: {{templateName $.Name .Name $.Version}}
{{- end}}
`

// capiSubTemplates are the pieces capiObjectsTemplate repeats.
const capiSubTemplates = `{{define "machineTemplate"}}apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DockerMachineTemplate
metadata:
  name: {{templateName .C.Name .Role .C.Version}}
  namespace: {{.C.Namespace}}
spec:
  template:
    spec:
      customImage: {{.C.Image}}{{end}}
{{define "kubeadm"}}    initConfiguration:
      patches:
        directory: /etc/kubernetes/patches
    joinConfiguration:
      patches:
        directory: /etc/kubernetes/patches
{{kubeletPatch .SyncFrequency "    "}}{{end}}
{{define "kubeadmJoin"}}      joinConfiguration:
        patches:
          directory: /etc/kubernetes/patches
{{kubeletPatch .SyncFrequency "      "}}{{end}}
`

// kubeletPatchFile is a KubeadmConfigSpec's files entry of kubeadm's patch
// of the node's KubeletConfiguration, at syncFrequency %s.
const kubeletPatchFile = `files:
- path: /etc/kubernetes/patches/kubeletconfiguration0+merge.yaml
  owner: root:root
  permissions: "0644"
  content: |
    apiVersion: kubelet.config.k8s.io/v1beta1
    kind: KubeletConfiguration
    syncFrequency: %s
    fileCheckFrequency: 5s`

// capiFuncs are the templates' functions.
var capiFuncs = template.FuncMap{
	"haproxyTemplate": func() string { return indent(capiHAProxyTemplate, "    ") },
	"templateName":    capiTemplateName,
	"kubeletPatch":    func(sync, prefix string) string { return indent(fmt.Sprintf(kubeletPatchFile, sync), prefix) },
	"args":            func(c capiCluster, role string) map[string]any { return map[string]any{"C": c, "Role": role} },
}

// capiHAProxyTemplate is the load balancer's configuration template
// (DockerCluster's customHAProxyConfigTemplateRef): CAPD v1.13.8's
// default (test/infrastructure/docker/internal/loadbalancer/config.go)
// but for maxconn, whose 100000 makes haproxy raise its open-files limit
// to 200030, which this machine's hard limit (20000, no CAP_SYS_RESOURCE)
// refuses: the reload fails, the control plane is never behind it. 8000
// needs 16030.
const capiHAProxyTemplate = `global
  log /dev/log local0
  log /dev/log local1 notice
  daemon
  maxconn 8000

resolvers docker
  nameserver dns 127.0.0.11:53

defaults
  log global
  mode tcp
  option dontlognull
  timeout connect 5000
  timeout client 50000
  timeout server 50000
  default-server init-addr none

frontend stats
  mode http
  bind *:8404
  stats enable
  stats uri /stats
  stats refresh 1s
  stats admin if TRUE

frontend control-plane
  bind *:{{ .FrontendControlPlanePort }}
  {{ if .IPv6 -}}
  bind :::{{ .FrontendControlPlanePort }};
  {{- end }}
  default_backend kube-apiservers

backend kube-apiservers
  option httpchk GET /healthz
  {{range $server, $backend := .BackendServers}}
  server {{ $server }} {{ JoinHostPort $backend.Address $.BackendControlPlanePort }} weight {{ $backend.Weight }} check check-ssl verify none resolvers docker resolve-prefer {{ if $.IPv6 -}} ipv6 {{- else -}} ipv4 {{- end }}
  {{- end}}
`

// objects is the cluster's YAML stream.
func (c capiCluster) objects() ([]byte, error) {
	t, err := template.New("objects").Funcs(capiFuncs).Option("missingkey=error").Parse(capiObjectsTemplate + capiSubTemplates)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, c); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// machineTemplate is one DockerMachineTemplate of c for role at version
// (a replacement roll's templates of the target's node image).
func (c capiCluster) machineTemplate(role, version, image string) ([]byte, error) {
	c.Version, c.Image = version, image
	t, err := template.New("t").Funcs(capiFuncs).Parse(capiSubTemplates + `{{template "machineTemplate" .}}`)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	err = t.Execute(&b, map[string]any{"C": c, "Role": role})
	return b.Bytes(), err
}

// capiVersionPatch is the merge patch of a bump: the version (CAPI wants
// a v), and for a replacement roll the machine template of the target's
// node image; path is the KubeadmControlPlane's (spec) or a
// MachineDeployment's (spec.template.spec).
func capiVersionPatch(kcp bool, version, template string) []byte {
	ref := ""
	if template != "" {
		ref = fmt.Sprintf(`,"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachineTemplate","name":%q}`, template)
	}
	if kcp {
		if ref != "" {
			return []byte(fmt.Sprintf(`{"spec":{"version":"v%s","machineTemplate":{"spec":{%s}}}}`, version, ref[1:]))
		}
		return []byte(fmt.Sprintf(`{"spec":{"version":"v%s"}}`, version))
	}
	return []byte(fmt.Sprintf(`{"spec":{"template":{"spec":{"version":"v%s"%s}}}}`, version, ref))
}

// indent prefixes every non-empty line of s (a YAML block scalar's body).
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}
