package upstream

import (
	"path"
	"reflect"
	"sort"

	v1 "k8s.io/api/core/v1"
)

// InstantiatedTypes are the named types a static pod's hashed text
// expands: go-spew prints a nil pointer as a typed nil and an empty slice
// or map without elements, so a type's definition reaches the hash only
// through struct values, non-nil pointers and non-empty slices and maps.
// The walk runs over the pod as the kubelet decodes it (kubeletDefaults)
// and names types as pkg/upstream's generated table does (the internal
// core package unqualified, apimachinery's meta/v1 as "metav1.", any other
// package by its last path element), with the internal names of v1 types
// whose internal twin is named otherwise (internalNames).
func InstantiatedTypes(p *v1.Pod) map[string]bool {
	seen := map[string]bool{}
	walkValue(reflect.ValueOf(kubeletDefaults(p)).Elem(), seen)
	for v1Name, internal := range internalNames {
		if seen[v1Name] {
			seen[internal] = true
		}
	}
	return seen
}

// internalNames maps a v1 type to its internal twin of another name:
// until 1.22 the internal (and v1) Probe and Lifecycle held a Handler,
// which 1.23 split into ProbeHandler and LifecycleHandler.
var internalNames = map[string]string{
	"ProbeHandler":     "Handler",
	"LifecycleHandler": "Handler",
}

// kubeletDefaults is a copy of p with the defaults that instantiate a type
// applied, as the kubelet's decoding (pkg/kubelet/config/common.go,
// UniversalDecoder: v1 defaults, then conversion to the internal api.Pod)
// does in every tree 1.16 .. 1.38; the others set strings, numbers and
// pointers to them, or fill maps that are already instantiated.
func kubeletDefaults(p *v1.Pod) *v1.Pod {
	p = p.DeepCopy()
	// SetDefaults_PodSpec (pkg/apis/core/v1/defaults.go): "Always default
	// an empty securityContext to preserve historical behavior".
	if p.Spec.SecurityContext == nil {
		p.Spec.SecurityContext = &v1.PodSecurityContext{}
	}
	// SetDefaults_Volume: a volume without a source is an emptyDir.
	for i := range p.Spec.Volumes {
		if reflect.ValueOf(p.Spec.Volumes[i].VolumeSource).IsZero() {
			p.Spec.Volumes[i].VolumeSource = v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}
		}
	}
	return p
}

// walkValue records v's named type when go-spew would expand it, and
// walks what it holds; unexported fields too (resource.Quantity's), which
// go-spew prints.
func walkValue(v reflect.Value, seen map[string]bool) {
	switch v.Kind() {
	case reflect.Ptr, reflect.Interface:
		if !v.IsNil() {
			walkValue(v.Elem(), seen)
		}
		return
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 {
			return
		}
	}
	if name := v.Type().Name(); name != "" && v.Type().PkgPath() != "" {
		seen[typePrefix(v.Type().PkgPath())+name] = true
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			walkValue(v.Field(i), seen)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			walkValue(v.Index(i), seen)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			walkValue(iter.Key(), seen)
			walkValue(iter.Value(), seen)
		}
	}
}

// typePrefix is the qualifier hack/gen-pod-types gives a package's types;
// k8s.io/api/core/v1 stands for the internal core package.
func typePrefix(pkgPath string) string {
	switch pkgPath {
	case "k8s.io/api/core/v1":
		return ""
	case "k8s.io/apimachinery/pkg/apis/meta/v1":
		return "metav1."
	}
	return path.Base(pkgPath) + "."
}

// changedTypesOf are the types of minor m's podTypeChanges the pod
// instantiates, sorted; ok is false when the table has no entry for m.
func changedTypesOf(changes map[int][]string, m int, instantiated map[string]bool) (types []string, ok bool) {
	all, ok := changes[m]
	for _, t := range all {
		if instantiated[t] {
			types = append(types, t)
		}
	}
	sort.Strings(types)
	return types, ok
}
