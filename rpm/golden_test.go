package rpm

import (
	"testing"

	"gotest.tools/v3/golden"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
)

// TestSpecsGolden: the specs generated from the description (pkg/layout)
// are the ones in testdata/golden. The versioned spec is byte for byte
// the one rpm/templates/kubernetes-versioned.spec.tmpl made before the
// description existed (its release did not change); the master spec is
// new. go test ./rpm -run TestSpecsGolden -update rewrites them.
func TestSpecsGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		render func() ([]byte, error)
	}{
		{"golden/kubernetes-unversioned.spec", func() ([]byte, error) {
			return RenderUnversioned(UnversionedSpec{Version: "1.0.0", Release: "4"})
		}},
		{"golden/kubernetes-1.21.14.spec", func() ([]byte, error) {
			return RenderVersioned(VersionedSpec{Version: "1.21.14", Release: "2", Arch: "x86_64"})
		}},
		{"golden/kubernetes-1.21.14-master.spec", func() ([]byte, error) {
			return RenderVersioned(VersionedSpec{Version: "1.21.14", Release: "1", Arch: "x86_64", Group: layout.MasterKey})
		}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			got, err := tc.render()
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, string(got), tc.golden)
		})
	}
}
