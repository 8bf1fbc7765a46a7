package app

import (
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
	"gotest.tools/v3/golden"
)

// The corpus in testdata/corpus covers static pods with and without
// metadata.uid, seccompProfile (new in 1.19), a probe's
// terminationGracePeriodSeconds (new in 1.21), several containers, an init
// container, resources.claims[].request (new in 1.31) and a non-Pod document. Regenerate with: go test ./cmd/... -update
func TestPreflightGolden(t *testing.T) {
	for _, tc := range []struct{ from, to, golden string }{
		{"v1.18.19", "v1.19.16", "preflight-1.18-1.19"},
		{"v1.20.15", "v1.21.14", "preflight-1.20-1.21"},
		{"v1.30.14", "v1.31.14", "preflight-1.30-1.31"},
		{"v1.15.12", "v1.16.15", "preflight-1.15-1.16"},
		// Rollbacks: the patched older kubelet keeps what it reads the
		// same spec of; what sets a field it does not know restarts.
		{"v1.31.14", "v1.30.14", "preflight-rollback-1.31-1.30"},
		{"v1.21.14", "v1.20.15", "preflight-rollback-1.21-1.20"},
	} {
		for _, format := range []string{"table", "json"} {
			t.Run(tc.golden+"."+format, func(t *testing.T) {
				f := newFixture(t, cri.APIv1)
				if code := f.run("preflight", "--from", tc.from, "--to", tc.to, "-f", "testdata/corpus", "-o", format); code != 0 {
					t.Fatalf("exit %d: %s", code, f.stderr.String())
				}
				golden.Assert(t, f.stdout.String(), tc.golden+"."+format+".golden")
			})
		}
	}
}

func TestPreflightErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "v1.18.19", "--to", "v1.39.0", "-f", "testdata/corpus"}, "unsupported --to v1.39.0"},
		{[]string{"--from", "v1.39.0", "--to", "v1.40.0", "-f", "testdata/corpus"}, "unknown version v1.39.0"},
		{[]string{"--from", "v1.21.0", "--to", "v1.21.0", "-f", "testdata/corpus"}, "--from v1.21.0 and --to v1.21.0 are the same version"},
		{[]string{"--from", "1.18", "--to", "v1.19.16", "-f", "testdata/corpus"}, "--from: invalid version"},
		{[]string{"--from", "v1.18.19", "--to", "v1.19.16"}, "give either -f FILE|DIR or --node"},
		{[]string{"--to", "v1.19.16", "-f", "x"}, `required flag(s) "from" not set`},
		{[]string{"--from", "v1.18.19", "--to", "v1.19.16", "-f", "testdata/missing"}, "testdata/missing: no such file"},
		{[]string{"--from", "v1.18.19", "--to", "v1.19.16", "-f", "testdata/corpus", "-o", "yaml"}, `unknown output format "yaml"`},
		{[]string{"--from", "v1.18.19", "--to", "v1.19.16", "--node", "--runtime-endpoint", "unix:///nonexistent.sock"}, "no CRI socket at /nonexistent.sock"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			if code := f.run(append([]string{"preflight"}, tc.args...)...); code != ExitError {
				t.Fatalf("exit %d, want 1", code)
			}
			assertOneErrorLine(t, f.stderr.String(), tc.want)
		})
	}
}

func TestPreflightMalformedManifest(t *testing.T) {
	f := newFixture(t, cri.APIv1)
	bad := f.dir + "/bad.yaml"
	f.write(bad, "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: [{name: a}]\n")
	if code := f.run("preflight", "--from", "v1.18.19", "--to", "v1.19.16", "-f", bad); code != ExitError {
		t.Fatalf("exit %d", code)
	}
	assertOneErrorLine(t, f.stderr.String(), "every container needs a name and an image")
}

// On a node, stored hashes come from the runtime: a container whose spec
// changed since it was created restarts with or without the patches.
func TestPreflightNode(t *testing.T) {
	for _, apis := range apiVersions {
		t.Run(apiName(apis), func(t *testing.T) {
			f := newFixture(t, apis...)
			f.addStaticPods("v1.18.19",
				pod{file: "etcd.yaml", yaml: etcdYAML, uid: "etcd-uid", created: beforeStart, ready: true},
				pod{file: "seccomp.yaml", yaml: seccompYAML, uid: "pinned-uid", created: beforeStart, ready: true})
			// The etcd manifest changed after its container was created.
			f.write(f.manifestDir+"/etcd.yaml", strings.Replace(etcdYAML, "3.4.13-0", "3.4.13-1", 1))
			if code := f.run("preflight", "--from", "v1.18.19", "--to", "v1.19.16", "--node"); code != 0 {
				t.Fatalf("exit %d: %s", code, f.stderr.String())
			}
			golden.Assert(t, strings.ReplaceAll(f.stdout.String(), f.dir, "$DIR"), "preflight-node.table.golden")
		})
	}
}
