// Package deviceplugin is the e2e's device plugin: it advertises a few
// fake devices of one extended resource to the kubelet through the device
// plugin API v1beta1 (the API of kubelets 1.18 to 1.21 and later), and
// registers again whenever a kubelet starts, as real plugins do.
//
// The kubelet serves Registration on <dir>/kubelet.sock; a plugin serves
// DevicePlugin on its own socket in the same directory and names it in
// Register. A starting kubelet removes every socket in the directory and
// creates kubelet.sock again: the plugin's socket vanishing, or
// kubelet.sock being replaced, is the signal to serve and register anew.
package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/ctxtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Defaults of the e2e's plugin.
const (
	// Resource is the extended resource it advertises.
	Resource = "kubelet-compat.io/dev"
	// Socket is its socket's name in the device plugin directory.
	Socket = "kubelet-compat-e2e-dev.sock"
	// EnvDevices is set in a container to the IDs of the devices
	// allocated to it, comma-separated.
	EnvDevices = "KC_E2E_DEVICES"
	// RegisteredMessage and AllocateMessage start the plugin's log lines
	// that the e2e counts.
	RegisteredMessage = "registered with the kubelet"
	AllocateMessage   = "Allocate"
)

// Config is one plugin.
type Config struct {
	// Dir is the kubelet's device plugin directory: fixed at
	// /var/lib/kubelet/device-plugins for kubelets 1.18 to 1.21, whatever
	// their --root-dir.
	Dir string
	// Socket is the plugin's socket name in Dir.
	Socket string
	// Resource is the extended resource name (domain/name).
	Resource string
	// Devices is how many devices it advertises: dev-0, dev-1, ...
	Devices int
	// Poll is how often it looks for a kubelet restart (default 100 ms).
	Poll time.Duration
	// Log receives one line per event (nil: discarded).
	Log io.Writer
}

// Plugin serves one resource's devices.
type Plugin struct {
	cfg     Config
	devices []*pluginapi.Device
	logMu   sync.Mutex
}

