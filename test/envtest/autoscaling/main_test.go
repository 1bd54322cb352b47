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

// Package autoscalingtest checks the autoscaling package against a real
// kube-apiserver: KEDA's absence and later installation seen through
// discovery, and the derived ScaledObject and TriggerAuthentication accepted
// by KEDA's own CRD schemas (taken from the KEDA module).
package autoscalingtest

import (
	"os"
	"testing"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/conveyor-dev/conveyor/test/testkit/envkit"
)

var (
	cfg       *rest.Config
	k8sClient client.Client
	scheme    *k8sruntime.Scheme
)

// KEDA's CRDs are NOT installed at start: the tests install them.
func TestMain(m *testing.M) {
	os.Exit(envkit.Main(m, envkit.Options{KEDATypes: true}, func(e *envkit.Env) error {
		cfg, k8sClient, scheme = e.Config, e.Client, e.Scheme
		return nil
	}))
}
