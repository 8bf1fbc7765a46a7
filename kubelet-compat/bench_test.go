package kubeletcompat

import (
	"encoding/json"
	"hash/fnv"
	"testing"
)

// Benchmarks of the decision on the kubelet's hot path. Compare each with
// BenchmarkUpstreamHashContainer, which is what upstream spends per container
// and sync anyway; report ratios from one run (go test -bench . -benchmem).

// BenchmarkUpstreamHashContainer is upstream's HashContainer (1.16..1.30).
func BenchmarkUpstreamHashContainer(b *testing.B) {
	c := seccompContainer()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		data, _ := json.Marshal(c)
		h := fnv.New32a()
		deepHashObject(h, data)
		_ = h.Sum32()
	}
}

func BenchmarkDecide(b *testing.B) {
	spec := seccompContainer()
	legacy := mustHash(b, "v1.20.15", spec)
	own, _ := ContainerHash(Version{Major: 1, Minor: 21, Patch: 14}, spec)

	setup := func(b *testing.B, withFile bool) *Compat {
		n := newNode(b)
		if withFile {
			f := testFile()
			if err := WriteFile(n.path, f); err != nil {
				b.Fatal(err)
			}
		}
		return n.compat("v1.21.14", DefaultRecheckInterval)
	}
	run := func(b *testing.B, decide func() Decision, wantKeep bool) {
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if d := decide(); d.Keep != wantKeep {
				b.Fatalf("unexpected decision %+v", d)
			}
		}
	}

	b.Run("file-absent/KeepChanged", func(b *testing.B) {
		c := setup(b, false)
		r := RunningContainer{ID: "c1", Hash: legacy, CreatedAt: beforeStart}
		run(b, func() Decision { return c.KeepChanged(spec, r) }, false)
	})
	b.Run("file-absent/Decide", func(b *testing.B) {
		c := setup(b, false)
		r := RunningContainer{ID: "c1", Hash: legacy, CreatedAt: beforeStart}
		run(b, func() Decision { return c.Decide(spec, r) }, false)
	})
	b.Run("file-present/hash-equal", func(b *testing.B) {
		c := setup(b, true)
		r := RunningContainer{ID: "c1", Hash: own, CreatedAt: beforeStart}
		run(b, func() Decision { return c.Decide(spec, r) }, true)
	})
	b.Run("file-present/legacy-hash-uncached", func(b *testing.B) {
		c := setup(b, true)
		r := RunningContainer{ID: "c1", Hash: legacy, CreatedAt: beforeStart}
		run(b, func() Decision {
			legacyHashes.mu.Lock()
			legacyHashes.entries = map[legacyHashKey]uint64{}
			legacyHashes.mu.Unlock()
			return c.Decide(spec, r)
		}, true)
	})
	b.Run("file-present/legacy-hash", func(b *testing.B) {
		c := setup(b, true)
		r := RunningContainer{ID: "c1", Hash: legacy, CreatedAt: beforeStart}
		run(b, func() Decision { return c.Decide(spec, r) }, true)
	})
}

// BenchmarkKeepChangedRollback: what a 1.30 kubelet pays per decision for a
// container a 1.31 kubelet created, after a rollback (the {name, image}
// hash and the recorded spec hash), with and without the hash cache.
func BenchmarkKeepChangedRollback(b *testing.B) {
	spec := seccompContainer()
	v131, v130 := Version{Major: 1, Minor: 31, Patch: 14}, Version{Major: 1, Minor: 30, Patch: 14}
	stored, _ := ContainerHash(v131, spec)
	specHash, err := SpecHash(v131, spec)
	if err != nil {
		b.Fatal(err)
	}
	f := testFile()
	f.PreviousVersion = v131.String()
	f.Containers = []Container{{ID: "c1", HashVersion: v131.String(), SpecHash: FormatSpecHash(specHash)}}
	d := NewDecider(f, v130, kubeletStart)
	r := RunningContainer{ID: "c1", Hash: stored, CreatedAt: beforeStart}
	for _, cached := range []bool{true, false} {
		name := "cached"
		if !cached {
			name = "uncached"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if !cached {
					legacyHashes.mu.Lock()
					legacyHashes.entries = map[legacyHashKey]uint64{}
					legacyHashes.mu.Unlock()
				}
				if got := d.KeepChanged(spec, r); !got.Keep {
					b.Fatalf("not kept: %s", got.Reason)
				}
			}
		})
	}
}
