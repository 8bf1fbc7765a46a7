package app

import (
	"fmt"
	"sort"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	v1 "k8s.io/api/core/v1"
)

// firstHashedMinor is the oldest kubelet minor whose container hash the
// library reproduces (the JSON era starts at 1.16).
const firstHashedMinor = 16

// inferKind says how a container's hash version was found.
type inferKind int

const (
	inferOwn         inferKind = iota // the running kubelet's own hash (or no hash of its era is reproduced)
	inferOlder                        // an older kubelet's hash matches
	inferNewer                        // a newer kubelet's hash matches (it ran before a rollback)
	inferByAge                        // the replaced file names a pre-1.16 kubelet, whose hash is not reproduced
	inferUnexplained                  // no kubelet's hash matches
	inferUnchecked                    // no spec or no stored hash: nothing to match
)

// inference is the hash version record gives a container that no file
// lists, and the warning to print when it is not a match.
type inference struct {
	version kubeletcompat.Version
	kind    inferKind
	warning string
}

// inferHashVersion finds the kubelet whose hash a container carries, by
// matching its stored hash against each kubelet's hash for its spec: the
// running kubelet's first, then the kubelets the replaced file names
// (newest first), then every other older minor whose hash the library
// computes, newest first, then every newer one, nearest first (a node
// rolled back to the running kubelet runs what a newer one created; minors
// as v1.<minor>.0: the hash depends on the minor only). Where several
// agree, the first in that order wins: a kubelet the file says ran on the
// node before one that only may have, and of the older ones the newest (a
// newer kubelet's hash covers more fields, so its label hides fewer genuine
// changes). spec is nil when no pod spec was found; noSpec then says where
// record looked.
func inferHashVersion(c cri.Container, spec *v1.Container, source, noSpec string, running kubeletcompat.Version, named []kubeletcompat.Version) inference {
	name := fmt.Sprintf("container %s/%s/%s (%s)", c.PodNamespace, c.PodName, c.Name, shortID(c.ID))
	switch {
	case c.HashErr != nil:
		return inference{version: running, kind: inferUnchecked,
			warning: fmt.Sprintf("%s: %v: recorded as %s's; the next kubelet restarts it unless its own hash matches", name, c.HashErr, running)}
	case spec == nil:
		return inference{version: running, kind: inferUnchecked,
			warning: fmt.Sprintf("%s: no pod spec found (%s): its stored hash %x is not checked; recorded as %s's", name, noSpec, c.Hash, running)}
	}
	own, err := kubeletcompat.ContainerHash(running, spec)
	if err != nil || own == c.Hash {
		// A running kubelet whose hash is not reproduced (<= 1.15) labels
		// what runs as its own, as record always did.
		return inference{version: running, kind: inferOwn}
	}
	tried := map[int]bool{running.Minor: true}
	var byAge *kubeletcompat.Version
	var candidates []kubeletcompat.Version
	for i, v := range named {
		switch {
		case tried[v.Minor]:
		case kubeletcompat.EraOf(v) == kubeletcompat.EraGoStruct:
			if byAge == nil {
				byAge = &named[i]
			}
		default:
			candidates = append(candidates, v)
			tried[v.Minor] = true
		}
	}
	for m := running.Minor - 1; m >= firstHashedMinor; m-- {
		if !tried[m] {
			candidates = append(candidates, kubeletcompat.Version{Major: 1, Minor: m})
		}
	}
	newest := running
	for m := running.Minor + 1; kubeletcompat.EraOf(kubeletcompat.Version{Major: 1, Minor: m}) != kubeletcompat.EraUnknown; m++ {
		newest = kubeletcompat.Version{Major: 1, Minor: m}
		if !tried[m] {
			candidates = append(candidates, newest)
		}
	}
	for _, v := range candidates {
		if h, err := kubeletcompat.ContainerHash(v, spec); err == nil && h == c.Hash {
			if running.LessThan(v) {
				return inference{version: v, kind: inferNewer}
			}
			return inference{version: v, kind: inferOlder}
		}
	}
	none := fmt.Sprintf("%s: stored hash %x is what no kubelet v1.%d to v1.%d computes for its spec", name, c.Hash, firstHashedMinor, newest.Minor)
	if byAge != nil {
		return inference{version: *byAge, kind: inferByAge,
			warning: fmt.Sprintf("%s; the replaced file names %s, whose hash is not reproduced: recorded as carrying it (kept while its image is unchanged)", none, *byAge)}
	}
	return inference{version: running, kind: inferUnexplained,
		warning: fmt.Sprintf("%s from %s: recorded as %s's; the next kubelet restarts it unless its own hash matches", none, source, running)}
}

