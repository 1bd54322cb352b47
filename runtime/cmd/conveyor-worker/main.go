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

// Command conveyor-worker is the Conveyor worker: a Go-native, Kafka
// Connect-compatible distributed runtime. It links no Kubernetes package.
package main

import (
	"fmt"
	"os"
)

const usage = `conveyor-worker runs Conveyor connectors and tasks.

The runtime arrives with "The worker, part 1"; this build only prints this help.
`

func main() {
	fmt.Fprint(os.Stderr, usage)
	if len(os.Args) > 1 && (os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help") {
		return
	}
	os.Exit(2)
}
