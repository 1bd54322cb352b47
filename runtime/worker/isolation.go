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

package worker

import (
	"github.com/conveyor-dev/conveyor/runtime/pathguard"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/workerconfig"
)

// connectorGrants is what the cluster's owner lends connectors in
// distributed mode: file connectors open files only under
// file.connectors.allowed.paths (spec.connectorAccess.fileConnectors),
// never the worker's own folders (pathguard.WorkerOwn) nor the files it
// reads for itself (tokens, TLS and SASL material wherever they are); and
// ambient cloud credentials only with cloud.ambient.credentials.enabled
// (spec.connectorAccess.ambientCloudCredentials). Standalone mode keeps
// everything, as the one who runs it owns the machine.
func connectorGrants(cfg *workerconfig.Config, standalone bool) *plugin.Grants {
	if standalone {
		return nil
	}
	return &plugin.Grants{
		Files:              pathguard.Confine(cfg.FileConnectorsAllowedPaths, ownFiles(cfg)),
		AmbientCredentials: cfg.CloudAmbientCredentials,
	}
}

// ownFiles are the files the worker reads for itself.
func ownFiles(cfg *workerconfig.Config) []string {
	var out []string
	for _, f := range []string{cfg.RestAuthTokenFile, cfg.MetricsAuthTokenFile, cfg.SSLCALocation,
		cfg.SSLCertificateLocation, cfg.SSLKeyLocation, cfg.SASLPasswordFile} {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// reservedTopics are the topics no connector may name, read or write: the
// cluster's config, offset and status topics and every "__" topic.
func reservedTopics(cfg *workerconfig.Config) *plugin.ReservedTopics {
	return plugin.NewReservedTopics(cfg.ConfigStorageTopic, cfg.OffsetStorageTopic, cfg.StatusStorageTopic)
}
