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

package jdbc

// Connection configuration keys, shared by every JDBC-style connector
// (Kafka's JDBC connectors' names).
const (
	// KeyConnectionURL is the database URL; its password may be a
	// placeholder such as ${secret:name:key}, resolved by the worker
	// before the connector sees it.
	KeyConnectionURL = "connection.url"
	// KeyConnectionUser overrides the URL's user.
	KeyConnectionUser = "connection.user"
	// KeyConnectionPassword overrides the URL's password.
	KeyConnectionPassword = "connection.password"
	// KeyPoolMax caps the connections a task opens.
	KeyPoolMax = "connection.pool.max"
)
