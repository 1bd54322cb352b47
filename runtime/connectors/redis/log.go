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

package redis

import (
	"context"
	"fmt"
	"log/slog"

	goredis "github.com/redis/go-redis/v9"
)

// go-redis logs its connection troubles (a failed dial, a pool that
// cannot connect) through one process-wide logger; route it into the
// worker's structured log instead of plain stderr lines.
func init() { goredis.SetLogger(slogLogger{}) }

type slogLogger struct{}

func (slogLogger) Printf(ctx context.Context, format string, v ...any) {
	slog.Default().WarnContext(ctx, "redis client: "+fmt.Sprintf(format, v...), "component", "go-redis")
}
