package v1alpha2

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	runtimev1alpha2 "k8s.io/cri-api/pkg/apis/runtime/v1alpha2"
)

// TestConvertKeepsEveryField guards the conversion: every message Client
// and Server convert is filled with a non-zero value in every field, at
// every depth, and sent to the other version and back. A field that one
// version has and the other lacks (or numbers or types differently) comes
// back zero or different, and the test names the message.
func TestConvertKeepsEveryField(t *testing.T) {
	pairs := []struct{ v1, v1alpha2 message }{
		{&runtimev1.VersionRequest{}, &runtimev1alpha2.VersionRequest{}},
		{&runtimev1.VersionResponse{}, &runtimev1alpha2.VersionResponse{}},
		{&runtimev1.ListPodSandboxRequest{}, &runtimev1alpha2.ListPodSandboxRequest{}},
		{&runtimev1.ListPodSandboxResponse{}, &runtimev1alpha2.ListPodSandboxResponse{}},
		{&runtimev1.PodSandboxStatusRequest{}, &runtimev1alpha2.PodSandboxStatusRequest{}},
		{&runtimev1.PodSandboxStatusResponse{}, &runtimev1alpha2.PodSandboxStatusResponse{}},
		{&runtimev1.StopPodSandboxRequest{}, &runtimev1alpha2.StopPodSandboxRequest{}},
		{&runtimev1.StopPodSandboxResponse{}, &runtimev1alpha2.StopPodSandboxResponse{}},
		{&runtimev1.RemovePodSandboxRequest{}, &runtimev1alpha2.RemovePodSandboxRequest{}},
		{&runtimev1.RemovePodSandboxResponse{}, &runtimev1alpha2.RemovePodSandboxResponse{}},
		{&runtimev1.ListContainersRequest{}, &runtimev1alpha2.ListContainersRequest{}},
		{&runtimev1.ListContainersResponse{}, &runtimev1alpha2.ListContainersResponse{}},
		{&runtimev1.ContainerStatusRequest{}, &runtimev1alpha2.ContainerStatusRequest{}},
		{&runtimev1.ContainerStatusResponse{}, &runtimev1alpha2.ContainerStatusResponse{}},
	}
	for _, p := range pairs {
		for _, dir := range []struct{ from, via message }{{p.v1, p.v1alpha2}, {p.v1alpha2, p.v1}} {
			name := strings.TrimPrefix(fmt.Sprintf("%T", dir.from), "*")
			t.Run(name, func(t *testing.T) {
				want := fillAll(dir.from)
				back, err := roundTrip(want, dir.via)
				assert.NilError(t, err)
				assert.DeepEqual(t, back, want)
			})
		}
	}
}

// TestRoundTripSeesALostField: a message that lacks a field of the
// original (RemovePodSandboxRequest has no verbose) loses it on the way.
func TestRoundTripSeesALostField(t *testing.T) {
	want := fillAll(&runtimev1.PodSandboxStatusRequest{})
	back, err := roundTrip(want, &runtimev1alpha2.RemovePodSandboxRequest{})
	assert.NilError(t, err)
	assert.Assert(t, !reflect.DeepEqual(back, want))
	assert.Equal(t, back.(*runtimev1.PodSandboxStatusRequest).Verbose, false)
}

// roundTrip converts m into a new message of via's type and back.
func roundTrip(m, via message) (message, error) {
	there := reflect.New(reflect.TypeOf(via).Elem()).Interface().(message)
	if err := Convert(m, there); err != nil {
		return nil, err
	}
	back := reflect.New(reflect.TypeOf(m).Elem()).Interface().(message)
	return back, Convert(there, back)
}

// TestFillAllReachesEveryField keeps the guard honest: a filler that
// skipped a kind of field would let a lost field pass.
func TestFillAllReachesEveryField(t *testing.T) {
	m := fillAll(&runtimev1.ContainerStatusResponse{}).(*runtimev1.ContainerStatusResponse)
	assert.Assert(t, m.Status.Image.Image != "" && m.Status.StartedAt != 0 && m.Status.State != 0 && len(m.Status.Mounts) == 1 &&
		m.Status.Mounts[0].SelinuxRelabel && len(m.Info) == 1 && m.Status.Resources.Linux.CpuShares != 0)
}

// fillAll returns a new message of m's type with every exported field set.
func fillAll(m message) message {
	v := reflect.New(reflect.TypeOf(m).Elem())
	fill(v.Elem(), 1)
	return v.Interface().(message)
}

func fill(v reflect.Value, depth int) {
	if depth > 40 {
		panic(fmt.Sprintf("fill: %s nests too deep (a recursive message?)", v.Type()))
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() && !strings.HasPrefix(f.Name, "XXX_") {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), depth+1)
	case reflect.Map:
		key, elem := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(key, depth+1)
		fill(elem, depth+1)
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(key, elem)
	case reflect.String:
		v.SetString("s" + v.Type().Name())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int32, reflect.Int64, reflect.Int:
		v.SetInt(int64(depth))
	case reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(depth))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(depth))
	default:
		panic(fmt.Sprintf("fill: no value for %s (%s): teach fill this kind", v.Type(), v.Kind()))
	}
}
