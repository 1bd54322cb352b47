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

import "github.com/conveyor-dev/conveyor/runtime/plugin"

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

// GroupConnection is the config group of the connection fields.
const GroupConnection = "Connection"

// ConnectionFields are the config fields of the connection, for a plugin's
// spec: urlDoc documents connection.url (the database's URL forms);
// poolDefault is the default of connection.pool.max ("" leaves the field
// out).
func ConnectionFields(urlDoc, poolDefault string) []plugin.ConfigField {
	fs := []plugin.ConfigField{
		{Name: KeyConnectionURL, Type: plugin.TypeString, Required: true, Group: GroupConnection, Importance: plugin.ImportanceHigh, Width: plugin.WidthLong,
			DisplayName: "Connection URL", Validator: plugin.NonEmpty(),
			Doc: urlDoc + " Put the password in connection.password or as a ${secret:...} placeholder, never in plain text."},
		{Name: KeyConnectionUser, Type: plugin.TypeString, Group: GroupConnection, Importance: plugin.ImportanceHigh, Width: plugin.WidthMedium,
			DisplayName: "User", Doc: "Database user; overrides the URL's user."},
		{Name: KeyConnectionPassword, Type: plugin.TypePassword, Group: GroupConnection, Importance: plugin.ImportanceHigh, Width: plugin.WidthMedium,
			DisplayName: "Password", Doc: "Database password, usually a ${secret:<name>:<key>} placeholder; overrides the URL's password. Never logged."},
	}
	if poolDefault != "" {
		fs = append(fs, plugin.ConfigField{Name: KeyPoolMax, Type: plugin.TypeInt, Default: poolDefault, Group: GroupConnection, Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
			DisplayName: "Connections per task", Validator: plugin.AtLeast(1), Max: 100,
			Doc: "Maximum number of database connections one task opens."})
	}
	return fs
}
