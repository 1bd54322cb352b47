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
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/conveyor-dev/conveyor/test/testkit"
)

// kedaGroupVersion is what discovery serves once KEDA's CRDs are installed.
const kedaGroupVersion = "keda.sh/v1alpha1"

// kedaCRDs are the install options of KEDA's ScaledObject and
// TriggerAuthentication CRDs, from the KEDA module.
func kedaCRDs(t testing.TB) envtest.CRDInstallOptions {
	t.Helper()
	dir, err := KEDACRDDir()
	if err != nil {
		t.Fatal(err)
	}
	return envtest.CRDInstallOptions{Paths: []string{
		filepath.Join(dir, "keda.sh_scaledobjects.yaml"),
		filepath.Join(dir, "keda.sh_triggerauthentications.yaml"),
	}, ErrorIfPathMissing: true}
}

// InstallKEDA installs KEDA's CRDs and waits until they are served. They
// stay for the rest of the package's tests; a test that needs KEDA absent
// calls RemoveKEDA first.
func InstallKEDA(t testing.TB, cfg *rest.Config) { InstallCRDs(t, cfg, kedaCRDs(t)) }

// RemoveKEDA uninstalls KEDA's CRDs when they are there and waits until
// discovery no longer serves them: what a test that starts "without KEDA"
// calls, so it also holds on a second run (-count) after a test installed
// them. Without KEDA it returns at once.
func RemoveKEDA(t testing.TB, cfg *rest.Config) { RemoveCRDs(t, cfg, kedaCRDs(t), kedaGroupVersion) }

// InstallCRDs installs optional CRDs (KEDA's, the PodMonitor) from files,
// first waiting for a removal still under way, which would take the new
// CRDs with it.
func InstallCRDs(t testing.TB, cfg *rest.Config, files envtest.CRDInstallOptions) {
	t.Helper()
	cl, opts := crdClient(t, cfg, files)
	testkit.Eventually(t, time.Minute, "no CRD being removed", func() (bool, string) {
		for _, crd := range opts.CRDs {
			var got apiextensionsv1.CustomResourceDefinition
			err := cl.Get(context.Background(), client.ObjectKey{Name: crd.Name}, &got)
			if err == nil && !got.DeletionTimestamp.IsZero() {
				return false, "CRD " + crd.Name + " is being removed"
			}
		}
		return true, ""
	})
	if _, err := envtest.InstallCRDs(cfg, files); err != nil {
		t.Fatalf("installing CRDs %v: %v", files.Paths, err)
	}
}

// RemoveCRDs uninstalls the CRDs of files when they are there and waits
// until discovery no longer serves groupVersion.
func RemoveCRDs(t testing.TB, cfg *rest.Config, files envtest.CRDInstallOptions, groupVersion string) {
	t.Helper()
	cl, opts := crdClient(t, cfg, files)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range opts.CRDs {
		var got apiextensionsv1.CustomResourceDefinition
		err := cl.Get(context.Background(), client.ObjectKey{Name: crd.Name}, &got)
		if err == nil && got.DeletionTimestamp.IsZero() {
			if err := cl.Delete(context.Background(), &got); client.IgnoreNotFound(err) != nil {
				t.Fatalf("uninstalling CRD %s: %v", crd.Name, err)
			}
		}
	}
	testkit.Eventually(t, time.Minute, "CRDs of "+groupVersion+" gone", func() (bool, string) {
		for _, crd := range opts.CRDs {
			err := cl.Get(context.Background(), client.ObjectKey{Name: crd.Name}, &apiextensionsv1.CustomResourceDefinition{})
			if !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("CRD %s: %v", crd.Name, err)
			}
		}
		_, err := dc.ServerResourcesForGroupVersion(groupVersion)
		return apierrors.IsNotFound(err), fmt.Sprintf("discovery of %s: %v", groupVersion, err)
	})
}

// crdClient is a client for CRDs, and the CRDs as read from their files.
func crdClient(t testing.TB, cfg *rest.Config, opts envtest.CRDInstallOptions) (client.Client, envtest.CRDInstallOptions) {
	t.Helper()
	if err := envtest.ReadCRDFiles(&opts); err != nil {
		t.Fatalf("reading CRDs %v: %v", opts.Paths, err)
	}
	scheme := k8sruntime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cl, opts
}
