package sim

import (
	"bytes"
	"fmt"
	"time"

	"sigs.k8s.io/yaml"
)

// The kwok Stages: kwok's own node-initialize and pod lifecycle Stages
// (sigs.k8s.io/kwok v0.8.0, kustomize/stage/node/fast and
// kustomize/stage/pod/general) without their random delays, and the Job's
// pod ending after the per-node duration: Succeeded, or Failed on the
// nodes whose gate fails. No heartbeat: no node-heartbeat Stage (nothing
// here, no node lifecycle controller, would notice a node's silence), and
// kwok renewed no node Lease in these runs (kube-node-lease stayed empty),
// so a real fleet's background (each kubelet's Lease every 10 s, its
// node status) is not in the API server's request counts.

// Labels SUC puts on its Jobs and their pods (pkg/apis/upgrade.cattle.io).
const (
	labelPlan = "upgrade.cattle.io/plan"
	labelNode = "upgrade.cattle.io/node"
)

type stage struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Metadata   meta      `json:"metadata"`
	Spec       stageSpec `json:"spec"`
}

type meta struct {
	Name string `json:"name"`
}

type stageSpec struct {
	ResourceRef resourceRef `json:"resourceRef"`
	Selector    selector    `json:"selector"`
	Delay       *delay      `json:"delay,omitempty"`
	Next        next        `json:"next"`
}

type resourceRef struct {
	APIGroup string `json:"apiGroup"`
	Kind     string `json:"kind"`
}

type selector struct {
	MatchExpressions []expr `json:"matchExpressions"`
}

type expr struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

type delay struct {
	DurationMilliseconds int64 `json:"durationMilliseconds"`
}

type next struct {
	Delete         bool   `json:"delete,omitempty"`
	StatusTemplate string `json:"statusTemplate,omitempty"`
}

// StageTimes are the Job pods' durations in the simulation.
type StageTimes struct {
	Worker       time.Duration
	ControlPlane time.Duration
	// ControlPlanePlan is the control-plane Plan's name (its pods take
	// ControlPlane).
	ControlPlanePlan string
}

