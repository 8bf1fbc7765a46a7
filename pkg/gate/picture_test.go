package gate

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func TestPictureRoundTrip(t *testing.T) {
	p := &Picture{APIVersion: PictureAPIVersion, Kind: PictureKind, Node: "node-1", Kubelet: oldKubelet, KubeletFoundBy: "systemd kubelet.service",
		CRIAPIVersion: "v1", Runtime: *snap(t0, webPod, etcdPod)}
	data, err := MarshalPicture(p)
	assert.NilError(t, err)
	assert.Assert(t, strings.HasSuffix(string(data), "}\n"))
	got, err := ParsePicture(data)
	assert.NilError(t, err)
	assert.DeepEqual(t, got, p)
}

func TestParsePictureRefuses(t *testing.T) {
	good := func() string {
		data, err := MarshalPicture(&Picture{APIVersion: PictureAPIVersion, Kind: PictureKind, Node: "node-1", Kubelet: oldKubelet, Runtime: *snap(t0, webPod)})
		assert.NilError(t, err)
		return string(data)
	}()
	tests := []struct {
		name, data, want string
	}{
		{name: "empty", data: "", want: "not a picture: EOF"},
		{name: "truncated", data: good[:len(good)/2], want: "not a picture: unexpected EOF"},
		{name: "unknown field", data: strings.Replace(good, `"node":`, `"nodes": "x", "node":`, 1), want: `unknown field "nodes"`},
		{name: "another kind", data: strings.Replace(good, PictureKind, "PodSyncRecord", 1), want: `kind "PodSyncRecord"`},
		{name: "two objects", data: good + good, want: "data after the object"},
		{name: "no time", data: strings.Replace(good, `"taken": "2026-12-07T10:00:00Z"`, `"taken": "0001-01-01T00:00:00Z"`, 1), want: "no time"},
		{name: "no kubelet", data: strings.Replace(good, `"pid": 100`, `"pid": 0`, 1), want: "names no kubelet"},
		{name: "a sandbox without a UID", data: strings.Replace(good, `"uid": "`+uidWeb+`"`, `"uid": ""`, 1), want: "without an ID, a pod UID"},
		{name: "a container without an ID", data: strings.Replace(good, `"id": "c-app"`, `"id": ""`, 1), want: "a container without an ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePicture([]byte(tt.data))
			assert.ErrorContains(t, err, tt.want)
		})
	}
}
