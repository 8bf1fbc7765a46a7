package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/kubelet-compat/kubelet-compat/e2e/pkg/corpus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startControlPlane starts a fresh etcd and kube-apiserver version (and
// kube-controller-manager, Options.Readiness) and creates the corpus
// through the API: the namespace, its default service account (no
// serviceaccount controller runs), the configMap and the pods, then the
// readiness Service and pods.
func (s *Scenario) startControlPlane(ctx context.Context, version string) error {
	if err := s.cp.Stop(ctx); err != nil {
		return err
	}
	start := time.Now()
	if err := s.cp.Start(ctx, version); err != nil {
		return err
	}
	what := "etcd and kube-apiserver"
	if s.cp.KCMVersion != "" {
		what += " and kube-controller-manager (" + readyControllers + ")"
	}
	s.logf("control plane: %s %s ready after %.1fs", what, version, time.Since(start).Seconds())
	cs, err := s.cp.Client()
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(cctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corpus.Namespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", corpus.Namespace, err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(corpus.Namespace).Create(cctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the default service account: %w", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(corpus.Namespace).Create(cctx, corpus.ConfigMap(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating configMap %s: %w", corpus.ConfigMapName, err)
	}
	for _, p := range s.corpus.Pods {
		if _, err := cs.CoreV1().Pods(corpus.Namespace).Create(cctx, p.Spec, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", p.Name, err)
		}
	}
	if s.opts.Readiness {
		return s.createReadinessWorkloads(cctx, cs)
	}
	return nil
}
