// Package kubelet identifies the running kubelet, when it started and which
// version it is, without trusting anything a pod can fake.
//
// A process is the kubelet when the operator says so (a PID or a pidfile),
// when systemd runs it as kubelet.service's main process, or, failing both,
// when it is the only process in the host PID namespace that runs as root
// (real and effective uid) from the configured kubelet binary (same device
// and inode). Process names are never looked at. Whatever identified it, the
// process must run the configured binary, and the version comes from running
// that binary after checking it is a root-owned regular file nobody else may
// write: nothing found through /proc is ever executed.
package kubelet