// Stages is the kwok configuration: a YAML stream of Stages.
func Stages(t StageTimes, failNodes []string) ([]byte, error) {
	if t.Worker <= 0 || t.ControlPlane <= 0 || t.ControlPlanePlan == "" {
		return nil, fmt.Errorf("stages: want both durations above 0 and the control-plane Plan's name")
	}
	live := expr{Key: ".metadata.deletionTimestamp", Operator: "DoesNotExist"}
	phase := func(p string) expr { return expr{Key: ".status.phase", Operator: "In", Values: []string{p}} }
	ready := expr{Key: `.status.conditions.[] | select( .type == "Ready" ) | .status`, Operator: "In", Values: []string{"True"}}
	job := expr{Key: ".metadata.ownerReferences.[].kind", Operator: "In", Values: []string{"Job"}}
	plan := func(op string) expr {
		return expr{Key: fmt.Sprintf(".metadata.labels[%q]", labelPlan), Operator: op, Values: []string{t.ControlPlanePlan}}
	}
	onNodes := func(op string) expr { return expr{Key: ".spec.nodeName", Operator: op, Values: failNodes} }
	worker := []expr{live, phase("Running"), ready, job, plan("NotIn")}
	stages := []stage{
		podStage("node-initialize", "Node", nil, []expr{{Key: `.status.conditions.[] | select( .type == "Ready" ) | .status`, Operator: "NotIn", Values: []string{"True"}}}, nodeInitialize),
		podStage("pod-create", "Pod", nil, []expr{live, {Key: ".status.containerStatuses", Operator: "DoesNotExist"}}, podCreate),
		podStage("pod-init-container-running", "Pod", nil, []expr{live, phase("Pending"),
			{Key: `.status.conditions.[] | select( .type == "Initialized" ) | .status`, Operator: "NotIn", Values: []string{"True"}},
			{Key: ".status.initContainerStatuses.[].state.waiting.reason", Operator: "Exists"}}, initRunning),
		podStage("pod-init-container-completed", "Pod", nil, []expr{live, phase("Pending"),
			{Key: ".status.initContainerStatuses.[].state.running.startedAt", Operator: "Exists"}}, initCompleted),
		podStage("pod-ready", "Pod", nil, []expr{live, phase("Pending"),
			{Key: `.status.conditions.[] | select( .type == "Initialized" ) | .status`, Operator: "In", Values: []string{"True"}},
			{Key: ".status.containerStatuses.[].state.running.startedAt", Operator: "DoesNotExist"}}, podReady),
		{APIVersion: "kwok.x-k8s.io/v1alpha1", Kind: "Stage", Metadata: meta{Name: "pod-delete"},
			Spec: stageSpec{ResourceRef: resourceRef{APIGroup: "v1", Kind: "Pod"},
				Selector: selector{MatchExpressions: []expr{{Key: ".metadata.deletionTimestamp", Operator: "Exists"}}}, Next: next{Delete: true}}},
		podStage("job-control-plane", "Pod", &delay{t.ControlPlane.Milliseconds()}, []expr{live, phase("Running"), ready, job, plan("In")}, terminated("Succeeded", 0, "Completed")),
	}
	if len(failNodes) > 0 {
		stages = append(stages,
			podStage("job-worker", "Pod", &delay{t.Worker.Milliseconds()}, append(worker, onNodes("NotIn")), terminated("Succeeded", 0, "Completed")),
			podStage("job-worker-gate-failed", "Pod", &delay{t.Worker.Milliseconds()}, append(worker, onNodes("In")), terminated("Failed", 1, "Error")))
	} else {
		stages = append(stages, podStage("job-worker", "Pod", &delay{t.Worker.Milliseconds()}, worker, terminated("Succeeded", 0, "Completed")))
	}
	var b bytes.Buffer
	for _, s := range stages {
		y, err := yaml.Marshal(s)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}

func podStage(name, kind string, d *delay, sel []expr, template string) stage {
	return stage{APIVersion: "kwok.x-k8s.io/v1alpha1", Kind: "Stage", Metadata: meta{Name: name},
		Spec: stageSpec{ResourceRef: resourceRef{APIGroup: "v1", Kind: kind}, Selector: selector{MatchExpressions: sel}, Delay: d,
			Next: next{StatusTemplate: template}}}
}

// terminated is the status of a pod whose containers all ended with code.
func terminated(phase string, code int, reason string) string {
	return fmt.Sprintf(`{{ $now := Now }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    terminated:
      exitCode: %d
      finishedAt: {{ $now | Quote }}
      reason: %s
      startedAt: {{ $now | Quote }}
{{ end }}
phase: %s
`, code, reason, phase)
}

// The templates below are kwok v0.8.0's (Apache-2.0), trimmed.

const nodeInitialize = `{{ $now := Now }}
{{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
conditions:
{{ range NodeConditions }}
- lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $lastTransitionTime | Quote }}
  message: {{ .message | Quote }}
  reason: {{ .reason | Quote }}
  status: {{ .status | Quote }}
  type: {{ .type  | Quote}}
{{ end }}
addresses:
{{ with NodeIP }}
- address: {{ . | Quote }}
  type: InternalIP
{{ end }}
{{ with NodeName }}
- address: {{ . | Quote }}
  type: Hostname
{{ end }}
allocatable:
  cpu: "32"
  memory: 128Gi
  pods: "110"
capacity:
  cpu: "32"
  memory: 128Gi
  pods: "110"
nodeInfo:
  architecture: amd64
  containerRuntimeVersion: kwok
  kernelVersion: kwok
  kubeProxyVersion: kwok
  kubeletVersion: v1.30.14
  operatingSystem: linux
phase: Running
`

const podCreate = `{{ $now := Now }}
conditions:
{{ if .spec.initContainers }}
- lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
  reason: ContainersNotInitialized
  status: "False"
  type: Initialized
{{ else }}
- lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
{{ end }}
- lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
  reason: ContainersNotReady
  status: "False"
  type: Ready
- lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
  reason: ContainersNotReady
  status: "False"
  type: ContainersReady
{{ if .spec.initContainers }}
initContainerStatuses:
{{ range .spec.initContainers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    waiting:
      reason: PodInitializing
{{ end }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    waiting:
      reason: ContainerCreating
{{ end }}
hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
phase: Pending
`

const initRunning = `{{ $now := Now }}
initContainerStatuses:
{{ range .spec.initContainers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
`

const initCompleted = `{{ $now := Now }}
conditions:
- lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
  status: "True"
  reason: ""
  type: Initialized
initContainerStatuses:
{{ range .spec.initContainers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  started: false
  state:
    terminated:
      exitCode: 0
      finishedAt: {{ $now | Quote }}
      reason: Completed
      startedAt: {{ $now | Quote }}
{{ end }}
`

const podReady = `{{ $now := Now }}
conditions:
- lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Ready
- lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: ContainersReady
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
phase: Running
startTime: {{ $now | Quote }}
`
