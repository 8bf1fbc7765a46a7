package app

import (
	"strings"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
)

// TestNonPositiveTimeoutsAreRefused: --cri-timeout 0s or -1s used to mean
// the default 10s without a word.
func TestNonPositiveTimeoutsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "record 0s", args: []string{"record", "--cri-timeout", "0s"}, want: `--cri-timeout: must be positive, got "0s"`},
		{name: "status -1s", args: []string{"status", "--cri-timeout=-1s"}, want: `--cri-timeout: must be positive, got "-1s"`},
		{name: "sweep 0", args: []string{"sweep", "--cri-timeout", "0"}, want: `--cri-timeout: must be positive, got "0"`},
		{name: "sweep --grace -1s", args: []string{"sweep", "--grace=-1s"}, want: `--grace: must not be negative, got "-1s"`},
		{name: "sweep --grace soon", args: []string{"sweep", "--grace", "soon"}, want: `--grace: invalid duration "soon"`},
		{name: "preflight 0s", args: []string{"preflight", "--node", "--from", "v1.18.19", "--to", "v1.19.16", "--cri-timeout", "0s"}, want: `--cri-timeout: must be positive`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			f.addStaticPods("v1.18.19", pod{file: "etcd.yaml", yaml: etcdYAML, uid: "etcd-uid", created: beforeStart, ready: true})
			f.runKubelet("v1.19.16")
			args := append(tc.args, "--kubelet-binary", f.kubeletBinary("v1.18.19"))
			if tc.args[0] == "preflight" {
				args = tc.args
			}
			if code := f.run(args...); code != ExitError {
				t.Fatalf("exit %d, want 1; stdout %q stderr %q", code, f.stdout.String(), f.stderr.String())
			}
			assertOneErrorLine(t, f.stderr.String(), tc.want)
			if f.stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", f.stdout.String())
			}
		})
	}
}

// TestHugeBadArgumentsAreShortened: a bad argument of 10000 characters was
// echoed in full, twice, in the error line.
func TestHugeBadArgumentsAreShortened(t *testing.T) {
	huge := strings.Repeat("x", 10000)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "bad duration", args: []string{"record", "--cri-timeout=" + huge}, want: `--cri-timeout: invalid duration "` + strings.Repeat("x", 38) + "..." + strings.Repeat("x", 39) + `"`},
		{name: "unknown flag", args: []string{"record", "--bogus-" + huge}, want: "unknown flag: --bogus-xxx"},
		{name: "unknown command", args: []string{"recordd" + huge}, want: `unknown command "recordd`},
		{name: "extra argument", args: []string{"sweep", huge}, want: `unknown command "xxx`},
		{name: "bad version", args: []string{"preflight", "--from", huge, "--to", "v1.19.16", "-f", "/nonexistent"}, want: `--from: invalid version "xxx`},
		{name: "bad output format", args: []string{"status", "-o", huge}, want: `unknown output format "xxx`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cri.APIv1)
			if code := f.run(tc.args...); code != ExitError {
				t.Fatalf("exit %d, want 1", code)
			}
			assertOneErrorLine(t, f.stderr.String(), tc.want)
			if n := len(f.stderr.String()); n > 400 {
				t.Errorf("the error line has %d bytes, want at most 400: %.300q...", n, f.stderr.String())
			}
			if f.stdout.Len() != 0 {
				t.Errorf("stdout has %d bytes, want nothing", f.stdout.Len())
			}
		})
	}
}

func TestShortenEchoes(t *testing.T) {
	long := strings.Repeat("ä", 100)
	elided := strings.Repeat("ä", 38) + "..." + strings.Repeat("ä", 39)
	path := "/a/long/path/" + strings.Repeat("p", 100)
	for _, tc := range []struct {
		in   string
		args []string
		want string
	}{
		{in: `short "value" stays`, args: []string{"value"}, want: `short "value" stays`},
		{in: `bad "` + long + `": x`, args: []string{"--from", long}, want: `bad "` + elided + `": x`},
		{in: `bad "` + long + `": x`, args: []string{"--from=" + long}, want: `bad "` + elided + `": x`},
		{in: `escaped "a\"b` + strings.Repeat("y", 100) + `"`, args: []string{`a"b` + strings.Repeat("y", 100)}, want: `escaped "a\"b` + strings.Repeat("y", 35) + "..." + strings.Repeat("y", 39) + `"`},
		{in: "unknown flag: --" + strings.Repeat("z", 100), args: []string{"--" + strings.Repeat("z", 100)}, want: "unknown flag: --" + strings.Repeat("z", 36) + "..." + strings.Repeat("z", 39)},
		{in: "reading " + path + "/upgrade-compat.json: denied", args: []string{"--root-dir", path}, want: "reading /a/long/path/" + strings.Repeat("p", 25) + "..." + strings.Repeat("p", 39) + "/upgrade-compat.json: denied"},
		{in: path + " is not from the command line", args: []string{"status"}, want: path + " is not from the command line"},
		{in: `runs "` + path + `"`, args: nil, want: `runs "` + path + `"`},
	} {
		if got := shortenEchoes(tc.in, tc.args); got != tc.want {
			t.Errorf("shortenEchoes(%.40q...) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