// New checks the config.
func New(cfg Config) (*Plugin, error) {
	switch {
	case cfg.Dir == "" || !filepath.IsAbs(cfg.Dir):
		return nil, fmt.Errorf("device plugin directory %q is not an absolute path", cfg.Dir)
	case cfg.Socket == "" || strings.Contains(cfg.Socket, "/") || cfg.Socket == filepath.Base(pluginapi.KubeletSocket):
		return nil, fmt.Errorf("plugin socket %q must be a plain file name other than kubelet.sock", cfg.Socket)
	case !strings.Contains(cfg.Resource, "/") || strings.HasPrefix(cfg.Resource, "kubernetes.io/"):
		return nil, fmt.Errorf("resource %q is not an extended resource name (domain/name, not kubernetes.io)", cfg.Resource)
	case cfg.Devices < 1:
		return nil, fmt.Errorf("%d devices: want at least 1", cfg.Devices)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 100 * time.Millisecond
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	p := &Plugin{cfg: cfg}
	for i := 0; i < cfg.Devices; i++ {
		p.devices = append(p.devices, &pluginapi.Device{ID: fmt.Sprintf("dev-%d", i), Health: pluginapi.Healthy})
	}
	return p, nil
}

func (p *Plugin) logf(format string, args ...interface{}) {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	fmt.Fprintf(p.cfg.Log, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func (p *Plugin) socketPath() string { return filepath.Join(p.cfg.Dir, p.cfg.Socket) }
func (p *Plugin) kubeletPath() string {
	return filepath.Join(p.cfg.Dir, filepath.Base(pluginapi.KubeletSocket))
}

// Run serves and registers until ctx ends, again after every kubelet
// restart; it removes its socket on the way out.
func (p *Plugin) Run(ctx context.Context) error {
	registrations := 0
	for {
		kubelet, err := p.waitKubelet(ctx)
		if err != nil {
			return nil // ctx ended
		}
		srv, own, err := p.serve()
		if err != nil {
			return err
		}
		if err := p.register(ctx); err != nil {
			// The socket may be an ended kubelet's: wait for the next one.
			p.logf("register: %v; retrying", err)
			p.stop(srv, own)
			if ctxtime.Sleep(ctx, p.cfg.Poll) != nil {
				return nil
			}
			continue
		}
		registrations++
		p.logf("%s as %s (registration %d, %d devices, socket %s)", RegisteredMessage, p.cfg.Resource, registrations, len(p.devices), p.socketPath())
		why := p.watch(ctx, kubelet, own)
		p.stop(srv, own)
		if ctx.Err() != nil {
			p.logf("stopped")
			return nil
		}
		p.logf("%s: serving and registering again", why)
	}
}

// waitKubelet waits until kubelet.sock exists and returns it.
func (p *Plugin) waitKubelet(ctx context.Context) (os.FileInfo, error) {
	for {
		if fi, err := os.Stat(p.kubeletPath()); err == nil {
			return fi, nil
		}
		if err := ctxtime.Sleep(ctx, p.cfg.Poll); err != nil {
			return nil, err
		}
	}
}

// serve listens on the plugin's socket (removing a stale one of its name
// first) and serves DevicePlugin on it.
func (p *Plugin) serve() (*grpc.Server, os.FileInfo, error) {
	path := p.socketPath()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("removing the stale socket %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	own, err := os.Stat(path)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, &server{p: p})
	go func() { _ = srv.Serve(ln) }()
	return srv, own, nil
}

// stop ends the server and removes its socket if it is still the one it
// made (a starting kubelet may have removed it already).
func (p *Plugin) stop(srv *grpc.Server, own os.FileInfo) {
	srv.Stop()
	if fi, err := os.Stat(p.socketPath()); err == nil && sameSocket(fi, own) {
		_ = os.Remove(p.socketPath())
	}
}

// register calls Registration.Register on kubelet.sock.
func (p *Plugin) register(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(cctx, "unix://"+p.kubeletPath(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithBlock())
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", p.kubeletPath(), err)
	}
	defer conn.Close()
	_, err = pluginapi.NewRegistrationClient(conn).Register(cctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: p.cfg.Socket, ResourceName: p.cfg.Resource, Options: options(),
	})
	return err
}

// watch returns why the plugin must register again: its socket was
// removed or replaced (a starting kubelet removes every socket in the
// directory), or kubelet.sock was.
func (p *Plugin) watch(ctx context.Context, kubelet, own os.FileInfo) string {
	for {
		if ctxtime.Sleep(ctx, p.cfg.Poll) != nil {
			return "stopping"
		}
		if fi, err := os.Stat(p.socketPath()); err != nil || !sameSocket(fi, own) {
			return "the plugin socket was removed (a kubelet started)"
		}
		if fi, err := os.Stat(p.kubeletPath()); err != nil || !sameSocket(fi, kubelet) {
			return "kubelet.sock was replaced (a kubelet started)"
		}
	}
}

// sameSocket: the same file, not one made since at the same path (a
// socket removed and made again often gets the same inode number back).
func sameSocket(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.ModTime().Equal(b.ModTime())
}

func options() *pluginapi.DevicePluginOptions {
	return &pluginapi.DevicePluginOptions{PreStartRequired: false, GetPreferredAllocationAvailable: true}
}

// server is the DevicePlugin service of one registration.
type server struct{ p *Plugin }

func (s *server) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return options(), nil
}

// ListAndWatch sends the devices once (they never change) and holds the
// stream open until the kubelet or the server ends it.
func (s *server) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: s.p.devices}); err != nil {
		return err
	}
	s.p.logf("ListAndWatch: sent %d healthy devices", len(s.p.devices))
	<-stream.Context().Done()
	return nil
}

// GetPreferredAllocation prefers the devices the kubelet must include,
// then the lowest IDs available.
func (s *server) GetPreferredAllocation(_ context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	resp := &pluginapi.PreferredAllocationResponse{}
	for _, c := range req.ContainerRequests {
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: Prefer(c.AvailableDeviceIDs, c.MustIncludeDeviceIDs, int(c.AllocationSize))})
	}
	return resp, nil
}

// Prefer is size device IDs: mustInclude first, then the lowest of
// available.
func Prefer(available, mustInclude []string, size int) []string {
	out := append([]string(nil), mustInclude...)
	taken := map[string]bool{}
	for _, id := range mustInclude {
		taken[id] = true
	}
	rest := append([]string(nil), available...)
	sort.Strings(rest)
	for _, id := range rest {
		if len(out) >= size {
			break
		}
		if !taken[id] {
			out = append(out, id)
			taken[id] = true
		}
	}
	return out
}

// Allocate gives each container its device IDs in EnvDevices: nothing to
// mount, the devices are fake.
func (s *server) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		for _, id := range c.DevicesIDs {
			if !s.p.known(id) {
				return nil, fmt.Errorf("unknown device %q", id)
			}
		}
		ids := strings.Join(c.DevicesIDs, ",")
		s.p.logf("%s: %s", AllocateMessage, ids)
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{Envs: map[string]string{EnvDevices: ids}})
	}
	return resp, nil
}

func (s *server) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

func (p *Plugin) known(id string) bool {
	for _, d := range p.devices {
		if d.ID == id {
			return true
		}
	}
	return false
}
