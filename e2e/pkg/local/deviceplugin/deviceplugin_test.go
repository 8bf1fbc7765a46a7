package deviceplugin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

func TestNew(t *testing.T) {
	ok := Config{Dir: "/var/lib/kubelet/device-plugins", Socket: Socket, Resource: Resource, Devices: 2}
	for _, tc := range []struct {
		name   string
		change func(*Config)
		err    string
	}{
		{name: "the e2e's defaults", change: func(*Config) {}},
		{name: "relative dir", change: func(c *Config) { c.Dir = "device-plugins" }, err: "not an absolute path"},
		{name: "socket with a slash", change: func(c *Config) { c.Socket = "../x.sock" }, err: "plain file name"},
		{name: "the kubelet's socket", change: func(c *Config) { c.Socket = "kubelet.sock" }, err: "other than kubelet.sock"},
		{name: "resource without a domain", change: func(c *Config) { c.Resource = "dev" }, err: "not an extended resource"},
		{name: "resource in kubernetes.io", change: func(c *Config) { c.Resource = "kubernetes.io/dev" }, err: "not an extended resource"},
		{name: "no devices", change: func(c *Config) { c.Devices = 0 }, err: "at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.change(&c)
			p, err := New(c)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			assert.NilError(t, err)
			assert.Check(t, is.Len(p.devices, 2))
		})
	}
}

func TestPrefer(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		available, mustInclude []string
		size                   int
		want                   []string
	}{
		{name: "lowest first", available: []string{"dev-1", "dev-0"}, size: 1, want: []string{"dev-0"}},
		{name: "must include comes first", available: []string{"dev-0", "dev-1", "dev-2"}, mustInclude: []string{"dev-2"}, size: 2, want: []string{"dev-2", "dev-0"}},
		{name: "fewer available than asked", available: []string{"dev-1"}, size: 2, want: []string{"dev-1"}},
		{name: "must include only", available: []string{"dev-0", "dev-1"}, mustInclude: []string{"dev-1"}, size: 1, want: []string{"dev-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.DeepEqual(t, Prefer(tc.available, tc.mustInclude, tc.size), tc.want)
		})
	}
}

// fakeKubelet serves Registration on <dir>/kubelet.sock as a starting
// kubelet does: it first removes every socket in dir.
type fakeKubelet struct {
	dir  string
	srv  *grpc.Server
	regs chan *pluginapi.RegisterRequest
}

type registration struct {
	pluginapi.UnimplementedRegistrationServer
	regs chan *pluginapi.RegisterRequest
}

func (r registration) Register(_ context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	r.regs <- req
	return &pluginapi.Empty{}, nil
}

func startKubelet(t *testing.T, dir string, regs chan *pluginapi.RegisterRequest, removeSockets bool) *fakeKubelet {
	t.Helper()
	if removeSockets {
		entries, err := os.ReadDir(dir)
		assert.NilError(t, err)
		for _, e := range entries {
			assert.NilError(t, os.Remove(filepath.Join(dir, e.Name())))
		}
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	assert.NilError(t, err)
	// A kubelet that ends leaves its socket behind.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	k := &fakeKubelet{dir: dir, srv: grpc.NewServer(), regs: regs}
	pluginapi.RegisterRegistrationServer(k.srv, registration{regs: regs})
	go func() { _ = k.srv.Serve(ln) }()
	return k
}

func (k *fakeKubelet) stop() { k.srv.Stop() }

// awaitRegistration is the next Register call, within 10 seconds.
func awaitRegistration(t *testing.T, regs chan *pluginapi.RegisterRequest) *pluginapi.RegisterRequest {
	t.Helper()
	select {
	case r := <-regs:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin did not register within 10s")
		return nil
	}
}

// awaitLog waits up to 10 seconds for the plugin to log substr (a Register
// the fake kubelet has seen may not have returned to the plugin yet).
func awaitLog(t *testing.T, log *syncBuffer, substr string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), substr); {
		if time.Now().After(deadline) {
			t.Fatalf("the plugin did not log %q within 10s; its log:\n%s", substr, log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dialPlugin connects to the endpoint a registration names, as the
// kubelet does.
func dialPlugin(t *testing.T, dir string, r *pluginapi.RegisterRequest) pluginapi.DevicePluginClient {
	t.Helper()
	conn, err := grpc.Dial("unix://"+filepath.Join(dir, r.Endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
	assert.NilError(t, err)
	t.Cleanup(func() { conn.Close() })
	return pluginapi.NewDevicePluginClient(conn)
}

// shortTempDir keeps socket paths under the 108 bytes of sun_path.
func shortTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "kcdp")
	assert.NilError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// runPlugin runs a plugin on dir until the test ends; it returns the
// plugin's log, its stop, and a wait for Run's result (cleanup stops and
// waits too).
func runPlugin(t *testing.T, dir string) (*syncBuffer, context.CancelFunc, func() error) {
	t.Helper()
	log := &syncBuffer{}
	p, err := New(Config{Dir: dir, Socket: Socket, Resource: Resource, Devices: 2, Poll: 10 * time.Millisecond, Log: log})
	assert.NilError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() { runErr = p.Run(ctx); close(done) }()
	wait := func() error { <-done; return runErr }
	t.Cleanup(func() { cancel(); _ = wait() })
	return log, cancel, wait
}

func TestServesTheDevicePluginAPI(t *testing.T) {
	dir := shortTempDir(t)
	regs := make(chan *pluginapi.RegisterRequest, 4)
	k := startKubelet(t, dir, regs, true)
	defer k.stop()
	runPlugin(t, dir)

	r := awaitRegistration(t, regs)
	assert.Check(t, is.Equal(r.Version, pluginapi.Version))
	assert.Check(t, is.Equal(r.Endpoint, Socket))
	assert.Check(t, is.Equal(r.ResourceName, Resource))
	assert.Check(t, r.Options.GetPreferredAllocationAvailable)
	assert.Check(t, !r.Options.PreStartRequired)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialPlugin(t, dir, r)
	opts, err := c.GetDevicePluginOptions(ctx, &pluginapi.Empty{})
	assert.NilError(t, err)
	assert.Check(t, opts.GetPreferredAllocationAvailable)

	stream, err := c.ListAndWatch(ctx, &pluginapi.Empty{})
	assert.NilError(t, err)
	list, err := stream.Recv()
	assert.NilError(t, err)
	var ids []string
	for _, d := range list.Devices {
		assert.Check(t, is.Equal(d.Health, pluginapi.Healthy))
		ids = append(ids, d.ID)
	}
	assert.DeepEqual(t, ids, []string{"dev-0", "dev-1"})

	pref, err := c.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{
		{AvailableDeviceIDs: []string{"dev-1", "dev-0"}, AllocationSize: 1}}})
	assert.NilError(t, err)
	assert.DeepEqual(t, pref.ContainerResponses[0].DeviceIDs, []string{"dev-0"})

	for _, tc := range []struct {
		name    string
		devices [][]string
		envs    []string
		err     string
	}{
		{name: "one container, one device", devices: [][]string{{"dev-1"}}, envs: []string{"dev-1"}},
		{name: "two containers", devices: [][]string{{"dev-0"}, {"dev-1"}}, envs: []string{"dev-0", "dev-1"}},
		{name: "both devices to one container", devices: [][]string{{"dev-0", "dev-1"}}, envs: []string{"dev-0,dev-1"}},
		{name: "a device it does not have", devices: [][]string{{"dev-7"}}, err: `unknown device "dev-7"`},
	} {
		t.Run("Allocate "+tc.name, func(t *testing.T) {
			req := &pluginapi.AllocateRequest{}
			for _, ids := range tc.devices {
				req.ContainerRequests = append(req.ContainerRequests, &pluginapi.ContainerAllocateRequest{DevicesIDs: ids})
			}
			resp, err := c.Allocate(ctx, req)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			assert.NilError(t, err)
			var envs []string
			for _, cr := range resp.ContainerResponses {
				envs = append(envs, cr.Envs[EnvDevices])
			}
			assert.DeepEqual(t, envs, tc.envs)
		})
	}

	_, err = c.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIDs: []string{"dev-0"}})
	assert.NilError(t, err)
}