// recordedContainers lists every container that is not exited, with the
// kubelet whose hash it carries. When the replaced file lists containers
// (hist.containers), a listed one keeps the hash version and the spec hash
// it had there, whether that kubelet is older than the running one or newer
// (it created the container before a rollback), and an unlisted one,
// created after that record, is the running kubelet's. When
// there is no such list (no file, a v1alpha1 file, a file replaced with
// --force or one the kubelet ignores), every container's hash version is
// inferred from its stored hash (inferHashVersion), with one warning per
// container that no kubelet's hash explains. infer is nil in the first case.
func recordedContainers(containers []cri.Container, hist *compatHistory, running kubeletcompat.Version, infer func(cri.Container) inference) ([]kubeletcompat.Container, []inference) {
	var out []kubeletcompat.Container
	var inferred []inference
	for _, c := range containers {
		if c.State == cri.ContainerExited {
			continue
		}
		entry := kubeletcompat.Container{ID: c.ID, HashVersion: running.String()}
		if hist != nil && hist.containers != nil {
			if was, ok := hist.containers[c.ID]; ok {
				entry.HashVersion, entry.SpecHash = was.hashVersion.String(), was.specHash
			}
		} else if infer != nil {
			in := infer(c)
			inferred = append(inferred, in)
			entry.HashVersion = in.version.String()
		}
		out = append(out, entry)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, inferred
}

// hashVersionInference returns the inference for one container from the
// node's pod specs, with the kubelets the replaced file names as
// candidates.
func (o *nodeOptions) hashVersionInference(idx *specIndex, st *nodeState, hist *compatHistory, running kubeletcompat.Version) func(cri.Container) inference {
	var named []kubeletcompat.Version
	if hist != nil {
		named = hist.versions
	}
	noSpec := o.noSpecWhere()
	return func(c cri.Container) inference {
		var spec *v1.Container
		var source string
		if ps, ok := idx.lookup(st.byID[c.SandboxID], c); ok {
			spec, _ = container(ps.pod, c.Name)
			source = ps.source
		}
		return inferHashVersion(c, spec, source, noSpec, running, named)
	}
}

// noSpecWhere says where record looked for pod specs.
func (o *nodeOptions) noSpecWhere() string {
	if o.kubeconfig != "" {
		return "neither in " + o.manifestDir + " nor on the API server"
	}
	return "API pods need --kubeconfig"
}

// specHashWanted says whether record writes c's specHash: it carries a
// {name, image} hash (1.31 .. 1.37). This binary's types are those of the
// newest minor the library knows (preflight.TypesMinor; TestTypesMinor), so
// the spec it decodes holds every field such a kubelet reads.
func specHashWanted(c kubeletcompat.Container) bool {
	v, err := kubeletcompat.ParseVersion(c.HashVersion)
	return err == nil && kubeletcompat.EraOf(v) == kubeletcompat.EraNameImage
}

// needSpecHashes says whether any container needs its pod spec read (a
// spec hash the replaced file recorded is carried).
func needSpecHashes(containers []kubeletcompat.Container) bool {
	for _, c := range containers {
		if specHashWanted(c) && c.SpecHash == "" {
			return true
		}
	}
	return false
}

// recordSpecHashes sets the specHash of every container that carries a
// {name, image} hash (1.31 .. 1.37), whose hash says nothing else about its
// spec: the spec in the v1.Container layout of the kubelet that created it
// (kubeletcompat.SpecHash prunes the fields that kubelet's types lack). An
// older kubelet keeps it after a rollback only when it reads the same spec
// (kubeletcompat.Decider): a field it does not know, or a change, restarts
// it. It returns how many had no pod spec.
func recordSpecHashes(containers []kubeletcompat.Container, st *nodeState, idx *specIndex) (missing int) {
	byID := make(map[string]cri.Container, len(st.containers))
	for _, c := range st.containers {
		byID[c.ID] = c
	}
	for i := range containers {
		if !specHashWanted(containers[i]) || containers[i].SpecHash != "" {
			// A spec hash carried from the replaced file is the spec
			// the container was recorded with: keep it.
			continue
		}
		v, _ := kubeletcompat.ParseVersion(containers[i].HashVersion) // specHashWanted parsed it
		c := byID[containers[i].ID]
		var spec *v1.Container
		if ps, ok := idx.lookup(st.byID[c.SandboxID], c); ok {
			spec, _ = container(ps.pod, c.Name)
		}
		if spec == nil {
			missing++
			continue
		}
		if h, err := kubeletcompat.SpecHash(v, spec); err == nil {
			containers[i].SpecHash = kubeletcompat.FormatSpecHash(h)
		} else {
			missing++
		}
	}
	return missing
}

// inferenceSummary counts what the stored hashes said.
func inferenceSummary(inferred []inference) string {
	var own, older, newer, other int
	for _, in := range inferred {
		switch in.kind {
		case inferOwn:
			own++
		case inferOlder:
			older++
		case inferNewer:
			newer++
		default:
			other++
		}
	}
	s := fmt.Sprintf("%d container(s) without a recorded hash version matched by their stored hashes: %d carry an older kubelet's, %d this kubelet's", len(inferred), older, own)
	if newer > 0 {
		s += fmt.Sprintf(", %d a newer kubelet's (it ran before a rollback)", newer)
	}
	if other > 0 {
		s += fmt.Sprintf(", %d not explained or not checked (see the warnings)", other)
	}
	return s
}
