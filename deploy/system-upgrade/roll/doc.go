// Package roll is the upgrade Job's engine: the node's roll that kc-roll
// (deploy/system-upgrade/cmd/kc-roll) runs in each node's Job.
//
// The node is behind Host (its programs through chroot, its files, the
// roll's lock, the Job's kubectl, the clock); NodeHost is the real one.
// The roll's State is the previous release's Job's (upgrade.sh, the shell
// program this engine replaced), in the same file, format and lock: a roll
// that Job began and was killed in is continued by this one.
//
// A roll is a state machine. Its Phase, written in the state, says where
// a Job that finds it goes on; from each phase a list of small actions
// (kind's "create flow as a list of actions") leads to the next: the last
// action of a list writes the next phase, every other one is idempotent,
// so a Job killed after any action, and run again, does the list again
// from its phase and never repeats what the phase says was done (the
// swap, the runtime switch, the etcd bridge once done, the picture after
// a swap, the backup once kubeadm ran):
//
//	none                 new roll: check, the kubelet's server, the runtime step's plan,
//	                     preflight; cleared, backup, begun  (or the runtime step's:
//	                     cgroups, preflight on its containerd; cleared, runtime-swapping)
//	runtime-swapping     the picture, the kubelet's counters, cgroups, switch, containerd
//	                     answers, gate -> runtime-passed | runtime-rolling-back
//	runtime-passed       preflight, backup -> begun
//	begun                packages (stage, install), stage2 kept, stage1, etcd bridge,
//	                     kubeadm; record, settle, record again, picture, picture saved -> swapping
//	swapping             swap, gate -> passed | rolling-back
//	rolling-back         status, record on the newer kubelet, the kubelet's configuration,
//	                     the manifests, stage2, stage1, the marker -> rolled-back
//	runtime-rolling-back the previous containerd, its answer, the marker -> rolled-back
//	passed, rolled-back  verdicts: certified, or refused
//
// A failed step after the roll changed the node
// or a failed gate rolls the node back; a run whose context ends does
// nothing more on the node.
package roll