func TestRegistersAgainWhenTheKubeletRestarts(t *testing.T) {
	for _, tc := range []struct {
		name string
		// restart replaces the running fake kubelet.
		restart func(t *testing.T, k *fakeKubelet) *fakeKubelet
		why     string
	}{
		{
			name: "the new kubelet removes every socket, the plugin's too",
			restart: func(t *testing.T, k *fakeKubelet) *fakeKubelet {
				k.stop()
				return startKubelet(t, k.dir, k.regs, true)
			},
			why: "the plugin socket was removed",
		},
		{
			name: "only kubelet.sock is replaced",
			restart: func(t *testing.T, k *fakeKubelet) *fakeKubelet {
				k.stop()
				_ = os.Remove(filepath.Join(k.dir, "kubelet.sock"))
				return startKubelet(t, k.dir, k.regs, false)
			},
			why: "kubelet.sock was replaced",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := shortTempDir(t)
			regs := make(chan *pluginapi.RegisterRequest, 4)
			k := startKubelet(t, dir, regs, true)
			log, cancel, wait := runPlugin(t, dir)
			awaitRegistration(t, regs)
			awaitLog(t, log, "(registration 1,")

			k = tc.restart(t, k)
			defer k.stop()
			r := awaitRegistration(t, regs)
			assert.Check(t, is.Equal(r.ResourceName, Resource))
			awaitLog(t, log, "(registration 2,")
			assert.Check(t, is.Contains(log.String(), tc.why))

			// The new registration's endpoint serves.
			ctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer ccancel()
			_, err := dialPlugin(t, dir, r).GetDevicePluginOptions(ctx, &pluginapi.Empty{})
			assert.NilError(t, err)

			// Stopped, it removes its socket and nothing else.
			cancel()
			assert.NilError(t, wait())
			_, err = os.Stat(filepath.Join(dir, Socket))
			assert.Check(t, os.IsNotExist(err), "the plugin socket is left: %v", err)
			_, err = os.Stat(filepath.Join(dir, "kubelet.sock"))
			assert.NilError(t, err)
		})
	}
}

func TestWaitsForTheKubelet(t *testing.T) {
	dir := shortTempDir(t)
	regs := make(chan *pluginapi.RegisterRequest, 4)
	log, _, _ := runPlugin(t, dir)
	time.Sleep(50 * time.Millisecond)
	_, err := os.Stat(filepath.Join(dir, Socket))
	assert.Check(t, os.IsNotExist(err), "serving before any kubelet: %v", err)
	k := startKubelet(t, dir, regs, true)
	defer k.stop()
	awaitRegistration(t, regs)
	awaitLog(t, log, RegisteredMessage)
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
