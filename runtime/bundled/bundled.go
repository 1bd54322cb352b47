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

// Package bundled registers the connectors compiled into the worker.
package bundled

import (
	"github.com/conveyor-dev/conveyor/runtime/connectors/elasticsearch"
	"github.com/conveyor-dev/conveyor/runtime/connectors/file"
	mysqlsink "github.com/conveyor-dev/conveyor/runtime/connectors/mysql/sink"
	mysqlsource "github.com/conveyor-dev/conveyor/runtime/connectors/mysql/tablesource"
	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/cdc"
	pgsink "github.com/conveyor-dev/conveyor/runtime/connectors/postgres/sink"
	"github.com/conveyor-dev/conveyor/runtime/connectors/postgres/tablesource"
	"github.com/conveyor-dev/conveyor/runtime/connectors/rangesource"
	redissink "github.com/conveyor-dev/conveyor/runtime/connectors/redis"
	s3sink "github.com/conveyor-dev/conveyor/runtime/connectors/s3"
	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// attack are the test connectors compiled in with the build tag
// conveyor_attack (attack.go); none otherwise.
var attack []plugin.Plugin

// Plugins returns every bundled plugin.
func Plugins() []plugin.Plugin {
	return append([]plugin.Plugin{
		file.SourcePlugin(),
		file.SinkPlugin(),
		rangesource.Plugin(),
		cdc.Plugin(),
		tablesource.Plugin(),
		pgsink.Plugin(),
		mysqlsource.Plugin(),
		mysqlsink.Plugin(),
		redissink.Plugin(),
		s3sink.Plugin(),
		elasticsearch.Plugin(),
	}, attack...)
}

// Registry returns a new registry holding every bundled plugin.
func Registry() *plugin.Registry {
	r := plugin.NewRegistry()
	for _, p := range Plugins() {
		r.MustRegister(p)
	}
	return r
}
