package packaging

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
)

func TestParallelKeepsTheOrderOfBuilds(t *testing.T) {
	var builds []func(context.Context) ([]string, error)
	for _, name := range []string{"a", "b", "c", "d"} {
		builds = append(builds, func(context.Context) ([]string, error) { return []string{name + "1", name + "2"}, nil })
	}
	got, err := Parallel(context.Background(), 3, builds)
	assert.NilError(t, err)
	assert.DeepEqual(t, got, []string{"a1", "a2", "b1", "b2", "c1", "c2", "d1", "d2"})
}

func TestParallelStopsStartingAfterAFailure(t *testing.T) {
	var started atomic.Int32
	builds := []func(context.Context) ([]string, error){
		func(context.Context) ([]string, error) {
			started.Add(1)
			return []string{"half"}, errors.New("rpmbuild failed")
		},
	}
	for range 5 {
		builds = append(builds, func(context.Context) ([]string, error) { started.Add(1); return []string{"more"}, nil })
	}
	got, err := Parallel(context.Background(), 1, builds)
	assert.Check(t, is.ErrorContains(err, "rpmbuild failed"))
	assert.Check(t, is.DeepEqual(got, []string{"half"}), "what the failed build made is returned")
	assert.Check(t, is.Equal(started.Load(), int32(1)))
}

func TestParallelReportsAnInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Parallel(ctx, 2, []func(context.Context) ([]string, error){
		func(context.Context) ([]string, error) { return nil, nil },
	})
	assert.Check(t, is.ErrorIs(err, context.Canceled))
}

func TestWriteSHA256Sums(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"b.rpm": "b", "a.rpm": "a", "c.deb": "c"} {
		assert.NilError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	assert.NilError(t, WriteSHA256Sums(dir, ".rpm"))
	b, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(string(b),
		"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  a.rpm\n"+
			"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d  b.rpm\n"))
}

type fakePackager struct{ format string }

func (p fakePackager) Format() string                                 { return p.format }
func (fakePackager) Host() hostdeps.Path                              { return hostdeps.Path{} }
func (p fakePackager) DefaultOutput() string                          { return "_output/" + p.format + "s" }
func (fakePackager) AddFlags(*flag.FlagSet)                           {}
func (fakePackager) Build(context.Context, Options) ([]string, error) { return nil, nil }

func TestFormatOutput(t *testing.T) {
	rpm := fakePackager{"rpm"}
	for _, tc := range []struct {
		output  string
		formats int
		want    string
	}{
		{"", 1, "_output/rpms"},
		{"", 2, "_output/rpms"},
		{"out/x", 1, "out/x"},
		{"out", 2, "out/rpms"},
	} {
		f := Flags{output: tc.output}
		assert.Check(t, is.Equal(f.FormatOutput(rpm, tc.formats), tc.want), "%+v", tc)
	}
}

func TestFlagsOptions(t *testing.T) {
	var f Flags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f.AddFlags(fs)
	assert.NilError(t, fs.Parse([]string{"-versions", "1.20.15, 1.21.14", "-source-date-epoch", "42", "-jobs", "3", "-input", "in", "-kubelet-compat", "cli"}))
	o, err := f.Options()
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(o, Options{InputDir: "in", Versions: []string{"1.20.15", "1.21.14"}, KubeletCompat: "cli",
		SourceDateEpoch: 42, UnversionedVersion: DefaultUnversionedVersion, Jobs: 3}))
}

func TestTableResolve(t *testing.T) {
	l := layout.Default()
	digest := func(key string) (string, error) { return strings.Repeat("0", 60) + key[len(key)-4:], nil }
	tbl := Table{Name: "x/releases.txt", Header: "# h\n", Fix: "make x-releases", Digest: digest}
	table, bumped, err := tbl.Bump(nil, l)
	assert.NilError(t, err)
	assert.Check(t, is.Len(bumped, len(l.Groups)))
	unv, rel, err := tbl.Resolve(table, l, true, "", "")
	assert.NilError(t, err)
	assert.Check(t, is.Equal(unv, "1"))
	assert.Check(t, is.DeepEqual(rel, map[string]string{layout.VersionedKey: "1", layout.MasterKey: "1"}))
	unv, rel, err = tbl.Resolve(table, l, false, "7", "")
	assert.NilError(t, err)
	assert.Check(t, is.Equal(unv, "7"))
	assert.Check(t, is.Len(rel, 0), "no versioned packages, no versioned releases")
	_, rel, err = tbl.Resolve(table, l, true, "", "9")
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(rel, map[string]string{layout.VersionedKey: "9", layout.MasterKey: "9"}))
	tbl.Digest = func(string) (string, error) { return strings.Repeat("f", 64), nil }
	_, _, err = tbl.Resolve(table, l, true, "", "")
	assert.Check(t, is.ErrorContains(err, "run make x-releases"))
}

// TestFlagsRefuseASourceThatIsNotUpstreams: a version whose matrix row
// builds with a shim that changes the binaries (1.38.0-beta.0's
// sigs.k8s.io/iptables-wrappers) is refused however it is named (release,
// minor, set); a forwarding shim (1.18.19's vbom.ml/util) and versions the
// matrix has no row for are not.
func TestFlagsRefuseASourceThatIsNotUpstreams(t *testing.T) {
	for _, tc := range []struct {
		versions, wantErr string
		want              []string
	}{
		{versions: "1.38.0-beta.0", wantErr: "kubernetes 1.38.0-beta.0: not packaged: sigs.k8s.io/iptables-wrappers"},
		{versions: "1.38", wantErr: "sigs.k8s.io/iptables-wrappers"},
		{versions: "ci", wantErr: "sigs.k8s.io/iptables-wrappers"},
		{versions: "1.18.19,1.19.16", want: []string{"1.18.19", "1.19.16"}},
		{versions: "1.38.0-rc.1", want: []string{"1.38.0-rc.1"}},
	} {
		var f Flags
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		f.AddFlags(fs)
		assert.NilError(t, fs.Parse([]string{"-versions", tc.versions, "-source-date-epoch", "42"}))
		o, err := f.Options()
		if tc.wantErr != "" {
			assert.Check(t, is.ErrorContains(err, tc.wantErr), tc.versions)
			continue
		}
		assert.Check(t, err, tc.versions)
		assert.Check(t, is.DeepEqual(o.Versions, tc.want), tc.versions)
	}
}
