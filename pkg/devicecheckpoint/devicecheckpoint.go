// Package devicecheckpoint reads the kubelet device manager's checkpoint
// (<root-dir>/device-plugins/kubelet_internal_checkpoint) in both of its
// formats: v1, written up to 1.19, lists a container's device IDs; v2,
// written from 1.20, maps NUMA nodes to them.
package devicecheckpoint

import (
	"encoding/json"
	"regexp"
)

// Checkpoint is the part of the file kubelet-compat reads.
type Checkpoint struct {
	Data struct {
		PodDeviceEntries  []Entry
		RegisteredDevices map[string][]string
	}
}

// Entry is one container's allocation of one resource.
type Entry struct {
	PodUID        string
	ContainerName string
	ResourceName  string
	DeviceIDs     json.RawMessage
}

// Parse decodes a checkpoint.
func Parse(data []byte) (*Checkpoint, error) {
	var cp Checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return nil, err
	}
	return &cp, nil
}

var numaKey = regexp.MustCompile(`^-?[0-9]+$`)

// Format is the entry's format: 1 (a list of device IDs), 2 (device IDs per
// NUMA node) or 0 (neither).
func (e Entry) Format() int {
	var list []string
	if json.Unmarshal(e.DeviceIDs, &list) == nil {
		return 1
	}
	var perNUMA map[string][]string
	if json.Unmarshal(e.DeviceIDs, &perNUMA) != nil {
		return 0
	}
	for k := range perNUMA {
		if !numaKey.MatchString(k) {
			return 0
		}
	}
	return 2
}
