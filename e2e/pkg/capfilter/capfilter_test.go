package capfilter

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

// noSysResource is this kind of machine's bounding set: every capability
// up to CAP_CHECKPOINT_RESTORE but CAP_SYS_RESOURCE.
const noSysResource = Set(0x1fffeffffff)

func TestBoundingAndMissing(t *testing.T) {
	dir := t.TempDir()
	status := filepath.Join(dir, "status")
	assert.NilError(t, os.WriteFile(status, []byte("Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t0000000000000001\nCapBnd:\t000001fffeffffff\nCapAmb:\t0\n"), 0o644))
	set, err := Bounding(status)
	assert.NilError(t, err)
	assert.Equal(t, set, noSysResource)
	assert.DeepEqual(t, set.Missing(), []string{"CAP_SYS_RESOURCE"})
	assert.Assert(t, !set.Has("CAP_SYS_RESOURCE"))
	assert.Assert(t, set.Has("CAP_SYS_ADMIN"))
	assert.Assert(t, set.Has("CAP_FUTURE_THING"), "unknown names are runc's to judge")
	eff, err := Read(status, "CapEff")
	assert.NilError(t, err)
	assert.Assert(t, eff.Has("CAP_CHOWN") && !eff.Has("CAP_SYS_RESOURCE"))

	assert.NilError(t, os.WriteFile(status, []byte("Name:\tx\n"), 0o644))
	_, err = Bounding(status)
	assert.ErrorContains(t, err, "no CapBnd")
}

func TestFilterSpecFileDropsOnlyMissing(t *testing.T) {
	spec := `{"ociVersion":"1.0.2","process":{"args":["sh"],"capabilities":{
		"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE","CAP_SYS_ADMIN"],
		"effective":["CAP_SYS_RESOURCE","CAP_CHOWN"],
		"permitted":["CAP_CHOWN"]},"noNewPrivileges":false},"root":{"path":"rootfs"},"x-unknown":{"kept":true}}`
	path := filepath.Join(t.TempDir(), "config.json")
	assert.NilError(t, os.WriteFile(path, []byte(spec), 0o600))
	assert.NilError(t, FilterSpecFile(path, noSysResource))

	var got struct {
		Process struct {
			Args []string            `json:"args"`
			Caps map[string][]string `json:"capabilities"`
		} `json:"process"`
		Unknown map[string]bool `json:"x-unknown"`
	}
	data, err := os.ReadFile(path)
	assert.NilError(t, err)
	assert.NilError(t, json.Unmarshal(data, &got))
	assert.DeepEqual(t, got.Process.Caps, map[string][]string{
		"bounding":  {"CAP_CHOWN", "CAP_SYS_ADMIN"},
		"effective": {"CAP_CHOWN"},
		"permitted": {"CAP_CHOWN"},
	})
	assert.DeepEqual(t, got.Process.Args, []string{"sh"})
	assert.Assert(t, got.Unknown["kept"], "fields the filter does not know are kept")
	st, err := os.Stat(path)
	assert.NilError(t, err)
	assert.Equal(t, st.Mode().Perm(), os.FileMode(0o600))
}

func TestFilterUnchangedFileIsNotRewritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "process.json")
	orig := `{"args":["true"],   "capabilities":{"bounding":["CAP_KILL"]}}`
	assert.NilError(t, os.WriteFile(path, []byte(orig), 0o644))
	assert.NilError(t, FilterProcessFile(path, noSysResource))
	data, err := os.ReadFile(path)
	assert.NilError(t, err)
	assert.Equal(t, string(data), orig)
}

func TestFilterRefusesBrokenJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	assert.NilError(t, os.WriteFile(path, []byte(`{"process":{"capabilities":{"bounding":"CAP_KILL"}}}`), 0o644))
	assert.ErrorContains(t, FilterSpecFile(path, noSysResource), "process.capabilities.bounding")
}

func TestCommand(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		long, short string
		cmd, value  string
	}{
		{"shim create", []string{"--root", "/run/x", "--log", "/l", "--log-format", "json", "--systemd-cgroup", "create", "--bundle", "/b", "--pid-file", "/p", "id"}, "--bundle", "-b", "create", "/b"},
		{"equals form", []string{"create", "--bundle=/b", "id"}, "--bundle", "-b", "create", "/b"},
		{"short form", []string{"run", "-b", "/b", "id"}, "--bundle", "-b", "run", "/b"},
		{"no bundle", []string{"create", "id"}, "--bundle", "-b", "create", ""},
		{"exec process", []string{"--root", "/r", "exec", "--process", "/tmp/p.json", "--detach", "id"}, "--process", "-p", "exec", "/tmp/p.json"},
		{"other command", []string{"--root", "/r", "state", "id"}, "", "", "state", ""},
		{"no command", []string{"--version"}, "", "", "", ""},
		{"value after --", []string{"exec", "id", "--", "--process", "x"}, "--process", "-p", "exec", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, value := Command(tt.args, tt.long, tt.short)
			assert.Equal(t, cmd, tt.cmd)
			assert.Equal(t, value, tt.value)
		})
	}
}
