package roll

import (
	"encoding/json"
	"strings"
)

// runningPod is a pod the runtime runs, as kubelet-compat status says it:
// a line of BeforeFile, "pod NAMESPACE/NAME UID ID,ID,...".
type runningPod struct {
	Name, UID string
	IDs       []string
}

func (p runningPod) String() string {
	return "pod " + p.Name + " " + p.UID + " " + strings.Join(p.IDs, ",")
}

// parseRunningPods reads BeforeFile's lines.
func parseRunningPods(text string) []runningPod {
	var pods []runningPod
	for _, line := range lines(text) {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "pod" {
			continue
		}
		p := runningPod{Name: f[1], UID: f[2]}
		if len(f) > 3 && f[3] != "" {
			p.IDs = strings.Split(f[3], ",")
		}
		pods = append(pods, p)
	}
	return pods
}

func formatRunningPods(pods []runningPod) string {
	var b strings.Builder
	for _, p := range pods {
		b.WriteString(p.String() + "\n")
	}
	return b.String()
}

// podLine is a pod to judge: "NAMESPACE/NAME UID C,C,..." with its
// readiness-probed containers, "-" when none (a line of ReadyBeforeFile).
type podLine struct {
	Name, UID  string
	Containers []string
}

func (p podLine) String() string {
	c := "-"
	if len(p.Containers) > 0 {
		c = strings.Join(p.Containers, ",")
	}
	return p.Name + " " + p.UID + " " + c
}

func parsePodLines(text string) []podLine {
	var pods []podLine
	for _, line := range lines(text) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		p := podLine{Name: f[0], UID: f[1]}
		if len(f) > 2 && f[2] != "-" {
			p.Containers = strings.Split(f[2], ",")
		}
		pods = append(pods, p)
	}
	return pods
}

func formatPodLines(pods []podLine) string {
	var b strings.Builder
	for _, p := range pods {
		b.WriteString(p.String() + "\n")
	}
	return b.String()
}

// nodeStatus is what the roll reads of kubelet-compat status -o json: the
// kubelet's process version and the pods the runtime runs (its admission
// section, listed while a compat file is in force).
type nodeStatus struct {
	KubeletVersion string `json:"kubeletVersion"`
	Admission      struct {
		Pods []struct {
			Pod               string   `json:"pod"`
			UID               string   `json:"uid"`
			RunningContainers []string `json:"runningContainers"`
		} `json:"pods"`
	} `json:"admission"`
}

func parseNodeStatus(data []byte) (nodeStatus, error) {
	var s nodeStatus
	err := json.Unmarshal(data, &s)
	return s, err
}

// pods are the pods the runtime runs.
func (s nodeStatus) pods() []runningPod {
	var pods []runningPod
	for _, p := range s.Admission.Pods {
		pods = append(pods, runningPod{Name: p.Pod, UID: p.UID, IDs: p.RunningContainers})
	}
	return pods
}

// byUID indexes pods by UID.
func byUID(pods []runningPod) map[string]runningPod {
	m := map[string]runningPod{}
	for _, p := range pods {
		m[p.UID] = p
	}
	return m
}
