/*
Copyright 2026 The Conveyor Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package envkit

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/conveyor-dev/conveyor/test/testkit"
)

// kedaGroupVersion is what discovery serves once KEDA's CRDs are installed.
const kedaGroupVersion = "keda.sh/v1alpha1"

// InstallKEDA installs KEDA's ScaledObject and TriggerAuthentication CRDs
// (from the KEDA module) for the rest of the test, and uninstalls them when
// it ends, waiting until discovery no longer serves them, so a later test
// (or the next run, with -count) starts without KEDA again.
func InstallKEDA(t testing.TB, cfg *rest.Config) {
	t.Helper()
	dir, err := KEDACRDDir()
	if err != nil {
		t.Fatal(err)
	}
	opts := envtest.CRDInstallOptions{Paths: []string{
		filepath.Join(dir, "keda.sh_scaledobjects.yaml"),
		filepath.Join(dir, "keda.sh_triggerauthentications.yaml"),
	}, ErrorIfPathMissing: true}
	crds, err := envtest.InstallCRDs(cfg, opts)
	if err != nil {
		t.Fatalf("installing KEDA's CRDs: %v", err)
	}
	t.Cleanup(func() {
		if err := envtest.UninstallCRDs(cfg, opts); err != nil {
			t.Errorf("uninstalling KEDA's CRDs: %v", err)
			return
		}
		cl, err := client.New(cfg, client.Options{})
		if err != nil {
			t.Error(err)
			return
		}
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			t.Error(err)
			return
		}
		testkit.Eventually(t, time.Minute, "KEDA's CRDs gone", func() (bool, string) {
			for _, crd := range crds {
				err := cl.Get(context.Background(), client.ObjectKey{Name: crd.Name}, &apiextensionsv1.CustomResourceDefinition{})
				if !apierrors.IsNotFound(err) {
					return false, fmt.Sprintf("CRD %s: %v", crd.Name, err)
				}
			}
			_, err := dc.ServerResourcesForGroupVersion(kedaGroupVersion)
			return apierrors.IsNotFound(err), fmt.Sprintf("discovery of %s: %v", kedaGroupVersion, err)
		})
	})
}
