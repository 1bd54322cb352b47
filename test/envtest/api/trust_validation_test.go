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

package apitest

import (
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/conveyor-dev/conveyor/api/v1alpha1"
)

// TestTrustShapesRefused: shapes that used to pass admission and break
// later (a Service name that is not DNS-1035, a rack key pasted into a
// fieldPath, huge keys and values, allow-lists reaching the worker's own
// credentials, Secret names that are not DNS subdomains) are refused with
// a message naming the field and the fix. Malformed placeholders are the
// operator's to refuse (ConfigInvalid): a CEL rule scanning every value of
// the config map exceeds the API server's cost budget (measured: "more than
// 100x"), since map values cannot carry a maxLength.
func TestTrustShapesRefused(t *testing.T) {
	ns := newNamespace(t)
	named := func(name string) client.Object { return validCluster(ns, name) }
	cluster := func(mutate func(*v1.ConnectCluster)) client.Object {
		cc := validCluster(ns, "")
		cc.GenerateName = "bad-"
		mutate(cc)
		return cc
	}
	connector := func(mutate func(*v1.KafkaConnector)) client.Object {
		kc := validConnector(ns, "")
		kc.GenerateName = "bad-"
		mutate(kc)
		return kc
	}
	config := func(k, v string) client.Object {
		return connector(func(kc *v1.KafkaConnector) { kc.Spec.Config[k] = v })
	}
	access := func(a v1.ConnectorAccess) client.Object {
		return cluster(func(c *v1.ConnectCluster) { c.Spec.ConnectorAccess = &a })
	}
	cases := []struct {
		name string
		obj  client.Object
		want []string
	}{
		{"cluster name with a dot", named("my.cluster"), []string{"metadata.name", "DNS-1035", "such as \"orders\""}},
		{"cluster name starting with a digit", named("1cluster"), []string{"metadata.name", "DNS-1035"}},
		{"rack topologyKey pasted into a fieldPath", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Pod = &v1.PodOverrides{Rack: &v1.RackSpec{TopologyKey: "a']b"}}
		}), []string{"spec.pod.rack.topologyKey", "node label key", "topology.kubernetes.io/zone"}},
		{"rack topologyKey with a space", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Pod = &v1.PodOverrides{Rack: &v1.RackSpec{TopologyKey: "zone name"}}
		}), []string{"spec.pod.rack.topologyKey", "node label key"}},
		{"1 MB config value", config("transforms.x.static.value", strings.Repeat("x", 1<<20)),
			[]string{"spec.config", "at most 32 KiB", "${secret:<name>:<key>}"}},
		{"config key of 300 characters", config(strings.Repeat("k", 300), "v"),
			[]string{"spec.config", "1 to 255 characters"}},
		{"worker config value of 40 KiB", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Config = map[string]string{"consumer.client.id": strings.Repeat("c", 40<<10)}
		}), []string{"spec.config", "at most 32 KiB"}},
		{"worker config sets the file allow-list", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Config = map[string]string{"config.providers.file.allowed.paths": "/"}
		}), []string{"spec.config", "config may not set config.providers.file.allowed.paths", "spec.connectorAccess"}},
		{"allowed Secret with an invalid name", access(v1.ConnectorAccess{Secrets: []string{"Kafka_Creds"}}),
			[]string{"spec.connectorAccess.secrets"}},
		{"allowed file path that is relative", access(v1.ConnectorAccess{FilePaths: []string{"creds/db"}}),
			[]string{"spec.connectorAccess.filePaths", "clean absolute paths"}},
		{"allowed file path with ..", access(v1.ConnectorAccess{FilePaths: []string{"/opt/creds/../../etc"}}),
			[]string{"spec.connectorAccess.filePaths", "'..' segments"}},
		{"allowed file path /", access(v1.ConnectorAccess{FilePaths: []string{"/"}}),
			[]string{"spec.connectorAccess.filePaths"}},
		{"allowed file path holding the ServiceAccount token", access(v1.ConnectorAccess{FilePaths: []string{"/var/run/secrets/kubernetes.io/serviceaccount"}}),
			[]string{"spec.connectorAccess.filePaths", "worker's own credentials"}},
		{"allowed file path above the worker's config", access(v1.ConnectorAccess{FilePaths: []string{"/etc"}}),
			[]string{"spec.connectorAccess.filePaths", "/etc/conveyor"}},
		{"allowed file path /proc", access(v1.ConnectorAccess{FilePaths: []string{"/proc/self"}}),
			[]string{"spec.connectorAccess.filePaths", "/proc"}},
		{"file connector path /tmp, the workers' scratch", access(v1.ConnectorAccess{FileConnectors: []v1.FileConnectorVolume{{Path: "/tmp"}}}),
			[]string{"spec.connectorAccess.fileConnectors[0].path", "/tmp"}},
		{"file connector path above the worker's config", access(v1.ConnectorAccess{FileConnectors: []v1.FileConnectorVolume{{Path: "/etc"}}}),
			[]string{"spec.connectorAccess.fileConnectors[0].path", "own folders"}},
		{"file connector path under /proc", access(v1.ConnectorAccess{FileConnectors: []v1.FileConnectorVolume{{Path: "/data"}, {Path: "/proc/self"}}}),
			[]string{"spec.connectorAccess.fileConnectors[1].path", "own folders"}},
		{"file connector path with ..", access(v1.ConnectorAccess{FileConnectors: []v1.FileConnectorVolume{{Path: "/data/../etc/conveyor"}}}),
			[]string{"spec.connectorAccess.fileConnectors[0].path", "'..' segments"}},
		{"file connector path /", access(v1.ConnectorAccess{FileConnectors: []v1.FileConnectorVolume{{Path: "/"}}}),
			[]string{"spec.connectorAccess.fileConnectors[0].path"}},
		{"allowed env variable with a dash", access(v1.ConnectorAccess{EnvVariables: []string{"MY-VAR"}}),
			[]string{"spec.connectorAccess.envVariables"}},
		{"REST token Secret with an invalid name", cluster(func(c *v1.ConnectCluster) {
			c.Spec.RestAPI.Authentication.TokenSecret = &v1.SecretKeyRef{Name: "Rest_Token", Key: "token"}
		}), []string{"spec.restApi.authentication.tokenSecret.name", "DNS subdomain"}},
		{"metrics token Secret with an invalid name", cluster(func(c *v1.ConnectCluster) {
			c.Spec.Metrics.Authentication.TokenSecret = &v1.SecretKeyRef{Name: "scrape token", Key: "token"}
		}), []string{"spec.metrics.authentication.tokenSecret.name", "DNS subdomain"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireRefused(t, k8sClient.Create(ctx(t), tc.obj), tc.want...)
		})
	}
	t.Logf("%d invalid shapes refused", len(cases))

	t.Run("the valid forms are accepted", func(t *testing.T) {
		cc := validCluster(ns, "orders-2")
		cc.Spec.Pod = &v1.PodOverrides{Rack: &v1.RackSpec{TopologyKey: "topology.kubernetes.io/zone"}}
		cc.Spec.ConnectorAccess = &v1.ConnectorAccess{Secrets: []string{"db", "vendor.api"}, FilePaths: []string{"/opt/connectors/creds"}, EnvVariables: []string{"VENDOR_REGION"},
			FileConnectors: []v1.FileConnectorVolume{{Path: "/data/in"}, {Path: "/var/lib/out", ClaimName: "out"}}, AmbientCloudCredentials: true}
		if err := k8sClient.Create(ctx(t), cc); err != nil {
			t.Fatalf("creating a valid cluster: %v", err)
		}
		kc := validConnector(ns, "ok")
		kc.Spec.Config["connection.password"] = "${secret:db:password}"
		kc.Spec.Config["file"] = "${file:/opt/connectors/creds/db.properties:path}"
		kc.Spec.Config["region"] = "eu-${env:VENDOR_REGION}-${secret:vendor.api:region.name}"
		kc.Spec.Config["transforms.x.static.value"] = strings.Repeat("x", 32<<10)
		if err := k8sClient.Create(ctx(t), kc); err != nil {
			t.Fatalf("creating a valid connector: %v", err)
		}
	})
}
